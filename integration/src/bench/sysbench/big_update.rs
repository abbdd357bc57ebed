//! 003, large transactions: sysbench `oltp_write_only` at a few threads while a second
//! client runs a big `UPDATE` every few seconds, sized by the binlog events it writes;
//! SurgeDB (its coordinator commits a large cache by renaming it into the binlog) and
//! MariaDB 10.11 (which copies it) in one rotation, each size beside a run alone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::endpoint::Endpoint;
use super::error::SysbenchError;
use super::write_only::Tables;
use crate::bench::Progress;

/// One (server, size) point of 003.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BigUpdatePoint {
    /// `surgedb (rename)` or `mariadb (copy)`.
    pub variant: String,
    /// The binlog size asked of each big transaction, MiB; 0 for sysbench alone.
    pub size_mib: u64,
    /// The binlog bytes one big transaction writes, MiB: its rows times the bytes per row
    /// that a calibration `UPDATE` wrote with nothing else committing.
    pub binlog_mib: f64,
    /// Rows each big `UPDATE` changed.
    pub rows: u64,
    /// Big transactions committed during the run.
    pub big_commits: usize,
    /// Their mean duration (statement sent to reply), milliseconds.
    pub big_ms: f64,
    /// Sysbench's throughput.
    pub tps: f64,
    /// Sysbench's slowest transaction, milliseconds.
    pub max_ms: f64,
    /// The worst per-second 99th percentile.
    pub p99_worst_ms: f64,
    /// The median per-second 99th percentile.
    pub p99_median_ms: f64,
    /// The per-second 99th percentiles, in order.
    pub p99_per_second_ms: Vec<f64>,
}

/// How 003 runs.
#[derive(Debug, Clone)]
pub(crate) struct BigPlan {
    pub(crate) sizes_mib: Vec<u64>,
    pub(crate) threads: usize,
    pub(crate) seconds: u64,
    pub(crate) every: Duration,
    pub(crate) rounds: usize,
}

/// A server of the rotation with where its binlog files are.
pub(crate) struct BigServer<'a> {
    pub(crate) ep: &'a Endpoint,
    pub(crate) variant: &'static str,
    pub(crate) binlog_dirs: Vec<PathBuf>,
}

const WIDE: &str = "DROP DATABASE IF EXISTS big; CREATE DATABASE big; \
    CREATE TABLE big.w (id INT PRIMARY KEY, n INT, c1 VARCHAR(255), c2 VARCHAR(255), \
    c3 VARCHAR(255), c4 VARCHAR(255))";
const BATCH: u64 = 400;

/// Runs 003 on each server; `tables` are prepared here.
///
/// # Errors
/// The first [`SysbenchError`]; [`SysbenchError::Inconsistent`] when the big table's
/// counter or sbtest's rows disagree with the acknowledged commits.
pub(crate) fn run_big_update(
    servers: &[BigServer<'_>],
    tables: Tables,
    plan: &BigPlan,
    progress: &mut dyn Progress,
) -> Result<Vec<BigUpdatePoint>, SysbenchError> {
    let most = plan.sizes_mib.iter().copied().max().unwrap_or(0);
    let mut rows_for = Vec::new();
    for s in servers {
        progress.message(&format!("003 big update: loading {}", s.ep.name));
        tables.prepare(s.ep)?;
        s.ep.sql(WIDE)?;
        load(s.ep, 0, BATCH * 5)?;
        // Calibrate: the binlog bytes of updating the loaded rows once.
        let before = binlog_bytes(&s.binlog_dirs)?;
        s.ep.sql(&format!("UPDATE big.w SET n=n+1 WHERE id<={}", BATCH * 5))?;
        let per_row = (binlog_bytes(&s.binlog_dirs)?.saturating_sub(before) / (BATCH * 5)).max(1);
        let need = (most << 20).div_ceil(per_row).max(BATCH * 5);
        load(s.ep, BATCH * 5, need)?;
        rows_for.push((per_row, BATCH * 5));
    }
    let mut out: Vec<BigUpdatePoint> = Vec::new();
    for _ in 0..plan.rounds {
        for &size in std::iter::once(&0).chain(&plan.sizes_mib) {
            for (s, (per_row, updated)) in servers.iter().zip(rows_for.iter_mut()) {
                progress.message(&format!("003 big update: {}, {size} MiB", s.variant));
                let rows = (size << 20).div_ceil(*per_row);
                let p = one_run(s, tables, plan, size, (rows, *per_row), updated)?;
                merge(&mut out, p);
                progress.step();
            }
        }
    }
    for (s, (_, updated)) in servers.iter().zip(&rows_for) {
        let sum = s.ep.query_u64("SELECT SUM(n) FROM big.w")?;
        if sum != *updated {
            return Err(SysbenchError::Inconsistent {
                endpoint: s.ep.name.clone(),
                what: "SUM(n) of big.w (one per row per acknowledged big UPDATE)".into(),
                expected: updated.to_string(),
                found: sum.to_string(),
            });
        }
        tables.check(s.ep)?;
    }
    Ok(out)
}

/// Rows `from+1 ..= to` of `big.w`, 4 x 250 characters each, in batches.
fn load(ep: &Endpoint, from: u64, to: u64) -> Result<(), SysbenchError> {
    let pad = "x".repeat(250);
    let mut script = String::new();
    let mut id = from;
    while id < to {
        let end = (id + BATCH).min(to);
        script.push_str("INSERT INTO big.w (id, n, c1, c2, c3, c4) VALUES ");
        for i in id + 1..=end {
            if i > id + 1 {
                script.push(',');
            }
            script.push_str(&format!("({i},0,'{pad}','{pad}','{pad}','{pad}')"));
        }
        script.push_str(";\n");
        id = end;
        if script.len() > 8 << 20 || id >= to {
            ep.sql_script(&script)?;
            script.clear();
        }
    }
    Ok(())
}

/// Sysbench for `plan.seconds` with a big `UPDATE` of `rows` rows every `plan.every`
/// (none when `size` is 0).
fn one_run(
    s: &BigServer<'_>,
    tables: Tables,
    plan: &BigPlan,
    size: u64,
    (rows, per_row): (u64, u64),
    updated: &mut u64,
) -> Result<BigUpdatePoint, SysbenchError> {
    let stop = AtomicBool::new(false);
    let (run, big) = std::thread::scope(|scope| {
        let bg = scope.spawn(|| -> Result<Vec<f64>, SysbenchError> {
            let mut took = Vec::new();
            if size == 0 {
                return Ok(took);
            }
            // The first one after sysbench has warmed up for a second.
            let mut next = Instant::now() + Duration::from_secs(1);
            loop {
                while Instant::now() < next {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(took);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                // Also here: a big transaction that takes longer than `every` leaves no
                // wait, and without this check the client went on with one after another
                // for good once sysbench had stopped (found at 256 MiB).
                if stop.load(Ordering::Relaxed) {
                    return Ok(took);
                }
                let t = Instant::now();
                s.ep.sql(&format!("UPDATE big.w SET n=n+1 WHERE id<={rows}"))?;
                took.push(t.elapsed().as_secs_f64() * 1e3);
                next = t + plan.every;
            }
        });
        let run = tables.run(
            s.ep,
            plan.threads,
            plan.seconds,
            &["--report-interval=1", "--percentile=99"],
        );
        stop.store(true, Ordering::Relaxed);
        let big = bg.join().unwrap_or_else(|_| {
            Err(SysbenchError::Setup {
                what: "the big-update client".into(),
                detail: "its thread panicked".into(),
            })
        });
        (run, big)
    });
    let run = run?;
    let big = big?;
    *updated += rows * big.len() as u64;
    let mut p99: Vec<f64> = run.intervals.iter().map(|i| i.lat_ms).collect();
    let per_second = p99.clone();
    p99.sort_by(f64::total_cmp);
    Ok(BigUpdatePoint {
        variant: s.variant.to_string(),
        size_mib: size,
        // Measured alone (the calibration update, nothing else committing): the binlog
        // bytes per updated row times the rows.
        binlog_mib: (rows * per_row) as f64 / (1u64 << 20) as f64 * f64::from(u8::from(size > 0)),
        rows: if size == 0 { 0 } else { rows },
        big_commits: big.len(),
        big_ms: if big.is_empty() {
            0.0
        } else {
            big.iter().sum::<f64>() / big.len() as f64
        },
        tps: run.tps,
        max_ms: run.max_ms,
        p99_worst_ms: p99.last().copied().unwrap_or(0.0),
        p99_median_ms: p99.get(p99.len() / 2).copied().unwrap_or(0.0),
        p99_per_second_ms: per_second,
    })
}

/// Folds a later round's point into an earlier one (worst latencies, summed commits).
fn merge(out: &mut Vec<BigUpdatePoint>, p: BigUpdatePoint) {
    match out
        .iter_mut()
        .find(|q| q.variant == p.variant && q.size_mib == p.size_mib)
    {
        None => out.push(p),
        Some(q) => {
            let n = (q.big_commits + p.big_commits).max(1) as f64;
            q.big_ms = (q.big_ms * q.big_commits as f64 + p.big_ms * p.big_commits as f64) / n;
            q.big_commits += p.big_commits;
            q.tps = (q.tps + p.tps) / 2.0;
            q.max_ms = q.max_ms.max(p.max_ms);
            q.p99_worst_ms = q.p99_worst_ms.max(p.p99_worst_ms);
            q.p99_median_ms = q.p99_median_ms.max(p.p99_median_ms);
            q.p99_per_second_ms.extend(p.p99_per_second_ms);
        }
    }
}

/// The bytes of the binlog files (`NAME.NNNNNN`) in `dirs`.
pub(crate) fn binlog_bytes(dirs: &[PathBuf]) -> Result<u64, SysbenchError> {
    let mut total = 0;
    for dir in dirs {
        for f in binlog_files(dir)? {
            total += std::fs::metadata(&f).map_or(0, |m| m.len());
        }
    }
    Ok(total)
}

/// The binlog files (`NAME.NNNNNN`, six digits) of `dir`, in name order.
///
/// # Errors
/// [`SysbenchError::Io`].
pub(crate) fn binlog_files(dir: &Path) -> Result<Vec<PathBuf>, SysbenchError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| SysbenchError::Io {
            path: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| x.len() == 6 && x.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    files.sort();
    Ok(files)
}
