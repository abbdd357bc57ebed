//! The directory lock: one writer per binlog directory.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs2::FileExt;

use crate::error::{Error, Result};

/// How long [`DirLock::acquire`] retries before [`Error::Locked`]: long enough for a
/// writer in another process that is closing to finish, short enough to report a live
/// second writer promptly.
const LOCK_WAIT: Duration = Duration::from_millis(1000);

/// An exclusive `flock` on `<dir>/<base>.lock`, released explicitly when dropped.
///
/// Why explicitly: a `flock` belongs to the open file description, and a child process
/// forked by any thread of this process shares that description until it execs (which
/// closes its copy, the descriptor being close-on-exec). Closing our descriptor alone
/// would leave the lock held by such a child for as long as it takes to exec — seconds on
/// a loaded machine — and a reopen in the meantime would fail. `LOCK_UN` releases the
/// lock of the description for every copy at once.
#[derive(Debug)]
pub(crate) struct DirLock {
    file: File,
    path: PathBuf,
}

impl DirLock {
    /// Takes the lock of `base` in `dir`, retrying for up to [`LOCK_WAIT`].
    pub(crate) fn acquire(dir: &Path, base: &str) -> Result<DirLock> {
        let path = dir.join(format!("{base}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io("open", &path, e))?;
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock_exclusive() {
                Ok(()) => return Ok(DirLock { file, path }),
                Err(e) if e.kind() == fs2::lock_contended_error().kind() => {
                    if Instant::now() >= deadline {
                        return Err(Error::Locked { path });
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(Error::io("lock", &path, e)),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        if let Err(e) = FileExt::unlock(&self.file) {
            tracing::warn!("unlocking {}: {e}", self.path.display());
        }
    }
}
