//! Node-wide counters of the lock tables, kept as atomics and read as a plain snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::RefuseReason;

/// A snapshot of the node-wide lock table counters (TiKV's
/// `tikv_in_memory_pessimistic_locking{result}` and `tikv_pessimistic_lock_memory_size`).
///
/// Every counter except `current_*` only grows. All tables created from one
/// [`MemoryBudget`](crate::MemoryBudget) share the same counters. Each field is read on its
/// own (they are statistics, not a transaction): while other threads insert or remove, two
/// fields of one snapshot, such as `current_locks` and `current_bytes`, may be a few
/// operations apart; they agree exactly once the tables are quiet.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockTableCounters {
    /// Locks stored by successful `try_insert` calls (new keys and overwrites).
    pub inserted: u64,
    /// `try_insert` batches refused because the status was not `Normal`.
    pub refused_not_writable: u64,
    /// `try_insert` batches refused because the term differed.
    pub refused_term_mismatch: u64,
    /// `try_insert` batches refused because the region version differed.
    pub refused_version_mismatch: u64,
    /// Batches refused because the region's budget was full.
    pub refused_region_full: u64,
    /// Batches refused because the node's budget was full.
    pub refused_node_full: u64,
    /// Batches refused because a key exceeded the maximum key size.
    pub refused_key_too_large: u64,
    /// Locks dropped because the peer lost leadership (or a flashback started).
    pub dropped_on_leader_loss: u64,
    /// Bytes (as charged) of the locks counted in `dropped_on_leader_loss`.
    pub dropped_bytes_on_leader_loss: u64,
    /// Locks handed out by `start_transfer` to be proposed before a leader transfer.
    pub migrated_on_transfer: u64,
    /// Locks moved into new tables by `split`.
    pub migrated_on_split: u64,
    /// Locks handed out by `start_merge` to be proposed before a merge.
    pub migrated_on_merge: u64,
    /// Locks received by `absorb` or `insert_migrated`.
    pub received_migrated: u64,
    /// Locks currently held by all tables of the node.
    pub current_locks: u64,
    /// Bytes currently charged to the node budget.
    pub current_bytes: u64,
}

impl LockTableCounters {
    /// Total of every `refused_*` counter.
    pub fn refused_total(&self) -> u64 {
        self.refused_not_writable
            + self.refused_term_mismatch
            + self.refused_version_mismatch
            + self.refused_region_full
            + self.refused_node_full
            + self.refused_key_too_large
    }
}

/// The live atomics behind [`LockTableCounters`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) inserted: AtomicU64,
    refused_not_writable: AtomicU64,
    refused_term_mismatch: AtomicU64,
    refused_version_mismatch: AtomicU64,
    refused_region_full: AtomicU64,
    refused_node_full: AtomicU64,
    refused_key_too_large: AtomicU64,
    pub(crate) dropped_on_leader_loss: AtomicU64,
    pub(crate) dropped_bytes_on_leader_loss: AtomicU64,
    pub(crate) migrated_on_transfer: AtomicU64,
    pub(crate) migrated_on_split: AtomicU64,
    pub(crate) migrated_on_merge: AtomicU64,
    pub(crate) received_migrated: AtomicU64,
    pub(crate) current_locks: AtomicU64,
}

/// Adds `n` to a counter. Relaxed: counters are statistics, not synchronisation.
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn record_refusal(&self, reason: &RefuseReason) {
        let counter = match reason {
            RefuseReason::NotWritable { .. } => &self.refused_not_writable,
            RefuseReason::TermMismatch { .. } => &self.refused_term_mismatch,
            RefuseReason::VersionMismatch { .. } => &self.refused_version_mismatch,
            RefuseReason::RegionBudgetFull { .. } => &self.refused_region_full,
            RefuseReason::NodeBudgetFull { .. } => &self.refused_node_full,
            RefuseReason::KeyTooLarge { .. } => &self.refused_key_too_large,
        };
        bump(counter, 1);
    }

    pub(crate) fn snapshot(&self, current_bytes: usize) -> LockTableCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LockTableCounters {
            inserted: get(&self.inserted),
            refused_not_writable: get(&self.refused_not_writable),
            refused_term_mismatch: get(&self.refused_term_mismatch),
            refused_version_mismatch: get(&self.refused_version_mismatch),
            refused_region_full: get(&self.refused_region_full),
            refused_node_full: get(&self.refused_node_full),
            refused_key_too_large: get(&self.refused_key_too_large),
            dropped_on_leader_loss: get(&self.dropped_on_leader_loss),
            dropped_bytes_on_leader_loss: get(&self.dropped_bytes_on_leader_loss),
            migrated_on_transfer: get(&self.migrated_on_transfer),
            migrated_on_split: get(&self.migrated_on_split),
            migrated_on_merge: get(&self.migrated_on_merge),
            received_migrated: get(&self.received_migrated),
            current_locks: get(&self.current_locks),
            current_bytes: current_bytes as u64,
        }
    }
}
