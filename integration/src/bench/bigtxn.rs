//! `surgedb bench bigtxn`: 200-byte commits beside one big transaction's commit, with no big
//! transaction, by copy and by rename (AliSQL/MariaDB 11.7 large-transaction binlog commit by
//! rename, MDEV-32014), on `surge-binlog` in this process.

use std::path::Path;

use serde::Serialize;
use surge_binlog::CommitMethod;

use super::stats::Latency;
use super::{BenchError, Progress};
use crate::scenarios::{method_name, run_big_txn_method};

/// What `bench bigtxn` runs.
#[derive(Debug, Clone)]
pub struct BigTxnOptions {
    /// The big transaction's size in MiB.
    pub mib: u64,
    /// Runs of each method, interleaved (none, copy, rename, none, ...).
    pub rounds: usize,
}

impl Default for BigTxnOptions {
    fn default() -> BigTxnOptions {
        BigTxnOptions {
            mib: 256,
            rounds: 1,
        }
    }
}

impl BigTxnOptions {
    /// How many progress steps [`run_bigtxn`] reports: one per run.
    pub fn steps(&self) -> u64 {
        (3 * self.rounds.max(1)) as u64
    }
}

/// One method's figures, merged over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BigTxnPoint {
    /// `none`, `copy` or `rename`.
    pub method: &'static str,
    /// The big transaction's size in MiB (0 for none).
    pub big_mib: u64,
    /// Slowest wall time of the big commit over the rounds, in ms.
    pub big_commit_ms: f64,
    /// Longest hold of the binlog's log lock by the big commit, in ms.
    pub log_lock_ms: f64,
    /// Small commits over all rounds.
    pub small_commits: u64,
    /// Worst of the rounds' small-commit latency summaries.
    pub small: Latency,
    /// Slowest small commit that overlapped the big commit, in ms.
    pub small_max_beside_big_ms: f64,
    /// Whether our reader read every commit back with every checksum verified.
    pub read_back_ok: bool,
    /// `mariadb-binlog --verify-binlog-checksum` on every file: `None` when not installed.
    pub mariadb_binlog_ok: Option<bool>,
}

/// Runs none, copy and rename `rounds` times each in `dir`.
///
/// # Errors
/// [`BenchError::Scenario`] if the binlog or a scratch file fails.
pub fn run_bigtxn(
    dir: &Path,
    opts: &BigTxnOptions,
    progress: &mut dyn Progress,
) -> Result<Vec<BigTxnPoint>, BenchError> {
    let methods = [
        None,
        Some(CommitMethod::Copied),
        Some(CommitMethod::Renamed),
    ];
    let mut points: Vec<Option<BigTxnPoint>> = vec![None; methods.len()];
    for _ in 0..opts.rounds.max(1) {
        for (slot, method) in points.iter_mut().zip(methods) {
            progress.message(&format!("{} MiB by {}", opts.mib, method_name(method)));
            let r = run_big_txn_method(dir, opts.mib, method)?;
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            let read_back_ok = r.xids_read_back == r.small_commits + u64::from(method.is_some());
            let p = slot.get_or_insert(BigTxnPoint {
                method: method_name(method),
                big_mib: r.big_bytes >> 20,
                big_commit_ms: 0.0,
                log_lock_ms: 0.0,
                small_commits: 0,
                small: Latency::default(),
                small_max_beside_big_ms: 0.0,
                read_back_ok: true,
                mariadb_binlog_ok: Some(true),
            });
            p.big_commit_ms = p.big_commit_ms.max(ms(r.big_commit));
            p.log_lock_ms = p.log_lock_ms.max(ms(r.lock_hold));
            p.small_commits += r.small_commits;
            p.small = p.small.worst(&r.small_latency);
            p.small_max_beside_big_ms = p.small_max_beside_big_ms.max(ms(r.small_max_beside_big));
            p.read_back_ok &= read_back_ok;
            p.mariadb_binlog_ok = match (p.mariadb_binlog_ok, r.mariadb_binlog_ok) {
                (Some(a), Some(b)) => Some(a && b),
                _ => None,
            };
            progress.step();
        }
    }
    Ok(points.into_iter().flatten().collect())
}
