//! What a commit returns, and positions in the log.

use std::time::Duration;

use crate::gtid::Gtid;

/// How a transaction's events reached the binlog. More methods may be added (so match with
/// a wildcard arm).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitMethod {
    /// Copied from the cache into the current file by a group-commit leader.
    Copied,
    /// The cache file was renamed to become a new binlog file.
    Renamed,
}

/// What a commit returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// The GTID given to the transaction.
    pub gtid: Gtid,
    /// The xid written in its Xid event.
    pub xid: u64,
    /// File holding the transaction.
    pub file: String,
    /// Offset just past its Xid event.
    pub end_position: u64,
    /// Copy or rename.
    pub method: CommitMethod,
    /// How long its group (or its rename) held the log lock.
    pub lock_hold: Duration,
}

/// A position in the log: file name and byte offset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// File name (no directory).
    pub file: String,
    /// Byte offset (4 = first event).
    pub offset: u64,
}
