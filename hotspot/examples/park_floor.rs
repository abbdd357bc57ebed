//! The floor under `hot_row --mode on`: what one park + one unpark per request costs here.
//!
//! No coordinator, no file: `threads` clients each push a flag onto a shared queue and park; a
//! driver thread repeatedly takes the whole queue, sleeps `--commit-us` (a stand-in for the
//! group's fdatasync, default 150 µs) and unparks every client in it. That is the least any
//! blocking group commit can do per request (each member must sleep until its group is durable,
//! and be woken once), so its throughput and CPU per request bound what the coordinator can
//! reach on the same machine. Compare CPU per request with `perf stat -e task-clock`.
//!
//! With `--broadcast` the clients of a batch sleep on one condition variable instead and the
//! driver wakes them with one `notify_all` (what the coordinator does since it stopped
//! unparking members one by one).
//!
//! ```text
//! cargo run --release -p surge-hotspot --example park_floor -- [--threads 256] [--seconds 3]
//!     [--commit-us 150] [--broadcast]
//! ```
//! Prints one JSON line: `threads`, `wake`, `tps`, `mean_group`, `ops`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

mod support {
    pub mod cli;
}

const USAGE: &str = "
The floor under hot_row's on mode: one park and one unpark (or one broadcast) per request.

usage: park_floor [--threads 256] [--seconds 3] [--commit-us 150] [--broadcast]

  --threads N     clients (default 256)
  --seconds S     measured seconds (default 3)
  --commit-us N   sleep per batch standing in for the group's fdatasync (default 150)
  --broadcast     wake a batch with one notify_all instead of one unpark per client
  --help          this text
";

struct Member {
    thread: std::thread::Thread,
    done: AtomicBool,
}

fn main() -> std::process::ExitCode {
    support::cli::run(USAGE, real_main)
}

fn real_main() -> Result<(), Error> {
    let (mut threads, mut seconds, mut commit_us) = (256usize, 3.0f64, 150u64);
    let mut broadcast = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--broadcast" {
            broadcast = true;
            continue;
        }
        if !["--threads", "--seconds", "--commit-us"].contains(&flag.as_str()) {
            return Err(format!("{flag} is not a flag of this example").into());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--threads" => threads = value.parse().map_err(|e| format!("--threads: {e}"))?,
            "--seconds" => seconds = value.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--commit-us" => commit_us = value.parse().map_err(|e| format!("--commit-us: {e}"))?,
            other => return Err(format!("{other} is not a flag of this example").into()),
        }
    }
    if threads == 0 || !seconds.is_finite() || seconds <= 0.0 {
        return Err("--threads and --seconds must be positive".into());
    }
    let queue: Mutex<Vec<Arc<Member>>> = Mutex::new(Vec::new());
    // Broadcast mode: (queued count, batch number the queued clients wait for); the batch
    // number done so far, and the condition variable its clients sleep on.
    let joined: Mutex<(usize, u64)> = Mutex::new((0, 1));
    let done: Mutex<u64> = Mutex::new(0);
    let bell = Condvar::new();
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let t0 = Instant::now();
    let groups = std::thread::scope(|s| -> Result<u64, Error> {
        for _ in 0..threads {
            s.spawn(|| -> Result<(), String> {
                let mut n = 0u64;
                while broadcast && !stop.load(Ordering::Relaxed) {
                    let target = {
                        let mut j = joined.lock().map_err(|_| "poisoned")?;
                        j.0 += 1;
                        j.1
                    };
                    let mut d = done.lock().map_err(|_| "poisoned")?;
                    while *d < target && !stop.load(Ordering::Relaxed) {
                        d = bell
                            .wait_timeout(d, Duration::from_millis(50))
                            .map_err(|_| "poisoned")?
                            .0;
                    }
                    n += 1;
                }
                while !broadcast && !stop.load(Ordering::Relaxed) {
                    let me = Arc::new(Member {
                        thread: std::thread::current(),
                        done: AtomicBool::new(false),
                    });
                    queue
                        .lock()
                        .map_err(|_| "queue poisoned")?
                        .push(Arc::clone(&me));
                    while !me.done.load(Ordering::Acquire) && !stop.load(Ordering::Relaxed) {
                        // The timeout only lets clients notice `stop` at the end.
                        std::thread::park_timeout(Duration::from_millis(50));
                    }
                    n += 1;
                }
                ops.fetch_add(n, Ordering::Relaxed);
                Ok(())
            });
        }
        let driver = s.spawn(|| -> Result<u64, String> {
            let mut groups = 0u64;
            while broadcast && !stop.load(Ordering::Relaxed) {
                let target = {
                    let mut j = joined.lock().map_err(|_| "poisoned")?;
                    if j.0 == 0 {
                        None
                    } else {
                        j.0 = 0;
                        j.1 += 1;
                        Some(j.1 - 1)
                    }
                };
                let Some(target) = target else {
                    std::thread::yield_now();
                    continue;
                };
                groups += 1;
                std::thread::sleep(Duration::from_micros(commit_us));
                *done.lock().map_err(|_| "poisoned")? = target;
                bell.notify_all();
            }
            while !broadcast && !stop.load(Ordering::Relaxed) {
                let batch = std::mem::take(&mut *queue.lock().map_err(|_| "queue poisoned")?);
                if batch.is_empty() {
                    std::thread::yield_now();
                    continue;
                }
                groups += 1;
                std::thread::sleep(Duration::from_micros(commit_us));
                for m in &batch {
                    m.done.store(true, Ordering::Release);
                    m.thread.unpark();
                }
            }
            Ok(groups)
        });
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        Ok(driver.join().map_err(|_| "driver panicked")??)
    })?;
    let elapsed = t0.elapsed().as_secs_f64();
    let ops = ops.load(Ordering::Relaxed);
    let line = serde_json::json!({
        "threads": threads,
        "wake": if broadcast { "notify_all" } else { "unpark" },
        "tps": (ops as f64 / elapsed).round(),
        "mean_group": ((ops as f64 / groups.max(1) as f64) * 10.0).round() / 10.0,
        "ops": ops,
        "commit_us": commit_us,
    });
    println!("{line}");
    Ok(())
}
