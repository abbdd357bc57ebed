//! Named crash points of the commit path, for tests that kill a coordinator process at each
//! step. Inert unless the environment variable [`TXN_CRASH_ENV`] names one: the process then
//! prints `reached <name>` on stdout and waits to be killed (the test sends `SIGKILL`), so
//! whatever reached the disk and the cluster stays and nothing after the point happens.
//!
//! A hot-row group's members are written to the binlog as one batch, in one group commit:
//! to stop a coordinator inside that batch (some members' transactions in the binlog
//! file, the rest not), use `surge-binlog`'s own point `binlog.copy.between_txns`
//! (`surge_binlog::crash_points::COPY_BETWEEN_TXNS`, selected by `SURGE_CRASH_AT`).

use std::cell::RefCell;
use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable that selects a crash point.
pub const TXN_CRASH_ENV: &str = "SURGE_TXN_CRASH_AT";
/// Environment variable: how many times the selected point is passed before it stops the
/// process (default 0: the first time).
pub const TXN_CRASH_SKIP_ENV: &str = "SURGE_TXN_CRASH_SKIP";

/// Names of the commit path's crash points, in the order a commit passes them.
pub mod txn_crash_points {
    /// The prepare record is durable and the transaction registered; nothing prewritten.
    pub const AFTER_PREPARE: &str = "txn.commit.after_prepare";
    /// Every key prewritten; no commit timestamp taken, the primary not committed.
    pub const AFTER_PREWRITE: &str = "txn.commit.after_prewrite";
    /// The primary committed (the commit point); the binlog group not written.
    pub const AFTER_PRIMARY_COMMIT: &str = "txn.commit.after_primary_commit";
    /// The binlog group written and fsynced; secondaries not committed, no answer given.
    pub const AFTER_BINLOG: &str = "txn.commit.after_binlog";
    /// Everything done; the answer not yet returned to the caller.
    pub const BEFORE_ACK: &str = "txn.commit.before_ack";
    /// Every crash point of an ordinary commit, for tests that loop over them.
    pub const ALL: [&str; 5] = [
        AFTER_PREPARE,
        AFTER_PREWRITE,
        AFTER_PRIMARY_COMMIT,
        AFTER_BINLOG,
        BEFORE_ACK,
    ];
}

/// A pause to run on the point after prewrite, for the benchmark that measures a large
/// transaction's commit step apart from its prewrite.
type Pause = Box<dyn FnOnce()>;

thread_local! {
    /// Set on the one thread whose commit should pause (no other commit sees it).
    static PAUSE_AFTER_PREWRITE: RefCell<Option<Pause>> = const { RefCell::new(None) };
}

/// Runs `pause` when this thread's next two-phase commit has prewritten every key (before
/// its commit timestamp); `None` clears it.
pub(crate) fn pause_after_prewrite(pause: Option<Pause>) {
    PAUSE_AFTER_PREWRITE.with(|p| *p.borrow_mut() = pause);
}

/// Stops here (until killed; after 10 minutes the process aborts) if [`TXN_CRASH_ENV`]
/// names `point` and it was passed [`TXN_CRASH_SKIP_ENV`] times already. At the point
/// after prewrite, first runs this thread's pause, if one is set.
pub(crate) fn crash_point(point: &'static str) {
    if point == txn_crash_points::AFTER_PREWRITE
        && let Some(pause) = PAUSE_AFTER_PREWRITE.with(|p| p.borrow_mut().take())
    {
        pause();
    }
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let skip = std::env::var(TXN_CRASH_SKIP_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        std::env::var(TXN_CRASH_ENV).ok().map(|t| (t, skip))
    });
    let Some((name, skip)) = target else { return };
    if name != point || HITS.fetch_add(1, Ordering::Relaxed) < *skip {
        return;
    }
    let mut out = std::io::stdout().lock();
    // A parent that is gone cannot be told; the wait below ends the process either way.
    let _ = writeln!(out, "reached {point}");
    let _ = out.flush();
    drop(out);
    std::thread::sleep(std::time::Duration::from_secs(600));
    std::process::abort();
}
