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
    /// Copy path: a group of two or more transactions written up to the end of one of
    /// them (those bytes are written out to the file for this point, as they are not
    /// otherwise), the rest of the group not written, nothing fsynced. Passed after every
    /// transaction of such a group but its last, whether the group's transactions came
    /// from one [`crate::Binlog::commit_many`] batch or from separate commits.
    pub const COPY_BETWEEN_TXNS: &str = "binlog.copy.between_txns";
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
    pub const ALL: [&str; 8] = [
        COPY_MID,
        COPY_BETWEEN_TXNS,
        COPY_BEFORE_SYNC,
        COPY_AFTER_SYNC,
        RENAME_AFTER_ROTATE,
        RENAME_AFTER_RENAME,
        RENAME_BEFORE_XID,
        RENAME_BEFORE_OLD_CLOSED,
    ];
}

/// The crash point `SURGE_CRASH_AT` names and how many passes `SURGE_CRASH_SKIP` skips
/// (read once per process).
fn target() -> &'static Option<(String, u64)> {
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    TARGET.get_or_init(|| {
        let skip = std::env::var(CRASH_SKIP_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        std::env::var(CRASH_ENV).ok().map(|t| (t, skip))
    })
}

/// Whether `SURGE_CRASH_AT` names `point`: for a point that needs work done before it
/// (bytes written out) that the commit path does not otherwise do.
pub(crate) fn crash_point_selected(point: &'static str) -> bool {
    target().as_ref().is_some_and(|(name, _)| name == point)
}

/// Stops here (until killed, at most 10 minutes, then aborts) if `SURGE_CRASH_AT` names
/// `point`.
pub(crate) fn crash_point(point: &'static str) {
    static HITS: AtomicU64 = AtomicU64::new(0);
    let Some((name, skip)) = target() else { return };
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
