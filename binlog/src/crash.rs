//! Named crash points for the crash tests. Inert unless the environment variable
//! `SURGE_CRASH_AT` names one: then the process prints `reached <name>` on stdout and waits
//! to be killed (the test sends `SIGKILL`), so whatever reached the kernel stays and
//! nothing after the point happens.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable that selects a crash point.
pub const CRASH_ENV: &str = "SURGE_CRASH_AT";
/// Environment variable: how many times the selected point is passed before it stops the
/// process (default 0: the first time).
pub const CRASH_SKIP_ENV: &str = "SURGE_CRASH_SKIP";

/// Names of the crash points.
pub mod crash_points {
    /// Copy path: part of a spilled cache written to the binlog, the rest not.
    pub const COPY_MID: &str = "binlog.copy.mid";
    /// Copy path: the whole group written, not yet fsynced.
    pub const COPY_BEFORE_SYNC: &str = "binlog.copy.before_sync";
    /// Copy path: group fsynced, results not yet returned.
    pub const COPY_AFTER_SYNC: &str = "binlog.copy.after_sync";
    /// Rename path: Rotate written to the old file, cache not yet renamed.
    pub const RENAME_AFTER_ROTATE: &str = "binlog.rename.after_rotate";
    /// Rename path: cache renamed to the new binlog name, index not updated.
    pub const RENAME_AFTER_RENAME: &str = "binlog.rename.after_rename";
    /// Rename path: index updated and old file closed, Xid not yet appended.
    pub const RENAME_BEFORE_XID: &str = "binlog.rename.before_xid";
    /// Rename path: log lock released (a size rotation may have followed the renamed
    /// file), the old file not yet fsynced nor marked closed, the commit not yet returned.
    pub const RENAME_BEFORE_OLD_CLOSED: &str = "binlog.rename.before_old_closed";
    /// Every crash point, for tests that loop over them.
    pub const ALL: [&str; 7] = [
        COPY_MID,
        COPY_BEFORE_SYNC,
        COPY_AFTER_SYNC,
        RENAME_AFTER_ROTATE,
        RENAME_AFTER_RENAME,
        RENAME_BEFORE_XID,
        RENAME_BEFORE_OLD_CLOSED,
    ];
}

/// Stops here (until killed, at most 10 minutes, then aborts) if `SURGE_CRASH_AT` names
/// `point`.
pub(crate) fn crash_point(point: &'static str) {
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let skip = std::env::var(CRASH_SKIP_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        std::env::var(CRASH_ENV).ok().map(|t| (t, skip))
    });
    let Some((name, skip)) = target else { return };
    if name == point && HITS.fetch_add(1, Ordering::Relaxed) >= *skip {
        let mut out = std::io::stdout().lock();
        // If stdout is gone the parent is gone too; nothing useful to do with the error.
        let _ = writeln!(out, "reached {point}");
        let _ = out.flush();
        // Waits for the SIGKILL; if the parent died without sending it, the process ends
        // itself after a while instead of lingering as an orphan.
        for _ in 0..600 {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        std::process::abort();
    }
}
