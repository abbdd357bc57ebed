//! Counters of a [`crate::Binlog`].

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of the binlog's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BinlogStats {
    /// Transactions committed (`Binlog_commits`).
    pub commits: u64,
    /// Commit groups written, renames included (`Binlog_group_commits`). A
    /// [`crate::Binlog::commit_many`] batch is always inside one group.
    pub groups: u64,
    /// Transactions committed by renaming their cache file.
    pub renames: u64,
    /// Large spilled caches that were copied because their reserved space was too small.
    pub rename_fallbacks: u64,
    /// Bytes added to binlog files by commits (events, renamed bytes included).
    pub bytes: u64,
    /// fsync calls on binlog files by commits (at most one per group).
    pub syncs: u64,
    /// New binlog files started (size rotations and renames).
    pub rotations: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) commits: AtomicU64,
    pub(crate) groups: AtomicU64,
    pub(crate) renames: AtomicU64,
    pub(crate) rename_fallbacks: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) syncs: AtomicU64,
    pub(crate) rotations: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> BinlogStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BinlogStats {
            commits: g(&self.commits),
            groups: g(&self.groups),
            renames: g(&self.renames),
            rename_fallbacks: g(&self.rename_fallbacks),
            bytes: g(&self.bytes),
            syncs: g(&self.syncs),
            rotations: g(&self.rotations),
        }
    }
}
