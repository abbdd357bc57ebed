//! The floor under `hot_row --mode on`: what one park + one unpark per request costs here.
//!
//! No coordinator, no file: `threads` clients each push a flag onto a shared queue and park; a
//! driver thread repeatedly takes the whole queue, sleeps `--commit-us` (a stand-in for the
//! group's fdatasync, default 150 µs) and unparks every client in it. That is the least any
//! blocking group commit can do per request (each member must sleep until its group is durable,
//! and be woken once), so its throughput and CPU per request bound what the coordinator can
//! reach on the same machine. Compare CPU per request with `perf stat -e task-clock`.
//!
//! ```text
//! cargo run --release -p surge-hotspot --example park_floor -- [--threads 256] [--seconds 3]
//!     [--commit-us 150]
//! ```
//! Prints one JSON line: `threads`, `tps`, `mean_group`, `ops`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Member {
    thread: std::thread::Thread,
    done: AtomicBool,
}

fn main() -> Result<(), Error> {
    let (mut threads, mut seconds, mut commit_us) = (256usize, 3.0f64, 150u64);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--threads" => threads = value.parse().map_err(|e| format!("--threads: {e}"))?,
            "--seconds" => seconds = value.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--commit-us" => commit_us = value.parse().map_err(|e| format!("--commit-us: {e}"))?,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if threads == 0 || !seconds.is_finite() || seconds <= 0.0 {
        return Err("--threads and --seconds must be positive".into());
    }
    let queue: Mutex<Vec<Arc<Member>>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let t0 = Instant::now();
    let groups = std::thread::scope(|s| -> Result<u64, Error> {
        for _ in 0..threads {
            s.spawn(|| -> Result<(), String> {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
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
            while !stop.load(Ordering::Relaxed) {
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
        "tps": (ops as f64 / elapsed).round(),
        "mean_group": ((ops as f64 / groups.max(1) as f64) * 10.0).round() / 10.0,
        "ops": ops,
        "commit_us": commit_us,
    });
    println!("{line}");
    Ok(())
}
