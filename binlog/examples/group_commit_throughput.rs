//! Group-commit throughput: N committers (default 64) commit small transactions (about
//! 200 bytes of events) for a few seconds with an fsync per group (durable commits).
//!
//! Usage: `cargo run --release -p surge-binlog --example group_commit_throughput --
//! [--committers 64] [--secs 3] [--json] [--dir PATH]`. The log is deleted at the end.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use surge_binlog::{Binlog, BinlogConfig, Error, Result};

mod support {
    pub mod cli;
}

const USAGE: &str = "
Group-commit throughput: committers commit small transactions, an fsync per group.

usage: group_commit_throughput [--committers 64] [--secs 3] [--json] [--dir PATH]

  --committers N  threads committing (default 64)
  --secs N        measured seconds (default 3)
  --json          one JSON object instead of text
  --dir PATH      where to create the temporary log (default: the system temp dir)
  --help          this text
";

fn main() -> std::process::ExitCode {
    support::cli::main_with_usage(USAGE, real_main)
}

fn real_main() -> Result<()> {
    let (mut committers, mut secs, mut json, mut dir) = (64usize, 3u64, false, None::<PathBuf>);
    let mut it = std::env::args().skip(1);
    let bad = |what: &'static str, v: String| Error::Invalid { what, detail: v };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--committers" => {
                let v = it
                    .next()
                    .ok_or_else(|| bad("--committers", "missing value".into()))?;
                committers = v.parse().map_err(|_| bad("--committers", v))?;
            }
            "--secs" => {
                let v = it
                    .next()
                    .ok_or_else(|| bad("--secs", "missing value".into()))?;
                secs = v.parse().map_err(|_| bad("--secs", v))?;
            }
            "--json" => json = true,
            "--dir" => {
                let v = it
                    .next()
                    .ok_or_else(|| bad("--dir", "missing value".into()))?;
                dir = Some(PathBuf::from(v));
            }
            other => {
                return Err(bad(
                    "flag",
                    format!("{other} is not a flag of this example"),
                ));
            }
        }
    }
    let tmp = match &dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| bad("temp dir", e.to_string()))?;
    let log = Arc::new(Binlog::open(BinlogConfig::new(tmp.path()))?);
    let stop = Arc::new(AtomicBool::new(false));
    let counting = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..committers)
        .map(|t| {
            let (log, stop, counting, done) = (
                Arc::clone(&log),
                Arc::clone(&stop),
                Arc::clone(&counting),
                Arc::clone(&done),
            );
            std::thread::spawn(move || -> Result<()> {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut c = log.new_cache();
                    c.put(&(t as u64 * 1_000_000_000 + i).to_be_bytes(), &[0x61; 150])?;
                    log.commit(c, i)?;
                    if counting.load(Ordering::Relaxed) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = log.stats();
    counting.store(true, Ordering::Relaxed);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    counting.store(false, Ordering::Relaxed);
    let elapsed = t0.elapsed().as_secs_f64();
    let after = log.stats();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().map_err(|_| bad("worker", "panicked".into()))??;
    }
    let commits = done.load(Ordering::Relaxed);
    let groups = after.groups - before.groups;
    let syncs = after.syncs - before.syncs;
    let per_sec = commits as f64 / elapsed;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    if json {
        println!(
            "{}",
            serde_json::json!({
                "bench": "group_commit_throughput",
                "committers": committers,
                "commits_per_sec": per_sec.round(),
                "groups": groups,
                "fsyncs": syncs,
                "avg_group_size": (commits as f64 / groups.max(1) as f64 * 10.0).round() / 10.0,
                "cores": cores,
            })
        );
    } else {
        println!(
            "{committers} committers, {cores} cores: {per_sec:.0} durable commits/s, {groups} groups ({:.1} commits per fsync)",
            commits as f64 / syncs.max(1) as f64
        );
    }
    drop(log);
    drop(tmp);
    Ok(())
}
