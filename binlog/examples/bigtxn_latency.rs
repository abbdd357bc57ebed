//! Small-commit latency while one big transaction commits, by copy and by rename.
//!
//! Four threads commit small transactions (about 200 bytes of events each) continuously.
//! Per run: a fresh log; the big transaction's cache is filled first (it spills to
//! `#binlog_cache_files/`); then small-commit latencies are recorded for 1 s, the big
//! transaction commits, and recording goes on for 1 s after it returned. The run without a
//! big transaction records 2 s. Output: one line per run (JSON with `--json`):
//! `big_mib`, `method` (`none`/`copy`/`rename`), `p50_us`, `p99_us`, `max_us` of the small
//! commits in the window, `lock_hold_us` of the big commit (time it held the log lock),
//! `big_commit_ms` (its whole commit call) and the sample count. Each configuration runs
//! `--repeat` times (default 7), alternating configurations; every figure is the median
//! over the repeats of that run's figure (so `max_us` is the median of the per-run maxima),
//! `max_us_worst` is the largest max of any repeat, and `max_near_big_us` the largest
//! latency of a small commit that overlapped the big commit.
//!
//! The log uses a 16 MiB `large_commit_threshold` so every size renames in the rename runs.
//!
//! Usage: `cargo run --release -p surge-binlog --example bigtxn_latency -- [--sizes 64,256]
//! [--json] [--threads 4] [--repeat 7] [--dir PATH]`. Every file it writes is deleted
//! at the end of its run.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use surge_binlog::{Binlog, BinlogConfig, CommitMethod, Error, Result};

mod support {
    pub mod cli;
}

const USAGE: &str = "
Small-commit latency while one big transaction commits, by copy and by rename.

usage: bigtxn_latency [--sizes 64,256] [--json] [--threads 4] [--repeat 7] [--dir PATH]

  --sizes MIB,...  sizes of the big transaction in MiB (default 64,256)
  --json           one JSON object per configuration instead of a table
  --threads N      threads committing small transactions (default 4)
  --repeat N       runs per configuration; figures are medians over them (default 7)
  --dir PATH       where to create the temporary logs (default: the system temp dir)
  --help           this text
";

#[derive(Debug)]
struct Args {
    sizes: Vec<u64>,
    json: bool,
    threads: usize,
    repeat: usize,
    dir: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        sizes: vec![64, 256],
        json: false,
        threads: 4,
        repeat: 7,
        dir: None,
    };
    let mut it = std::env::args().skip(1);
    let bad = |what: &'static str, detail: String| Error::Invalid { what, detail };
    while let Some(arg) = it.next() {
        let mut value =
            |name: &'static str| it.next().ok_or_else(|| bad(name, "missing value".into()));
        match arg.as_str() {
            "--sizes" => {
                a.sizes = value("--sizes")?
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| bad("--sizes", s.to_string())))
                    .collect::<Result<_>>()?;
            }
            "--json" => a.json = true,
            "--threads" => {
                let v = value("--threads")?;
                a.threads = v.parse().map_err(|_| bad("--threads", v))?;
            }
            "--repeat" => {
                let v = value("--repeat")?;
                a.repeat = v.parse().map_err(|_| bad("--repeat", v))?;
            }
            "--dir" => a.dir = Some(PathBuf::from(value("--dir")?)),
            other => {
                return Err(bad(
                    "flag",
                    format!("{other} is not a flag of this example"),
                ));
            }
        }
    }
    Ok(a)
}

#[derive(Debug)]
struct RunResult {
    big_mib: u64,
    method: &'static str,
    lat_us: Vec<u64>,
    /// Largest latency of a small commit that overlapped the big commit (0: none).
    max_near_big_us: u64,
    /// Largest latencies of small commits that started before / after the big commit.
    max_before_us: u64,
    max_after_us: u64,
    lock_hold_us: u64,
    big_commit_ms: f64,
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn run(args: &Args, big_mib: u64, method: &'static str) -> Result<RunResult> {
    let tmp = match &args.dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| Error::Invalid {
        what: "temp dir",
        detail: e.to_string(),
    })?;
    // Threshold below the smallest big transaction so the rename runs rename at every size
    // (MariaDB's default, 128 MiB, would copy the 64 MiB one).
    let cfg = BinlogConfig::new(tmp.path())
        .with_commit_by_rename(method == "rename")
        .with_large_commit_threshold(16 << 20);
    let log = Arc::new(Binlog::open(cfg)?);

    // Fill the big transaction's cache before the measurement starts.
    let mut big = None;
    if big_mib > 0 {
        let mut c = log.new_cache();
        let value = vec![0x5au8; 256 << 10];
        for i in 0..(big_mib * 4) {
            c.put(&i.to_be_bytes(), &value)?;
        }
        big = Some(c);
        // Let the file system settle after writing the cache (same pause in every run).
    }
    std::thread::sleep(Duration::from_millis(1000));

    let epoch = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let recording = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..args.threads)
        .map(|t| {
            let (log, stop, recording) =
                (Arc::clone(&log), Arc::clone(&stop), Arc::clone(&recording));
            std::thread::spawn(move || -> Result<Vec<(u64, u64)>> {
                let value = [0x61u8; 150];
                let mut lat = Vec::with_capacity(1 << 16);
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let mut c = log.new_cache();
                    c.put(&(t as u64 * 1_000_000_000 + i).to_be_bytes(), &value)?;
                    log.commit(c, i)?;
                    if recording.load(Ordering::Relaxed) {
                        let start = t0.duration_since(epoch).as_micros() as u64;
                        lat.push((start, t0.elapsed().as_micros() as u64));
                    }
                    i += 1;
                }
                Ok(lat)
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(500)); // warm-up
    recording.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(1));
    let (mut lock_hold_us, mut big_commit_ms) = (0, 0.0);
    let mut big_span = None;
    if let Some(c) = big.take() {
        let t0 = Instant::now();
        let info = log.commit(c, u64::MAX)?;
        big_commit_ms = t0.elapsed().as_secs_f64() * 1e3;
        lock_hold_us = info.lock_hold.as_micros() as u64;
        let from = t0.duration_since(epoch).as_micros() as u64;
        big_span = Some((from, from + (big_commit_ms * 1e3) as u64));
        let want = if method == "rename" {
            CommitMethod::Renamed
        } else {
            CommitMethod::Copied
        };
        if info.method != want {
            return Err(Error::Invalid {
                what: "commit method",
                detail: format!("{:?}, expected {want:?}", info.method),
            });
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    recording.store(false, Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    let mut lat_us = Vec::new();
    let mut max_near_big_us = 0;
    let (mut max_before_us, mut max_after_us) = (0, 0);
    for w in workers {
        let v = w.join().map_err(|_| Error::Invalid {
            what: "worker",
            detail: "panicked".into(),
        })??;
        for (start, lat) in v {
            if let Some((b0, b1)) = big_span
                && start <= b1
                && start + lat >= b0
            {
                max_near_big_us = max_near_big_us.max(lat);
            } else if big_span.is_some_and(|(b0, _)| start < b0) {
                max_before_us = max_before_us.max(lat);
            } else {
                max_after_us = max_after_us.max(lat);
            }
            lat_us.push(lat);
        }
    }
    lat_us.sort_unstable();
    drop(log);
    let parent = tmp.path().parent().map(|p| p.to_path_buf());
    drop(tmp); // deletes the binlog files, the renamed big file included
    // Let the file system finish freeing (and discarding) those blocks before the next
    // run starts, so one run's cleanup does not land in the next run's window.
    if let Some(p) = parent {
        std::fs::File::open(&p)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::Invalid {
                what: "sync",
                detail: e.to_string(),
            })?;
    }
    std::thread::sleep(Duration::from_millis(700));
    Ok(RunResult {
        big_mib,
        method,
        lat_us,
        max_near_big_us,
        max_before_us,
        max_after_us,
        lock_hold_us,
        big_commit_ms,
    })
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// One output row per (size, method): medians over the repeats of each run's figures
/// (the per-run max is noisy on a shared 2-core machine), plus the worst max seen.
fn report(args: &Args, runs: &[RunResult]) {
    let Some(first) = runs.first() else { return };
    let per = |f: &dyn Fn(&RunResult) -> u64| median(runs.iter().map(f).collect());
    let p50 = per(&|r| percentile(&r.lat_us, 0.50));
    let p99 = per(&|r| percentile(&r.lat_us, 0.99));
    let max = per(&|r| r.lat_us.last().copied().unwrap_or(0));
    let worst = runs
        .iter()
        .map(|r| r.lat_us.last().copied().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let near = per(&|r| r.max_near_big_us);
    let hold = per(&|r| r.lock_hold_us);
    let big_ms = per(&|r| (r.big_commit_ms * 1e3) as u64) as f64 / 1e3;
    let commits = per(&|r| r.lat_us.len() as u64);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    if args.json {
        let v = serde_json::json!({
            "big_mib": first.big_mib,
            "method": first.method,
            "p50_us": p50,
            "p99_us": p99,
            "max_us": max,
            "max_us_worst": worst,
            "max_near_big_us": near,
            "lock_hold_us": hold,
            "big_commit_ms": (big_ms * 10.0).round() / 10.0,
            "small_commits": commits,
            "runs": runs.len(),
            "threads": args.threads,
            "cores": cores,
        });
        println!("{v}");
    } else {
        println!(
            "big {:>5} MiB {:<6}: small p50 {:>5} us p99 {:>6} us max {:>7} us (worst {:>7}, beside big {:>7}) | big commit {:>8.1} ms, lock held {:>7} us",
            first.big_mib, first.method, p50, p99, max, worst, near, big_ms, hold
        );
    }
}

fn main() -> std::process::ExitCode {
    support::cli::main_with_usage(USAGE, real_main)
}

fn real_main() -> Result<()> {
    let args = parse_args()?;
    if !args.json {
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!(
            "{} small-commit threads, {cores} cores, {} repeats (medians; shared machine: expect noise)",
            args.threads, args.repeat
        );
    }
    let mut configs: Vec<(u64, &'static str)> = vec![(0, "none")];
    for &mib in &args.sizes {
        configs.push((mib, "copy"));
        configs.push((mib, "rename"));
    }
    let mut results: Vec<Vec<RunResult>> = configs.iter().map(|_| Vec::new()).collect();
    // Alternate: every repeat runs every configuration once, in the same order.
    for _ in 0..args.repeat {
        for (i, &(mib, method)) in configs.iter().enumerate() {
            let r = run(&args, mib, method)?;
            eprintln!(
                "run: big {mib} MiB {method}: max {} us, before big {} us, beside big {} us, after {} us, lock held {} us, {} commits",
                r.lat_us.last().copied().unwrap_or(0),
                r.max_before_us,
                r.max_near_big_us,
                r.max_after_us,
                r.lock_hold_us,
                r.lat_us.len()
            );
            results[i].push(r);
        }
    }
    for runs in &results {
        report(&args, runs);
    }
    Ok(())
}
