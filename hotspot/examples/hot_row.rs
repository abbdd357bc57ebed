//! One durable hot counter, hotspot `on` vs `off`, swept over thread counts (the benchmark of
//! AliSQL's hot-row group commit: many clients updating one row).
//!
//! Every commit appends a 32-byte record per request to a file and `fdatasync`s it. `off` is the
//! ordinary path (take a mutex, update, append + fdatasync, unlock, per request); `on` goes
//! through the [`Coordinator`] (one append and one fdatasync per group). The two modes run in
//! the same process on the same file, alternating: request by request with one client
//! (so both see the same disk at the same moment), round by round with more.
//!
//! ```text
//! cargo run --release -p surge-hotspot --example hot_row -- [--threads 1,8,64,256,512]
//!     [--seconds 5] [--rounds 5] [--max-wait-us 100] [--spin-yields 64] [--dir DIR] [--json]
//!     [--only on|off]
//! ```
//! `--spin-yields` sets how often a waiting member yields the CPU before it sleeps (0: sleep at
//! once, as before 0.1.0's adaptive wait).
//! `--only` runs one mode (for profiling it alone); it does not apply to one thread, where the
//! two modes alternate request by request.
//! `--seconds` is the measured time per mode per thread count. With `--json` each line is one
//! JSON object per (threads, mode): `threads`, `mode`, `tps`, `p50_us`, `p95_us`, `p99_us`,
//! `mean_group`, `ops`, `seconds`, and the machine's `cores`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use surge_hotspot::{Config, Coordinator, Hints, Stats};

#[path = "../benches/support/fifo_lock.rs"]
mod fifo_lock;
#[path = "../benches/support/file_counter.rs"]
mod file_counter;
#[path = "../benches/support/histogram.rs"]
mod histogram;

use fifo_lock::FifoLock;
use file_counter::{FileCounter, RECORD_LEN};
use histogram::Histogram;

type Error = Box<dyn std::error::Error + Send + Sync>;

mod support {
    pub mod cli;
}

const USAGE: &str = "
One durable hot counter (append + fdatasync per commit), hotspot on vs off, over thread counts.

usage: hot_row [--threads 1,8,64,256,512] [--seconds 5] [--rounds 5] [--max-wait-us 100]
               [--spin-yields 64] [--dir DIR] [--json] [--only on|off]
               [--off-lock fifo|std|parking-lot]

  --threads N,...   client counts to sweep (default 1,8,64,256,512)
  --seconds S       measured seconds per mode per thread count (default 5)
  --rounds N        alternating on/off rounds the seconds are split into (default 5)
  --max-wait-us N   Config::max_wait in microseconds (default 100)
  --spin-yields N   yields before a waiting member sleeps; 0 sleeps at once (default 64)
  --dir DIR         where the log file goes (default: the system temp dir)
  --json            one JSON object per (threads, mode)
  --only on|off     run one mode only (not with one thread, where they alternate per request)
  --off-lock KIND   row lock of the off path: fifo (default), std or parking-lot
  --help            this text
";

struct Args {
    threads: Vec<usize>,
    seconds: f64,
    rounds: u32,
    max_wait_us: u64,
    spin_yields: u32,
    dir: Option<PathBuf>,
    json: bool,
    off_lock: OffLock,
    only: Option<Mode>,
}

fn parse_args() -> Result<Args, Error> {
    let mut a = Args {
        threads: vec![1, 8, 64, 256, 512],
        seconds: 5.0,
        rounds: 5,
        max_wait_us: 100,
        spin_yields: surge_hotspot::DEFAULT_SPIN_YIELDS,
        dir: None,
        json: false,
        off_lock: OffLock::Fifo,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--threads" => {
                a.threads = value()?
                    .split(',')
                    .map(|t| {
                        t.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--threads {t}: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                if a.threads.contains(&0) {
                    return Err("--threads: 0 threads".into());
                }
            }
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--rounds" => a.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--max-wait-us" => {
                a.max_wait_us = value()?
                    .parse()
                    .map_err(|e| format!("--max-wait-us: {e}"))?
            }
            "--spin-yields" => {
                a.spin_yields = value()?
                    .parse()
                    .map_err(|e| format!("--spin-yields: {e}"))?
            }
            "--dir" => a.dir = Some(PathBuf::from(value()?)),
            "--json" => a.json = true,
            "--only" => {
                a.only = match value()?.as_str() {
                    "on" => Some(Mode::On),
                    "off" => Some(Mode::Off),
                    other => return Err(format!("--only {other}: want on or off").into()),
                }
            }
            "--off-lock" => {
                a.off_lock = match value()?.as_str() {
                    "fifo" => OffLock::Fifo,
                    "std" => OffLock::Std,
                    "parking-lot" => OffLock::ParkingLot,
                    other => {
                        return Err(
                            format!("--off-lock {other}: want fifo, std or parking-lot").into()
                        );
                    }
                }
            }
            other => return Err(format!("{other} is not a flag of this example").into()),
        }
    }
    if !a.seconds.is_finite() || a.seconds <= 0.0 || a.rounds == 0 {
        return Err("--seconds and --rounds must be positive".into());
    }
    Ok(a)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    On,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::On => "on",
        }
    }
}

struct Acc {
    ops: u64,
    elapsed: Duration,
    hist: Histogram,
    groups: Stats,
}

/// The `off` path's row lock.
#[derive(Clone, Copy, PartialEq)]
enum OffLock {
    /// FIFO hand-off: waiters are granted the lock in arrival order, as a database row-lock
    /// queue (InnoDB, `surge-lock-table`) grants it.
    Fifo,
    /// `std::sync::Mutex`: futex, no hand-off; the releasing thread may take it straight back.
    Std,
    /// `parking_lot::Mutex`: spins and yields, hands off fairly about every 0.5 ms.
    ParkingLot,
}

struct Bench {
    hot: Coordinator<Arc<FileCounter>>,
    off_lock: OffLock,
    fifo: FifoLock,
    std_lock: std::sync::Mutex<()>,
    pl_lock: parking_lot::Mutex<()>,
}

impl Bench {
    fn one(&self, mode: Mode) -> Result<i64, String> {
        match mode {
            Mode::On => self
                .hot
                .execute(&1, 1, Hints::hot_update())
                .map_err(|e| e.to_string()),
            // Lock, update, append + fdatasync, unlock: one request at a time.
            Mode::Off => match self.off_lock {
                OffLock::Fifo => {
                    self.fifo.lock()?;
                    let r = self.hot.executor().run_one(1, 1);
                    self.fifo.unlock()?;
                    r
                }
                OffLock::Std => {
                    let _row = self.std_lock.lock().map_err(|_| "row lock poisoned")?;
                    self.hot.executor().run_one(1, 1)
                }
                OffLock::ParkingLot => {
                    let _row = self.pl_lock.lock();
                    self.hot.executor().run_one(1, 1)
                }
            },
        }
    }

    /// Runs `threads` closed-loop clients for `dur`; returns (ops, elapsed, histogram).
    fn round(
        &self,
        mode: Mode,
        threads: usize,
        dur: Duration,
    ) -> Result<(u64, Duration, Histogram), Error> {
        let stop = AtomicBool::new(false);
        let start = std::sync::Barrier::new(threads + 1);
        let (ops, hist, t0) = std::thread::scope(|s| -> Result<_, Error> {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| -> Result<(u64, Histogram), String> {
                        let mut h = Histogram::new();
                        let mut n = 0u64;
                        start.wait();
                        while !stop.load(Ordering::Relaxed) {
                            let t = Instant::now();
                            self.one(mode)?;
                            h.record(t.elapsed().as_nanos() as u64);
                            n += 1;
                        }
                        Ok((n, h))
                    })
                })
                .collect();
            start.wait();
            let t0 = Instant::now();
            std::thread::sleep(dur);
            stop.store(true, Ordering::Relaxed);
            let mut total = 0;
            let mut hist = Histogram::new();
            for h in hs {
                let (n, hh) = h.join().map_err(|_| "client thread panicked")??;
                total += n;
                hist.merge(&hh);
            }
            Ok((total, hist, t0))
        })?;
        Ok((ops, t0.elapsed(), hist))
    }
}

impl Bench {
    /// One client alternating `off` and `on` request by request (ABBA), so both modes see the same
    /// disk at the same moment (a shared VM's fdatasync latency drifts by 10x within seconds).
    /// Each mode's time is the sum of its own requests' latencies.
    fn interleaved(&self, dur: Duration) -> Result<[(u64, Duration, Histogram); 2], Error> {
        let mut acc = [Mode::Off, Mode::On].map(|_| (0u64, Duration::ZERO, Histogram::new()));
        let end = Instant::now() + dur;
        let mut i = 0usize;
        while Instant::now() < end {
            // ABBA order: neither mode always follows the other.
            let mode = if matches!(i % 4, 0 | 3) {
                Mode::Off
            } else {
                Mode::On
            };
            let t = Instant::now();
            self.one(mode)?;
            let dt = t.elapsed();
            let a = &mut acc[usize::from(mode == Mode::On)];
            a.0 += 1;
            a.1 += dt;
            a.2.record(dt.as_nanos() as u64);
            i += 1;
        }
        Ok(acc)
    }
}

fn main() -> std::process::ExitCode {
    support::cli::run(USAGE, real_main)
}

fn real_main() -> Result<(), Error> {
    let args = parse_args()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let base = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir(),
    };
    let config = Config::default()
        .with_max_wait(Duration::from_micros(args.max_wait_us))
        .with_spin_yields(args.spin_yields);
    if !args.json {
        println!(
            "hot_row: {cores} cores, fdatasync per commit, dir {}",
            base.display()
        );
        println!(
            "{:>7} {:>4} {:>11} {:>9} {:>9} {:>9} {:>10}",
            "threads", "mode", "tps", "p50_us", "p95_us", "p99_us", "mean_group"
        );
    }
    let per_round = Duration::from_secs_f64(args.seconds / f64::from(args.rounds));
    for &threads in &args.threads {
        let dir = tempfile::tempdir_in(&base)?;
        let log = dir.path().join("hot_row.log");
        let counter = Arc::new(FileCounter::create(&log, 0)?);
        let bench = Bench {
            hot: Coordinator::new(Arc::clone(&counter), config.clone())?,
            off_lock: args.off_lock,
            fifo: FifoLock::new(),
            std_lock: std::sync::Mutex::new(()),
            pl_lock: parking_lot::Mutex::new(()),
        };
        // Warm up both paths (file allocation, thread creation) before measuring.
        let warm = Duration::from_millis(200);
        let runs = |mode: Mode| threads == 1 || args.only.is_none_or(|m| m == mode);
        let mut warm_ops = 0;
        for mode in [Mode::Off, Mode::On] {
            if runs(mode) {
                warm_ops += bench.round(mode, threads, warm)?.0;
            }
        }
        let mut acc = [Mode::Off, Mode::On].map(|_| Acc {
            ops: 0,
            elapsed: Duration::ZERO,
            hist: Histogram::new(),
            groups: Stats::default(),
        });
        for r in 0..args.rounds {
            if threads == 1 {
                let before = bench.hot.stats();
                let res = bench.interleaved(per_round * 2)?;
                let d = bench.hot.stats().since(&before);
                for (a, (ops, el, h)) in acc.iter_mut().zip(res) {
                    a.ops += ops;
                    a.elapsed += el;
                    a.hist.merge(&h);
                }
                acc[1].groups.leader_count += d.leader_count;
                acc[1].groups.follower_count += d.follower_count;
                acc[1].groups.leader_wait_ns += d.leader_wait_ns;
                continue;
            }
            // Alternate which mode goes first, so drift on a shared machine hits both alike.
            let order = if r.is_multiple_of(2) {
                [Mode::Off, Mode::On]
            } else {
                [Mode::On, Mode::Off]
            };
            for mode in order.into_iter().filter(|&m| runs(m)) {
                let before = bench.hot.stats();
                let (ops, el, h) = bench.round(mode, threads, per_round)?;
                let d = bench.hot.stats().since(&before);
                let a = &mut acc[usize::from(mode == Mode::On)];
                a.ops += ops;
                a.elapsed += el;
                a.hist.merge(&h);
                a.groups.leader_count += d.leader_count;
                a.groups.follower_count += d.follower_count;
                a.groups.leader_wait_ns += d.leader_wait_ns;
            }
        }
        // Honesty check: every acknowledged increment is in the counter and in the file.
        let total = warm_ops + acc[0].ops + acc[1].ops;
        let file_len = std::fs::metadata(&log)?.len();
        if counter.value() != total as i64 || file_len != total * RECORD_LEN as u64 {
            return Err(format!(
                "lost or doubled updates: value {} file {file_len} B, acknowledged {total}",
                counter.value()
            )
            .into());
        }
        for (mode, a) in [(Mode::Off, &acc[0]), (Mode::On, &acc[1])] {
            if !runs(mode) {
                continue;
            }
            let tps = a.ops as f64 / a.elapsed.as_secs_f64();
            let mean_group = if mode == Mode::On {
                a.groups.mean_group_size()
            } else {
                1.0
            };
            let (p50, p95, p99) = (
                a.hist.quantile_us(0.50),
                a.hist.quantile_us(0.95),
                a.hist.quantile_us(0.99),
            );
            if args.json {
                let line = serde_json::json!({
                    "threads": threads,
                    "mode": mode.name(),
                    "tps": (tps * 10.0).round() / 10.0,
                    "p50_us": p50,
                    "p95_us": p95,
                    "p99_us": p99,
                    "mean_group": (mean_group * 100.0).round() / 100.0,
                    "mean_leader_wait_us": (a.groups.mean_leader_wait_us() * 10.0).round() / 10.0,
                    "ops": a.ops,
                    "seconds": (a.elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
                    "rounds": args.rounds,
                    "max_wait_us": args.max_wait_us,
                    "cores": cores,
                });
                println!("{line}");
            } else {
                println!(
                    "{threads:>7} {:>4} {tps:>11.0} {p50:>9.0} {p95:>9.0} {p99:>9.0} {mean_group:>10.2}",
                    mode.name()
                );
            }
        }
        if !args.json && runs(Mode::On) && runs(Mode::Off) {
            let on = acc[1].ops as f64 / acc[1].elapsed.as_secs_f64();
            let off = acc[0].ops as f64 / acc[0].elapsed.as_secs_f64();
            println!("{threads:>7} on/off {:.2}x", on / off);
        }
    }
    Ok(())
}
