//! Large-transaction binlog commit by rename (AliSQL; MariaDB 11.7, MDEV-32014) through the
//! whole store: a `surge-txn` coordinator with a binlog serves small transactions while one
//! big transaction commits, with no big transaction (the baseline), by copying its binlog
//! cache into the log, and by renaming its cache file into the next binlog file.
//!
//! The big transaction's rows are written and prewritten before the measured window opens
//! (as MariaDB writes rows to InnoDB while the statement runs); the window opens at its commit
//! step (commit timestamp, the primary's commit, its binlog group) and its secondaries are
//! committed in the background inside the window.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use surge_binlog::{CommitMethod, EventBody};
use surge_txn::{
    BinlogOptions, ClientConfig, ClusterConfig, LocalCluster, TxnClient, TxnError, TxnMode,
    rpc::NodeRouter,
};

use super::ScenarioError;
use super::step_waits::{StepWaits, waiting_during};
use super::table::row;
use crate::bench::Latency;

/// Column widths of the report's table.
const WIDTHS: [usize; 10] = [6, 7, 9, 9, 9, 10, 10, 11, 10, 7];

/// Caches larger than this commit by rename when the method is rename (the binlog's
/// `large_commit_threshold`; MariaDB's default is 128 MiB, lowered so that small test sizes
/// take the same path).
const LARGE_COMMIT_THRESHOLD: u64 = 1 << 20;

/// The regions a cluster is founded with, split evenly on the first key byte.
const REGIONS: u64 = 16;

/// What one run does.
///
/// Build it with [`BigTxnConfig::new`] or [`BigTxnConfig::default`] (no big transaction)
/// and the `with_*` methods, or assign the public fields of such a value: the struct is
/// `#[non_exhaustive]`, so later settings can be added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BigTxnConfig {
    /// The big transaction's size in MiB (its rows' values; 0 for none).
    pub big_mib: u64,
    /// Value size of the big transaction's rows, in KiB.
    pub value_kib: usize,
    /// Threads committing small transactions (two keys in two regions, 200-byte values).
    pub clients: usize,
    /// How long small transactions run before the window opens.
    pub lead: Duration,
    /// The measured window, from the start of the big transaction's commit step.
    pub window: Duration,
}

impl Default for BigTxnConfig {
    /// [`BigTxnConfig::new`] without a big transaction.
    fn default() -> BigTxnConfig {
        BigTxnConfig::new(0)
    }
}

impl BigTxnConfig {
    /// `big_mib` MiB of 64 KiB rows, 2 small clients, 300 ms lead, 1.5 s window.
    pub fn new(big_mib: u64) -> BigTxnConfig {
        BigTxnConfig {
            big_mib,
            value_kib: 64,
            clients: 2,
            lead: Duration::from_millis(300),
            window: Duration::from_millis(1500),
        }
    }

    /// Sets [`BigTxnConfig::big_mib`].
    #[must_use]
    pub fn with_big_mib(mut self, big_mib: u64) -> Self {
        self.big_mib = big_mib;
        self
    }

    /// Sets [`BigTxnConfig::value_kib`].
    #[must_use]
    pub fn with_value_kib(mut self, value_kib: usize) -> Self {
        self.value_kib = value_kib;
        self
    }

    /// Sets [`BigTxnConfig::clients`].
    #[must_use]
    pub fn with_clients(mut self, clients: usize) -> Self {
        self.clients = clients;
        self
    }

    /// Sets [`BigTxnConfig::lead`].
    #[must_use]
    pub fn with_lead(mut self, lead: Duration) -> Self {
        self.lead = lead;
        self
    }

    /// Sets [`BigTxnConfig::window`].
    #[must_use]
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }
}

/// One run: the big transaction's commit step and the small commits around it.
#[derive(Debug, Clone, PartialEq)]
pub struct BigTxnRun {
    /// How the big transaction reached the binlog; `None`: there was no big transaction
    /// (the baseline).
    pub method: Option<CommitMethod>,
    /// The big transaction's rows.
    pub big_rows: u64,
    /// The big transaction's values, in bytes.
    pub big_bytes: u64,
    /// Writing and prewriting the big transaction's rows, before the window.
    pub prewrite: Duration,
    /// The commit step: from its start to the big transaction's acknowledgement.
    pub commit_step: Duration,
    /// Small commits acknowledged over the whole run (before, in and after the window).
    pub small_commits: u64,
    /// Latency of the small commits that started in the window.
    pub small_latency: Latency,
    /// Small commits that started in the window.
    pub small_in_window: u64,
    /// The slowest small commit in flight at some moment of the window: a commit the step
    /// stalled from before the window counts, so a window in which no small commit could
    /// start (the step outlasted it) still shows the stall; `None` if none was in flight.
    pub small_max_in_window: Option<Duration>,
    /// The small commits in flight at some moment of the commit step (started before its
    /// end, finished after its start: those it held up), and the slowest of them.
    pub small_in_step: StepWaits,
    /// The slowest small commit that started in the window after the step (the big
    /// transaction's secondaries being committed in the background); `None` if none did.
    pub small_max_after_step: Option<Duration>,
    /// Caches the binlog committed by rename.
    pub renames: u64,
    /// Transactions (Xid events) our reader found in the binlog, every checksum verified.
    pub xids_read_back: u64,
    /// Binlog files written.
    pub files: usize,
    /// `Some(true)` if `mariadb-binlog --verify-binlog-checksum` read every file with exit 0,
    /// `None` if it is not installed.
    pub mariadb_binlog_ok: Option<bool>,
}

impl BigTxnRun {
    /// Whether every acknowledged commit (the small ones and the big one) is in the binlog
    /// exactly once.
    pub fn read_back_ok(&self) -> bool {
        self.xids_read_back == self.small_commits + u64::from(self.method.is_some())
    }
}

/// The scenario's runs, one per method.
#[derive(Debug, Clone, PartialEq)]
pub struct BigTxnReport {
    /// What each run did.
    pub config: BigTxnConfig,
    /// None, copy, rename.
    pub runs: Vec<BigTxnRun>,
}

/// Runs none, copy and rename once each, each on a fresh 3-node [`LocalCluster`] under `dir`
/// (removed afterwards), with a big transaction of `big_mib` MiB.
///
/// # Errors
/// [`ScenarioError`] if a cluster does not start, a transaction fails, or the binlog fails.
pub fn run(dir: &Path, big_mib: u64) -> Result<BigTxnReport, ScenarioError> {
    let config = BigTxnConfig::new(big_mib);
    let mut runs = Vec::new();
    for method in [
        None,
        Some(CommitMethod::Copied),
        Some(CommitMethod::Renamed),
    ] {
        runs.push(run_method(dir, &config, method)?);
    }
    Ok(BigTxnReport { config, runs })
}

/// One run on a fresh 3-node [`LocalCluster`] (16 regions, durable WALs) in a subdirectory of
/// `dir`, removed afterwards.
///
/// # Errors
/// As [`run`].
pub fn run_method(
    dir: &Path,
    config: &BigTxnConfig,
    method: Option<CommitMethod>,
) -> Result<BigTxnRun, ScenarioError> {
    let sub = dir.join(method_name(method));
    let mut cluster_config = ClusterConfig::new(sub.join("cluster"));
    // A 256 MiB transaction would otherwise split its regions while it is prewritten.
    cluster_config.split_size = None;
    let cluster = LocalCluster::start(cluster_config)?;
    let run = run_method_on(cluster.router(), &sub.join("binlog"), config, method, 0);
    drop(cluster);
    // The run's own error first: it says more than a failed clean-up.
    let cleanup = std::fs::remove_dir_all(&sub);
    let run = run?;
    cleanup?;
    Ok(run)
}

/// One run against the cluster behind `router`, with the coordinator's binlog in
/// `binlog_dir` (which must be new or empty). `tag` keeps the keys of several runs on one
/// cluster apart.
///
/// # Errors
/// As [`run`].
pub fn run_method_on(
    router: Arc<dyn NodeRouter>,
    binlog_dir: &Path,
    config: &BigTxnConfig,
    method: Option<CommitMethod>,
    tag: u64,
) -> Result<BigTxnRun, ScenarioError> {
    let binlog = BinlogOptions::new(binlog_dir)
        .with_large_commit_threshold(LARGE_COMMIT_THRESHOLD)
        .with_commit_by_rename(method == Some(CommitMethod::Renamed));
    let client = TxnClient::open(
        router,
        ClientConfig::default()
            .with_async_secondaries(true)
            // The big transaction's locks must outlive its prewrite on a slow machine.
            .with_lock_ttl_ms(120_000)
            .with_binlog(Some(binlog)),
    )?;

    let value = vec![b'v'; config.value_kib.max(1) << 10];
    let big_rows = if method.is_some() {
        (config.big_mib << 20).div_ceil(value.len() as u64)
    } else {
        0
    };
    let prewrite_start = Instant::now();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let big = if big_rows > 0 {
        let mut big = client.begin(TxnMode::Optimistic)?;
        for i in 0..big_rows {
            big.put(&key(i, &format!("big-{tag}-{i:07}")), &value)?;
        }
        Some(std::thread::spawn(move || {
            let r = big.__commit_pausing_after_prewrite(move || {
                let _ = ready_tx.send(());
                let _ = go_rx.recv();
            });
            (r, Instant::now())
        }))
    } else {
        drop(ready_tx);
        None
    };
    // The big transaction's prewrite runs alone: the window measures its commit step.
    if big.is_some() && ready_rx.recv().is_err() {
        return Err(join_big(big).err().unwrap_or(ScenarioError::Unexpected(
            "the big transaction stopped before its commit step",
        )));
    }
    let prewrite = prewrite_start.elapsed();

    let stop = Arc::new(AtomicBool::new(false));
    let smalls: Vec<_> = (0..config.clients as u64)
        .map(|id| {
            let (client, stop) = (client.clone(), Arc::clone(&stop));
            std::thread::spawn(move || small_client(&client, tag, id, &stop))
        })
        .collect();
    std::thread::sleep(config.lead);
    let window_start = Instant::now();
    let _ = go_tx.send(());
    let big_result = join_big(big);
    let window_end = window_start + config.window;
    if big_result.is_ok() {
        std::thread::sleep(window_end.saturating_duration_since(Instant::now()));
    }
    // Stop the small clients before reporting anything, the big transaction's failure
    // included: they would otherwise go on writing to the cluster.
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    let mut failed = None;
    for h in smalls {
        match h.join() {
            Ok(Ok(s)) => samples.extend(s),
            Ok(Err(e)) => failed = Some(ScenarioError::Txn(e)),
            Err(_) => failed = Some(ScenarioError::Unexpected("a small client panicked")),
        }
    }
    let acked = big_result?.unwrap_or(window_start);
    if let Some(e) = failed {
        return Err(e);
    }

    let in_window: Vec<(Instant, Duration)> = samples
        .iter()
        .copied()
        .filter(|(at, _)| *at >= window_start && *at < window_end)
        .collect();
    let started_after_step = in_window
        .iter()
        .filter(|(at, _)| *at >= acked)
        .map(|(_, d)| *d)
        .max();
    let log = client
        .binlog()
        .ok_or(ScenarioError::Unexpected("the coordinator has no binlog"))?;
    let mut xids_read_back = 0;
    for item in log.reader()? {
        if let EventBody::Xid(_) = item?.1.body {
            xids_read_back += 1;
        }
    }
    let paths = log.file_paths();
    Ok(BigTxnRun {
        method,
        big_rows,
        big_bytes: big_rows * value.len() as u64,
        prewrite,
        commit_step: acked - window_start,
        small_commits: samples.len() as u64,
        small_latency: Latency::of(
            in_window
                .iter()
                .map(|(_, d)| d.as_micros() as u64)
                .collect(),
        ),
        small_in_window: in_window.len() as u64,
        small_max_in_window: waiting_during(&samples, window_start, window_end).slowest,
        // Every sample, not only those that started in the window: a commit the step
        // stalled usually started before it.
        small_in_step: waiting_during(&samples, window_start, acked),
        small_max_after_step: started_after_step,
        renames: log.stats().renames,
        xids_read_back,
        files: paths.len(),
        mariadb_binlog_ok: verify_with_mariadb(&paths),
    })
}

type BigHandle = std::thread::JoinHandle<(Result<u64, TxnError>, Instant)>;

/// Waits for the big transaction: when it was acknowledged, `None` if there was none.
fn join_big(big: Option<BigHandle>) -> Result<Option<Instant>, ScenarioError> {
    let Some(h) = big else { return Ok(None) };
    let (r, at) = h
        .join()
        .map_err(|_| ScenarioError::Unexpected("the big transaction's thread panicked"))?;
    r?;
    Ok(Some(at))
}

/// A key in region `r` of the 16 (the cluster splits evenly on the first byte).
fn key(r: u64, name: &str) -> Vec<u8> {
    let mut k = vec![(r % REGIONS) as u8 * 16 + 8];
    k.extend_from_slice(name.as_bytes());
    k
}

/// A small-commit client: two keys in two regions, overwritten by each transaction (so the
/// binlog holds Update_rows after the first). Returns when each commit started and took.
fn small_client(
    client: &TxnClient,
    tag: u64,
    id: u64,
    stop: &AtomicBool,
) -> Result<Vec<(Instant, Duration)>, TxnError> {
    let keys = [
        key(id * 3, &format!("small-{tag}-{id}-a")),
        key(id * 3 + 7, &format!("small-{tag}-{id}-b")),
    ];
    let mut out = Vec::new();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut t = client.begin(TxnMode::Optimistic)?;
        for k in &keys {
            t.put(k, format!("{id}-{i:<190}").as_bytes())?;
        }
        let started = Instant::now();
        t.commit()?;
        out.push((started, started.elapsed()));
        i += 1;
    }
    Ok(out)
}

/// Runs MariaDB's own reader over `files`; `None` when it is not installed.
pub fn verify_with_mariadb(files: &[PathBuf]) -> Option<bool> {
    for f in files {
        match crate::cli::mariadb_read(f) {
            Ok(()) => {}
            Err(crate::cli::VerifyError::MariadbMissing { .. }) => return None,
            Err(_) => return Some(false),
        }
    }
    Some(true)
}

/// `none`, `copy` or `rename` (`other` for a method added to `surge-binlog` later).
pub fn method_name(method: Option<CommitMethod>) -> &'static str {
    match method {
        None => "none",
        Some(CommitMethod::Copied) => "copy",
        Some(CommitMethod::Renamed) => "rename",
        Some(_) => "other",
    }
}

/// A duration in milliseconds with one decimal.
fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// What a step's waiting small commits were, in words.
fn waited(w: &StepWaits) -> String {
    match w.slowest {
        None => "no small commit was in flight".into(),
        Some(d) => format!(
            "{} small commit{} in flight, the slowest took {} ms",
            w.count,
            if w.count == 1 { " was" } else { "s were" },
            ms(d)
        ),
    }
}

/// [`ms`], or `none` when there was no such commit (never a misleading 0.0).
fn or_none(d: Option<Duration>) -> String {
    d.map_or_else(|| "none".into(), ms)
}

impl fmt::Display for BigTxnReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        writeln!(
            f,
            "one run per method, each on a fresh 3-node cluster with one coordinator \
             (surge-txn TxnClient) owning a binlog: {} threads commit two-row transactions \
             (two regions, 200-byte values); the big transaction's {} KiB rows are prewritten \
             first; the {} ms window opens at its commit step (commit_ts, primary, binlog \
             group) and its secondaries commit in the background inside it",
            c.clients,
            c.value_kib,
            c.window.as_millis()
        )?;
        let w = WIDTHS;
        row(
            f,
            &w,
            &[
                &"method",
                &"big txn",
                &"prewrite",
                &"commit",
                &"small",
                &"small p99",
                &"in flight",
                &"slowest",
                &"max after",
                &"in",
            ],
        )?;
        row(
            f,
            &w,
            &[
                &"",
                &"(MiB)",
                &"(s)",
                &"step (ms)",
                &"in window",
                &"(ms)",
                &"in step",
                &"of them (ms)",
                &"step (ms)",
                &"binlog",
            ],
        )?;
        for r in &self.runs {
            let (waiting, slowest) = if r.method.is_some() {
                (
                    r.small_in_step.count.to_string(),
                    or_none(r.small_in_step.slowest),
                )
            } else {
                ("-".into(), "-".into())
            };
            row(
                f,
                &w,
                &[
                    &method_name(r.method),
                    &(r.big_bytes >> 20),
                    &format!("{:.1}", r.prewrite.as_secs_f64()),
                    &ms(r.commit_step),
                    &r.small_in_window,
                    &if r.small_in_window == 0 {
                        "none".to_string()
                    } else {
                        format!("{:.1}", r.small_latency.p99_us as f64 / 1e3)
                    },
                    &waiting,
                    &slowest,
                    &or_none(r.small_max_after_step),
                    &if r.read_back_ok() { "all" } else { "MISSING" },
                ],
            )?;
        }
        writeln!(
            f,
            "in flight in step = small commits in flight at some moment of the commit step \
             (started before it ended, finished after it began: the ones it could hold up), \
             and the slowest of them; max after step = the slowest that started after it"
        )?;
        writeln!(
            f,
            "in binlog = every acknowledged commit (small ones and the big one) found exactly \
             once by our reader, every checksum verified; renames: {}",
            self.runs
                .iter()
                .map(|r| format!("{} {}", method_name(r.method), r.renames))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        let verdict = match self
            .runs
            .iter()
            .map(|r| r.mariadb_binlog_ok)
            .collect::<Option<Vec<_>>>()
        {
            None => "mariadb-binlog is not installed (Debian package mariadb-client): files not \
                     checked by MariaDB's reader"
                .to_string(),
            Some(v) if v.iter().all(|ok| *ok) => {
                "mariadb-binlog --verify-binlog-checksum read every file: ok".to_string()
            }
            Some(_) => "mariadb-binlog REFUSED a file".to_string(),
        };
        writeln!(f, "{verdict}")?;
        let by = |m| self.runs.iter().find(|r| r.method == m);
        if let (Some(none), Some(copy), Some(rename)) = (
            by(None),
            by(Some(CommitMethod::Copied)),
            by(Some(CommitMethod::Renamed)),
        ) {
            write!(
                f,
                "Shows: the commit step took {} ms by copy and {} ms by rename; during the \
                 copy {}; during the rename {} (with no big transaction the slowest small \
                 commit of the whole window took {} ms).",
                ms(copy.commit_step),
                ms(rename.commit_step),
                waited(&copy.small_in_step),
                waited(&rename.small_in_step),
                or_none(none.small_max_in_window)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(method: Option<CommitMethod>, step_ms: u64, in_step: StepWaits) -> BigTxnRun {
        BigTxnRun {
            method,
            big_rows: 0,
            big_bytes: 0,
            prewrite: Duration::ZERO,
            commit_step: Duration::from_millis(step_ms),
            small_commits: 10,
            small_latency: Latency::of(vec![4_000; 10]),
            small_in_window: 10,
            small_max_in_window: Some(Duration::from_millis(4)),
            small_in_step: in_step,
            small_max_after_step: None,
            renames: 0,
            xids_read_back: 10 + u64::from(method.is_some()),
            files: 1,
            mariadb_binlog_ok: None,
        }
    }

    #[test]
    fn a_step_with_no_commit_in_flight_prints_none_not_zero() {
        let stalled = StepWaits {
            count: 2,
            slowest: Some(Duration::from_millis(229)),
        };
        let report = BigTxnReport {
            config: BigTxnConfig::new(64),
            runs: vec![
                run(None, 0, StepWaits::default()),
                run(Some(CommitMethod::Copied), 224, stalled),
                run(Some(CommitMethod::Renamed), 3, StepWaits::default()),
            ],
        };
        let text = report.to_string();
        let line = |m: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(m))
                .unwrap_or_else(|| panic!("{m}: {text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        // method, MiB, prewrite, step, small, p99, in flight, slowest, max after, in binlog
        assert_eq!(line("copy")[6..9], ["2", "229.0", "none"], "{text}");
        assert_eq!(line("rename")[6..9], ["0", "none", "none"], "{text}");
        assert_eq!(line("none")[6..8], ["-", "-"], "{text}");
        let shows = text.lines().last().unwrap_or_default();
        assert!(
            shows.contains(
                "during the copy 2 small commits were in flight, the slowest took 229.0 ms"
            ) && shows.contains("during the rename no small commit was in flight"),
            "{shows}"
        );
    }
}
