//! Large-transaction binlog commit by rename (AliSQL; MariaDB 11.7, MDEV-32014): small
//! transactions commit while one big transaction commits, once by copying its cache into the
//! binlog and once by renaming its cache file into the next binlog file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use surge_binlog::{Binlog, BinlogConfig, CommitMethod, EventBody, LogReader};

use super::ScenarioError;
use super::table::row;
use crate::bench::Latency;

/// Column widths of the report's table.
const WIDTHS: [usize; 8] = [6, 7, 10, 9, 13, 7, 9, 6];

/// One run: the big transaction's commit and the small commits around it.
#[derive(Debug, Clone, PartialEq)]
pub struct BigTxnRun {
    /// How the big transaction reached the binlog; `None`: there was no big transaction
    /// (the baseline).
    pub method: Option<CommitMethod>,
    /// Size of the big transaction's cache, in bytes.
    pub big_bytes: u64,
    /// Wall time of the big commit call.
    pub big_commit: Duration,
    /// How long the big commit held the log lock.
    pub lock_hold: Duration,
    /// Small commits that returned during the run.
    pub small_commits: u64,
    /// The slowest small commit that overlapped the big commit.
    pub small_max_beside_big: Duration,
    /// Latency of every small commit of the run (before, during and after the big one).
    pub small_latency: Latency,
    /// Transactions (Xid events) our reader found in the files, every checksum verified.
    pub xids_read_back: u64,
    /// Binlog files written.
    pub files: usize,
    /// `Some(true)` if `mariadb-binlog --verify-binlog-checksum` read every file with exit 0,
    /// `None` if it is not installed.
    pub mariadb_binlog_ok: Option<bool>,
}

/// Both runs of the scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct BigTxnReport {
    /// The copy run, then the rename run.
    pub runs: Vec<BigTxnRun>,
}

/// How long the small committers run before the big commit starts, and again after it ends.
const AROUND: Duration = Duration::from_millis(300);

/// Runs the scenario in `dir` with a big transaction of `big_mib` MiB and two threads of
/// 200-byte commits (running 300 ms before the big commit, during it, and 300 ms
/// after it). Each method runs once.
///
/// # Errors
/// [`ScenarioError::Binlog`] if the binlog fails, [`ScenarioError::Io`] for scratch files.
pub fn run(dir: &Path, big_mib: u64) -> Result<BigTxnReport, ScenarioError> {
    let mut runs = Vec::new();
    for method in [CommitMethod::Copied, CommitMethod::Renamed] {
        runs.push(run_method(dir, big_mib, Some(method))?);
    }
    Ok(BigTxnReport { runs })
}

/// One run in a fresh subdirectory of `dir` (removed afterwards): two threads of 200-byte
/// commits for 300 ms, then beside the commit of a `big_mib` MiB transaction by `method`
/// (`None`: beside nothing, for 300 ms more: the baseline), then for 300 ms after it.
///
/// # Errors
/// [`ScenarioError::Binlog`] if the binlog fails, [`ScenarioError::Io`] for scratch files.
pub fn run_method(
    dir: &Path,
    big_mib: u64,
    method: Option<CommitMethod>,
) -> Result<BigTxnRun, ScenarioError> {
    let sub = dir.join(method_name(method));
    std::fs::create_dir_all(&sub)?;
    let run = run_one(&sub, big_mib, method);
    std::fs::remove_dir_all(&sub)?;
    run
}

fn run_one(
    dir: &Path,
    big_mib: u64,
    method: Option<CommitMethod>,
) -> Result<BigTxnRun, ScenarioError> {
    let config = BinlogConfig::new(dir)
        .with_large_commit_threshold(1 << 20)
        .with_commit_by_rename(method == Some(CommitMethod::Renamed));
    let big_mib = if method.is_some() { big_mib } else { 0 };
    let log = Binlog::open(config)?;
    let next_xid = AtomicU64::new(1);
    let stop = AtomicBool::new(false);
    let small: Mutex<Vec<(Instant, Instant)>> = Mutex::new(Vec::new());
    let small_error: Mutex<Option<surge_binlog::Error>> = Mutex::new(None);

    // Build the big transaction's cache before the small traffic starts: building it is
    // the transaction's own work, not the commit's.
    let mut big = log.new_cache();
    let value = vec![0x5a_u8; 64 << 10];
    for i in 0..big_mib * 16 {
        big.put(format!("big/{i:08}").as_bytes(), &value)?;
    }
    let big_bytes = big.len();

    let (info, big_window) = std::thread::scope(|s| {
        for t in 0..2u64 {
            let (log, next_xid, stop, small, small_error) =
                (&log, &next_xid, &stop, &small, &small_error);
            s.spawn(move || {
                let value = [0x33_u8; 200];
                let mut mine = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut txn = log.new_cache();
                    let key = format!("small/{t}/{i}");
                    let begun = Instant::now();
                    let result = txn
                        .put(key.as_bytes(), &value)
                        .and_then(|()| log.commit(txn, next_xid.fetch_add(1, Ordering::Relaxed)));
                    if let Err(e) = result {
                        *small_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        break;
                    }
                    mine.push((begun, Instant::now()));
                    i += 1;
                }
                small.lock().unwrap_or_else(|p| p.into_inner()).extend(mine);
            });
        }
        std::thread::sleep(AROUND);
        let begun = Instant::now();
        let info = if method.is_some() {
            log.commit(big, next_xid.fetch_add(1, Ordering::Relaxed))
                .map(|i| Some(i.lock_hold))
        } else {
            std::thread::sleep(AROUND);
            Ok(None)
        };
        let window = (begun, Instant::now());
        std::thread::sleep(AROUND);
        stop.store(true, Ordering::Relaxed);
        (info, window)
    });
    let lock_hold = info?;
    if let Some(e) = small_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e.into());
    }
    let small = small.into_inner().unwrap_or_else(|p| p.into_inner());
    let small_max_beside_big = small
        .iter()
        .filter(|(b, e)| *e >= big_window.0 && *b <= big_window.1)
        .map(|(b, e)| *e - *b)
        .max()
        .unwrap_or_default();
    let small_latency = Latency::of(
        small
            .iter()
            .map(|(b, e)| (*e - *b).as_micros() as u64)
            .collect(),
    );
    let files = log.files();
    let base = log.config().base_name.clone();
    log.close()?;

    let mut xids_read_back = 0;
    for item in LogReader::open(dir, &base, None)? {
        if let EventBody::Xid(_) = item?.1.body {
            xids_read_back += 1;
        }
    }
    let paths: Vec<PathBuf> = files.iter().map(|f| dir.join(f)).collect();
    Ok(BigTxnRun {
        method,
        big_bytes,
        big_commit: if method.is_some() {
            big_window.1 - big_window.0
        } else {
            Duration::ZERO
        },
        lock_hold: lock_hold.unwrap_or_default(),
        small_commits: small.len() as u64,
        small_max_beside_big,
        small_latency,
        xids_read_back,
        files: files.len(),
        mariadb_binlog_ok: verify_with_mariadb(&paths),
    })
}

/// Runs MariaDB's own reader over `files`; `None` when it is not installed.
pub fn verify_with_mariadb(files: &[PathBuf]) -> Option<bool> {
    let mut ok = true;
    for file in files {
        let status = Command::new("mariadb-binlog")
            .arg("--verify-binlog-checksum")
            .arg(file)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        ok &= status.success();
    }
    Some(ok)
}

/// `none`, `copy` or `rename`.
pub fn method_name(method: Option<CommitMethod>) -> &'static str {
    match method {
        None => "none",
        Some(CommitMethod::Copied) => "copy",
        Some(CommitMethod::Renamed) => "rename",
    }
}

/// A duration in milliseconds with two decimals.
fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

impl fmt::Display for BigTxnReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "one run per method: 2 threads commit 200-byte transactions for {} ms, during the \
             big commit, and {} ms after it",
            AROUND.as_millis(),
            AROUND.as_millis()
        )?;
        let w = WIDTHS;
        row(
            f,
            &w,
            &[
                &"method",
                &"big txn",
                &"big commit",
                &"log lock",
                &"slowest small",
                &"small",
                &"read back",
                &"binlog",
            ],
        )?;
        row(
            f,
            &w,
            &[
                &"",
                &"(MiB)",
                &"(ms)",
                &"held (ms)",
                &"beside (ms)",
                &"commits",
                &"(commits)",
                &"files",
            ],
        )?;
        for r in &self.runs {
            row(
                f,
                &w,
                &[
                    &method_name(r.method),
                    &(r.big_bytes >> 20),
                    &ms(r.big_commit),
                    &ms(r.lock_hold),
                    &ms(r.small_max_beside_big),
                    &r.small_commits,
                    &r.xids_read_back,
                    &r.files,
                ],
            )?;
        }
        writeln!(
            f,
            "read back = the small commits + the 1 big one, found by our reader with every \
             checksum verified"
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
        let by = |m| self.runs.iter().find(|r| r.method == Some(m));
        if let (Some(copy), Some(rename)) = (by(CommitMethod::Copied), by(CommitMethod::Renamed)) {
            write!(
                f,
                "Shows: renaming the cache file held the log lock {} ms instead of {} ms for the \
                 copy, so the slowest small commit beside it took {} ms instead of {} ms.",
                ms(rename.lock_hold),
                ms(copy.lock_hold),
                ms(rename.small_max_beside_big),
                ms(copy.small_max_beside_big)
            )?;
        }
        Ok(())
    }
}
