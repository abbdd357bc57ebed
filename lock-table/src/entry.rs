//! What the table stores and what its operations report.

/// One stored lock and its `deleted` mark.
///
/// A lock is marked deleted when a replicated write that removes or replaces it has been sent
/// to Raft but not yet applied. It stays visible to readers until
/// [`RegionLockTable::remove_applied`](crate::RegionLockTable::remove_applied) runs on apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry<L> {
    pub(crate) lock: L,
    pub(crate) deleted: bool,
    /// Bytes charged for this entry when it was stored (key + heap + overhead).
    pub(crate) charged: usize,
}

impl<L> LockEntry<L> {
    /// The lock.
    pub fn lock(&self) -> &L {
        &self.lock
    }

    /// Takes the lock out of the entry.
    pub fn into_lock(self) -> L {
        self.lock
    }

    /// Whether a pending replicated write will delete this lock.
    pub fn is_deleted(&self) -> bool {
        self.deleted
    }

    /// Bytes this entry is charged in the region and node budgets.
    pub fn charged_bytes(&self) -> usize {
        self.charged
    }
}

/// What a successful insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InsertReport {
    /// Locks stored (the batch length).
    pub locks: usize,
    /// Of those, how many replaced a lock already stored under the same key (or an earlier
    /// entry of the same batch).
    pub overwritten: usize,
    /// Change of the table's `memory_size`, in bytes (negative when overwrites shrank it).
    pub bytes_delta: isize,
}

/// Locks lost when the table was cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LostLocks {
    /// How many locks were dropped.
    pub locks: usize,
    /// How many bytes they were charged.
    pub bytes: usize,
}

/// The result of a scan: entries in key order and whether the limit cut it short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockScan<T> {
    /// The entries found, in ascending key order.
    pub entries: Vec<T>,
    /// Whether more entries lie in the range after the last one returned.
    pub has_more: bool,
}
