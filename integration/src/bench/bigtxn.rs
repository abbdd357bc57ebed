//! `surgedb bench bigtxn`: small commits beside one big transaction's commit step, with no
//! big transaction, by copy and by rename (AliSQL/MariaDB 11.7 large-transaction binlog commit
//! by rename, MDEV-32014), through `surge-txn`: a coordinator with a binlog, on a fresh
//! embedded 3-node cluster per run or on a running cluster of node processes.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use surge_binlog::CommitMethod;
use surge_txn::rpc::NodeRouter;

use super::stats::Latency;
use super::{BenchError, BenchTarget, Progress};
use crate::scenarios::{
    BigTxnConfig, BigTxnRun, method_name, run_big_txn_method, run_big_txn_method_on,
};

/// What `bench bigtxn` runs.
///
/// Build it with [`BigTxnOptions::default`] and the `with_*` methods, or assign the public fields
/// of a default value: the struct is `#[non_exhaustive]`, so later settings can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct BigTxnOptions {
    /// The big transaction's size in MiB.
    pub mib: u64,
    /// Runs of each method, interleaved (none, copy, rename, none, ...).
    pub rounds: usize,
    /// Threads committing small transactions.
    pub clients: usize,
    /// The measured window from the start of the commit step, in milliseconds.
    pub window_ms: u64,
}

impl Default for BigTxnOptions {
    fn default() -> BigTxnOptions {
        BigTxnOptions {
            mib: 256,
            rounds: 1,
            clients: 4,
            window_ms: 2000,
        }
    }
}

impl BigTxnOptions {
    /// How many progress steps [`run_bigtxn`] reports: one per run.
    pub fn steps(&self) -> u64 {
        (3 * self.rounds.max(1)) as u64
    }

    fn config(&self) -> BigTxnConfig {
        BigTxnConfig::new(self.mib)
            .with_clients(self.clients.max(1))
            .with_window(Duration::from_millis(self.window_ms.max(1)))
    }

    /// Sets [`BigTxnOptions::mib`].
    #[must_use]
    pub fn with_mib(mut self, mib: u64) -> Self {
        self.mib = mib;
        self
    }

    /// Sets [`BigTxnOptions::rounds`].
    #[must_use]
    pub fn with_rounds(mut self, rounds: usize) -> Self {
        self.rounds = rounds;
        self
    }

    /// Sets [`BigTxnOptions::clients`].
    #[must_use]
    pub fn with_clients(mut self, clients: usize) -> Self {
        self.clients = clients;
        self
    }

    /// Sets [`BigTxnOptions::window_ms`].
    #[must_use]
    pub fn with_window_ms(mut self, window_ms: u64) -> Self {
        self.window_ms = window_ms;
        self
    }
}

/// One method's figures, merged over its rounds (the worst of each).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BigTxnPoint {
    /// `none`, `copy` or `rename`.
    pub method: &'static str,
    /// The big transaction's size in MiB (0 for none).
    pub big_mib: u64,
    /// Slowest prewrite of the big transaction's rows (before the window), in s.
    pub prewrite_s: f64,
    /// Slowest commit step (commit_ts, primary, binlog), in ms.
    pub commit_step_ms: f64,
    /// Small commits that started in the windows, over all rounds.
    pub small_commits: u64,
    /// Worst of the rounds' small-commit latency summaries, over the commits that started in
    /// the windows (all zero when none did: see `small_commits`).
    pub small: Latency,
    /// Slowest small commit in flight at some moment of a window, in ms: unlike
    /// `small.max_us`, it counts a commit stalled from before the window (a copy that
    /// outlasts the window lets none start in it); `None` when none was in flight.
    pub small_max_ms: Option<f64>,
    /// Small commits in flight during the commit step (started before it ended, finished
    /// after it began: those it could hold up), over all rounds.
    pub small_in_step: u64,
    /// Slowest of the small commits in flight during the commit step, in ms; `None` (JSON
    /// `null`) when none was.
    pub small_max_in_step_ms: Option<f64>,
    /// Slowest small commit that started after the step (secondaries in flight), in ms;
    /// `None` when none did.
    pub small_max_after_step_ms: Option<f64>,
    /// Caches committed by rename, over all rounds.
    pub renames: u64,
    /// Whether every acknowledged commit was read back from the binlog exactly once.
    pub read_back_ok: bool,
    /// `mariadb-binlog --verify-binlog-checksum` on every file: `None` when not installed.
    pub mariadb_binlog_ok: Option<bool>,
}

impl BigTxnPoint {
    fn first(method: Option<CommitMethod>, r: &BigTxnRun) -> BigTxnPoint {
        BigTxnPoint {
            method: method_name(method),
            big_mib: r.big_bytes >> 20,
            prewrite_s: 0.0,
            commit_step_ms: 0.0,
            small_commits: 0,
            small: Latency::default(),
            small_max_ms: None,
            small_in_step: 0,
            small_max_in_step_ms: None,
            small_max_after_step_ms: None,
            renames: 0,
            read_back_ok: true,
            mariadb_binlog_ok: Some(true),
        }
    }

    fn merge(&mut self, r: &BigTxnRun) {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let worst = |a: Option<f64>, b: Option<Duration>| match (a, b.map(ms)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.prewrite_s = self.prewrite_s.max(r.prewrite.as_secs_f64());
        self.commit_step_ms = self.commit_step_ms.max(ms(r.commit_step));
        self.small_commits += r.small_in_window;
        self.small = self.small.worst(&r.small_latency);
        self.small_max_ms = worst(self.small_max_ms, r.small_max_in_window);
        self.small_in_step += r.small_in_step.count;
        self.small_max_in_step_ms = worst(self.small_max_in_step_ms, r.small_in_step.slowest);
        self.small_max_after_step_ms = worst(self.small_max_after_step_ms, r.small_max_after_step);
        self.renames += r.renames;
        self.read_back_ok &= r.read_back_ok();
        self.mariadb_binlog_ok = match (self.mariadb_binlog_ok, r.mariadb_binlog_ok) {
            (Some(a), Some(b)) => Some(a && b),
            _ => None,
        };
    }
}

/// Runs none, copy and rename `rounds` times each, interleaved. Embedded (`target` is
/// `None` or embedded): each run on a fresh 3-node cluster under `dir`. Remote: every run on
/// that cluster, its coordinator (in this process) keeping its binlog under `dir`.
///
/// # Errors
/// [`BenchError::Scenario`] if a cluster, a transaction or the binlog fails.
pub fn run_bigtxn(
    dir: &Path,
    target: Option<&BenchTarget>,
    opts: &BigTxnOptions,
    progress: &mut dyn Progress,
) -> Result<Vec<BigTxnPoint>, BenchError> {
    let methods = [
        None,
        Some(CommitMethod::Copied),
        Some(CommitMethod::Renamed),
    ];
    let config = opts.config();
    let mut points: Vec<Option<BigTxnPoint>> = vec![None; methods.len()];
    for round in 0..opts.rounds.max(1) {
        for (index, (slot, method)) in points.iter_mut().zip(methods).enumerate() {
            progress.message(&format!("{} MiB by {}", opts.mib, method_name(method)));
            let r = match target {
                Some(BenchTarget::Remote { client, .. }) => {
                    let sub = dir.join(format!("{}-{round}", method_name(method)));
                    let router: std::sync::Arc<dyn NodeRouter> = client.router();
                    // A tag per run keeps the runs' keys apart on the one cluster.
                    let tag = (round * methods.len() + index) as u64;
                    let r = run_big_txn_method_on(router, &sub, &config, method, tag);
                    // The run's own error first: it says more than a failed clean-up.
                    let cleanup = std::fs::remove_dir_all(&sub);
                    let r = r?;
                    cleanup.map_err(crate::scenarios::ScenarioError::from)?;
                    r
                }
                _ => run_big_txn_method(dir, &config, method)?,
            };
            slot.get_or_insert_with(|| BigTxnPoint::first(method, &r))
                .merge(&r);
            progress.step();
        }
    }
    Ok(points.into_iter().flatten().collect())
}
