//! A trace of the durability-relevant steps (writes, fsyncs, renames, the log lock) for
//! tests that check their order. Off unless a test starts it; recording costs one atomic
//! load when off.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static TRACE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Starts recording (test hook).
pub fn start() {
    ON.store(true, Ordering::SeqCst);
}

/// The recorded steps whose path lies under `dir`, as `"<op> <file name>"`, oldest first
/// (test hook). Steps of other directories (other tests) are left out.
pub fn steps_under(dir: &Path) -> Vec<String> {
    let prefix = format!("{}/", dir.display());
    TRACE
        .lock()
        .map(|t| {
            t.iter()
                .filter_map(|s| s.split_once(' '))
                .filter_map(|(op, p)| p.strip_prefix(&prefix).map(|rest| format!("{op} {rest}")))
                .collect()
        })
        .unwrap_or_default()
}

/// Records one step on `path`.
pub(crate) fn note(op: &str, path: &Path) {
    if ON.load(Ordering::Relaxed)
        && let Ok(mut t) = TRACE.lock()
    {
        t.push(format!("{op} {}", path.display()));
    }
}
