//! Named crash points of the disk engine, for tests that kill a node's process at each step
//! between the engine and the Raft log. Inert unless the environment variable
//! [`ENGINE_CRASH_ENV`] names one: the process then prints `reached <name>` on stdout and
//! waits to be killed (the test sends `SIGKILL`), so what reached the kernel stays and
//! nothing after the point happens.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable that selects a crash point.
pub const ENGINE_CRASH_ENV: &str = "SURGE_ENGINE_CRASH_AT";
/// Environment variable: how many times the selected point is passed before it stops the
/// process (default 0: the first time).
pub const ENGINE_CRASH_SKIP_ENV: &str = "SURGE_ENGINE_CRASH_SKIP";

/// Names of the disk engine's crash points.
pub mod engine_crash_points {
    /// A region's batch is built; not committed to the engine (the entry is in the log).
    pub const BEFORE_BATCH: &str = "engine.before_batch";
    /// A region's batch and its applied index are committed to the engine.
    pub const AFTER_BATCH: &str = "engine.after_batch";
    /// A Raft snapshot's view is taken; the engine's journal not yet synced.
    pub const BEFORE_PERSIST: &str = "engine.before_persist";
    /// The engine's journal is synced; the log not yet compacted (the snapshot's file not
    /// written).
    pub const AFTER_PERSIST: &str = "engine.after_persist";
    /// A Raft snapshot's apply deleted the region's range; its data not yet ingested.
    pub const SNAPSHOT_APPLY_AFTER_DELETE: &str = "engine.snapshot_apply.after_delete";
    /// Every crash point, for tests that loop over them.
    pub const ALL: [&str; 5] = [
        BEFORE_BATCH,
        AFTER_BATCH,
        BEFORE_PERSIST,
        AFTER_PERSIST,
        SNAPSHOT_APPLY_AFTER_DELETE,
    ];
}

/// Stops here (until killed; after 10 minutes the process aborts) if [`ENGINE_CRASH_ENV`]
/// names `point` and it was passed [`ENGINE_CRASH_SKIP_ENV`] times already.
pub(crate) fn crash_point(point: &'static str) {
    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let skip = std::env::var(ENGINE_CRASH_SKIP_ENV)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        std::env::var(ENGINE_CRASH_ENV).ok().map(|t| (t, skip))
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
