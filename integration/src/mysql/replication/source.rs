//! [`ReplicationSource`]: the binlog a MySQL port serves to replicas.

use std::fmt::Debug;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::error::ReplicationError;

/// A growing, ordered binlog: files of MariaDB binlog events (format v4, CRC-32), each
/// beginning with the magic, a Format_description, a Gtid_list (the GTID state before the
/// file's first group) and a Binlog_checkpoint.
///
/// # Contract
/// * Files only grow at the end of the last one; a file that is not the last never changes
///   again (so a replica may be sent all of it).
/// * Within [`end`](ReplicationSource::end) every event is whole and every GTID group is
///   complete: a replica is never sent a partial group. Bytes past it may be a group still
///   being written.
/// * A file may start with one large group only (a transaction committed by renaming its
///   spill file into the log): nothing limits the size of a file or of an event.
/// * The bytes of a GTID, once within `end`, never change: a replica that reconnects gets
///   the same group for the same GTID.
pub trait ReplicationSource: Send + Sync + Debug {
    /// The binlog files in order: (basename, path). Only the last may still grow.
    fn files(&self) -> Vec<(String, PathBuf)>;

    /// The end of the complete groups: (basename, offset). Bytes past it may be a group
    /// being written.
    fn end(&self) -> (String, u64);

    /// Blocks until [`end`](ReplicationSource::end) is past `(file, offset)` (a later file,
    /// or a larger offset in `file`) or `timeout` passed; returns `end()`.
    fn wait_past(&self, file: &str, offset: u64, timeout: Duration) -> (String, u64);

    /// The server_id of the stream's events (the answer to
    /// `SHOW VARIABLES LIKE 'SERVER_ID'`).
    fn server_id(&self) -> u32;

    /// How long a replica asking to start after a GTID this source does not hold yet
    /// waits for it before it is refused with ERR 1236. MariaDB refuses at once (the
    /// default, zero); a source that may lag behind another serving the same stream (a
    /// replica moving to it after a failover) can give it time to catch up.
    fn start_grace(&self) -> Duration {
        Duration::ZERO
    }

    /// Keeps `file` in the binlog while the returned pin lives: a dump pins the file it
    /// streams (and the next before it lets go of it), so that a purge never removes a
    /// file a connected replica is reading or is about to read (MariaDB's "log in use").
    /// The default pins nothing (a binlog that is never purged).
    ///
    /// # Errors
    /// [`ReplicationError::FileGone`] when `file` is no longer in the binlog.
    fn pin(&self, file: &str) -> Result<FilePin, ReplicationError> {
        let _ = file;
        Ok(FilePin::none())
    }

    /// `PURGE BINARY LOGS`: removes the files before `target`, oldest first, never the
    /// last one nor one pinned (nor any after it); returns the names removed. The default
    /// refuses.
    ///
    /// # Errors
    /// [`ReplicationError::PurgeTargetNotFound`] for a name the binlog does not list;
    /// [`ReplicationError::PurgeFailed`] otherwise (the default: this binlog is never
    /// purged).
    fn purge(&self, target: PurgeTarget) -> Result<Vec<String>, ReplicationError> {
        let _ = target;
        Err(ReplicationError::PurgeFailed {
            detail: "this binlog cannot be purged".into(),
        })
    }
}

/// What `PURGE BINARY LOGS` removes: the files before a named one, or those last
/// modified before a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurgeTarget {
    /// `PURGE BINARY LOGS TO 'name'`: every file before `name` (which stays).
    To(String),
    /// `PURGE BINARY LOGS BEFORE 'datetime'` (and expiry): every file last modified before
    /// this time, up to the first that is not.
    Before(SystemTime),
}

/// Keeps a binlog file from being purged until dropped ([`ReplicationSource::pin`]).
#[must_use = "the file is pinned only while this lives"]
pub struct FilePin(Option<Box<dyn FnOnce() + Send>>);

impl FilePin {
    /// A pin that keeps nothing.
    pub fn none() -> FilePin {
        FilePin(None)
    }

    /// A pin that runs `release` when dropped.
    pub fn new(release: impl FnOnce() + Send + 'static) -> FilePin {
        FilePin(Some(Box::new(release)))
    }
}

impl Drop for FilePin {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

impl std::fmt::Debug for FilePin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FilePin").field(&self.0.is_some()).finish()
    }
}

/// Whether `end` is past `(file, offset)`: in another (later) file, or further in the same.
pub(crate) fn is_past(end: &(String, u64), file: &str, offset: u64) -> bool {
    end.0 != file || end.1 > offset
}
