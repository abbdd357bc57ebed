//! The status of a region's lock table (TiKV's `LocksStatus`).

use std::fmt;

/// What a region's lock table currently allows.
///
/// Only [`LockStatus::Normal`] accepts new in-memory locks; every other status makes
/// [`RegionLockTable::try_insert`](crate::RegionLockTable::try_insert) refuse so that the
/// caller falls back to the replicated path.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockStatus {
    /// The peer is leader and no region change is in progress: writable.
    Normal,
    /// A voluntary leader transfer is in progress; the locks have been handed out to be
    /// proposed through Raft.
    TransferringLeader,
    /// A merge of this (source) region is in progress; the locks have been handed out to be
    /// proposed into the source's log.
    MergingRegion,
    /// The peer is not leader (initial status, and after leadership was lost).
    NotLeader,
    /// A flashback of the region is in progress; the locks were dropped.
    Flashback,
}

impl LockStatus {
    /// Whether new in-memory locks may be inserted in this status.
    pub fn is_writable(self) -> bool {
        self == LockStatus::Normal
    }

    /// A short lower-case name, used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            LockStatus::Normal => "normal",
            LockStatus::TransferringLeader => "transferring-leader",
            LockStatus::MergingRegion => "merging-region",
            LockStatus::NotLeader => "not-leader",
            LockStatus::Flashback => "flashback",
        }
    }
}

impl fmt::Display for LockStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
