//! A trace of the durability-relevant steps (writes, fsyncs, renames, the log lock) for
//! tests that check their order or replay a power cut. Off unless a test starts it;
//! recording costs one atomic load when off.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static TRACE: Mutex<Vec<Step>> = Mutex::new(Vec::new());

/// One recorded step (test hook).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What happened: `append`, `fdatasync`, `fsync`, `create+fsync`, `fsync-dir`,
    /// `rename-to`, `write-header`, `clear-in-use`, `lock`, `unlock`, or a test's mark.
    pub op: String,
    /// The file (for `rename-to`: the new name; for `fsync-dir`: `<dir>/.`).
    pub path: PathBuf,
    /// For syncs: the file's length when it was synced.
    pub len: Option<u64>,
    /// For `rename-to`: the old name.
    pub from: Option<PathBuf>,
}

/// Starts recording (test hook).
pub fn start() {
    ON.store(true, Ordering::SeqCst);
}

/// Records a test's own mark (e.g. `ack` with a path naming the transaction).
pub fn mark(op: &str, path: &Path) {
    record(op, path, None, None);
}

/// The recorded steps under `dir`, oldest first (test hook).
pub fn records_under(dir: &Path) -> Vec<Step> {
    TRACE
        .lock()
        .map(|t| {
            t.iter()
                .filter(|s| s.path.starts_with(dir))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The recorded steps under `dir` as `"<op> <path relative to dir>"`, oldest first.
pub fn steps_under(dir: &Path) -> Vec<String> {
    records_under(dir)
        .into_iter()
        .filter_map(|s| {
            let rel = s.path.strip_prefix(dir).ok()?.display().to_string();
            Some(format!(
                "{} {}",
                s.op,
                if rel.is_empty() { ".".into() } else { rel }
            ))
        })
        .collect()
}

fn record(op: &str, path: &Path, len: Option<u64>, from: Option<&Path>) {
    if let Ok(mut t) = TRACE.lock() {
        t.push(Step {
            op: op.to_string(),
            path: path.to_path_buf(),
            len,
            from: from.map(Path::to_path_buf),
        });
    }
}

/// Records one step on `path`.
pub(crate) fn note(op: &str, path: &Path) {
    if ON.load(Ordering::Relaxed) {
        record(op, path, None, None);
    }
}

/// The length of `path` when tracing is on (taken just before a sync: what the sync
/// covers at least).
pub(crate) fn len_before_sync(path: &Path) -> Option<u64> {
    if ON.load(Ordering::Relaxed) {
        std::fs::metadata(path).map(|m| m.len()).ok()
    } else {
        None
    }
}

/// Records a sync of `path` that covered at least `len` bytes (or, for `append`, the
/// file's length after it).
pub(crate) fn note_sync(op: &str, path: &Path, len: Option<u64>) {
    if ON.load(Ordering::Relaxed) {
        record(op, path, len, None);
    }
}

/// Records a rename.
pub(crate) fn note_rename(from: &Path, to: &Path) {
    if ON.load(Ordering::Relaxed) {
        record("rename-to", to, None, Some(from));
    }
}
