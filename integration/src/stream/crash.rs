//! Crash points of the stream writer, for crash tests: a child process that sets
//! `SURGE_CRASH_AT` to a point's name aborts there (as a `kill -9` would stop it), after
//! passing it `SURGE_CRASH_SKIP` times (default 0).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The points.
pub mod points {
    /// A group written to the current file, the batch not fsynced, the cursor old.
    pub const MID_BATCH: &str = "stream.mid_batch";
    /// A large group's file built and fsynced under its temporary name, not renamed.
    pub const LARGE_BEFORE_RENAME: &str = "stream.large.before_rename";
    /// A large group's file renamed into place, the cursor old.
    pub const LARGE_AFTER_RENAME: &str = "stream.large.after_rename";
    /// Files and directory fsynced, the cursor not yet replaced.
    pub const BEFORE_CURSOR: &str = "stream.before_cursor";
    /// Every point.
    pub const ALL: [&str; 4] = [
        MID_BATCH,
        LARGE_BEFORE_RENAME,
        LARGE_AFTER_RENAME,
        BEFORE_CURSOR,
    ];
}

struct Armed {
    at: String,
    skip: u64,
    hits: AtomicU64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let at = std::env::var("SURGE_CRASH_AT").ok()?;
            let skip = std::env::var("SURGE_CRASH_SKIP")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            Some(Armed {
                at,
                skip,
                hits: AtomicU64::new(0),
            })
        })
        .as_ref()
}

/// Aborts the process here if this point is armed (and its skips are used up).
pub(crate) fn crash_point(name: &str) {
    if let Some(a) = armed()
        && a.at == name
        && a.hits.fetch_add(1, Ordering::SeqCst) >= a.skip
    {
        eprintln!("crash point {name} reached: aborting");
        std::process::abort();
    }
}
