//! Node counters: [`NodeCounters`] (a plain snapshot) and the atomics behind it.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// A node's counters (a plain snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCounters {
    /// Pessimistic locks written to a leader's memory table.
    pub in_memory_success: u64,
    /// Lock requests refused by a full memory budget (they fell back).
    pub in_memory_full: u64,
    /// Lock requests that fell back because the table was not writable (transfer, merge).
    pub in_memory_not_writable: u64,
    /// Lock requests that fell back because the term or epoch changed.
    pub in_memory_stale: u64,
    /// Raft proposals made.
    pub proposals: u64,
    /// Bytes of commands proposed.
    pub raft_bytes: u64,
    /// Bytes of commands proposed for pessimistic locks only.
    pub lock_raft_bytes: u64,
    /// Lock waits started.
    pub lock_waits: u64,
    /// Lock waits that timed out.
    pub lock_wait_timeouts: u64,
    /// Deadlocks detected (victims).
    pub deadlocks: u64,
    /// One-phase commits.
    pub one_pc: u64,
    /// In-memory locks proposed through Raft before a voluntary leader transfer, counted once
    /// their entry applied (copied again under their keys' latches: a lock a write replaced
    /// or released meanwhile is neither proposed nor counted).
    pub locks_migrated_on_transfer: u64,
    /// In-memory locks moved to a new region by a split.
    pub locks_migrated_on_split: u64,
    /// In-memory locks proposed into a merging source region's log, counted as for a
    /// transfer.
    pub locks_migrated_on_merge: u64,
    /// In-memory locks lost because a leader lost leadership (crash, partition, or a split
    /// child led elsewhere).
    pub locks_lost_on_leader_loss: u64,
}

impl NodeCounters {
    /// The field-by-field sum of two snapshots.
    pub fn add(&self, other: &NodeCounters) -> NodeCounters {
        NodeCounters {
            in_memory_success: self.in_memory_success + other.in_memory_success,
            in_memory_full: self.in_memory_full + other.in_memory_full,
            in_memory_not_writable: self.in_memory_not_writable + other.in_memory_not_writable,
            in_memory_stale: self.in_memory_stale + other.in_memory_stale,
            proposals: self.proposals + other.proposals,
            raft_bytes: self.raft_bytes + other.raft_bytes,
            lock_raft_bytes: self.lock_raft_bytes + other.lock_raft_bytes,
            lock_waits: self.lock_waits + other.lock_waits,
            lock_wait_timeouts: self.lock_wait_timeouts + other.lock_wait_timeouts,
            deadlocks: self.deadlocks + other.deadlocks,
            one_pc: self.one_pc + other.one_pc,
            locks_migrated_on_transfer: self.locks_migrated_on_transfer
                + other.locks_migrated_on_transfer,
            locks_migrated_on_split: self.locks_migrated_on_split + other.locks_migrated_on_split,
            locks_migrated_on_merge: self.locks_migrated_on_merge + other.locks_migrated_on_merge,
            locks_lost_on_leader_loss: self.locks_lost_on_leader_loss
                + other.locks_lost_on_leader_loss,
        }
    }

    /// What grew between `earlier` and this snapshot (field by field, never below 0).
    pub fn since(&self, earlier: &NodeCounters) -> NodeCounters {
        NodeCounters {
            in_memory_success: self
                .in_memory_success
                .saturating_sub(earlier.in_memory_success),
            in_memory_full: self.in_memory_full.saturating_sub(earlier.in_memory_full),
            in_memory_not_writable: self
                .in_memory_not_writable
                .saturating_sub(earlier.in_memory_not_writable),
            in_memory_stale: self.in_memory_stale.saturating_sub(earlier.in_memory_stale),
            proposals: self.proposals.saturating_sub(earlier.proposals),
            raft_bytes: self.raft_bytes.saturating_sub(earlier.raft_bytes),
            lock_raft_bytes: self.lock_raft_bytes.saturating_sub(earlier.lock_raft_bytes),
            lock_waits: self.lock_waits.saturating_sub(earlier.lock_waits),
            lock_wait_timeouts: self
                .lock_wait_timeouts
                .saturating_sub(earlier.lock_wait_timeouts),
            deadlocks: self.deadlocks.saturating_sub(earlier.deadlocks),
            one_pc: self.one_pc.saturating_sub(earlier.one_pc),
            locks_migrated_on_transfer: self
                .locks_migrated_on_transfer
                .saturating_sub(earlier.locks_migrated_on_transfer),
            locks_migrated_on_split: self
                .locks_migrated_on_split
                .saturating_sub(earlier.locks_migrated_on_split),
            locks_migrated_on_merge: self
                .locks_migrated_on_merge
                .saturating_sub(earlier.locks_migrated_on_merge),
            locks_lost_on_leader_loss: self
                .locks_lost_on_leader_loss
                .saturating_sub(earlier.locks_lost_on_leader_loss),
        }
    }
}

/// The live counters of a node, shared by its regions.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) in_memory_success: AtomicU64,
    pub(crate) in_memory_full: AtomicU64,
    pub(crate) in_memory_not_writable: AtomicU64,
    pub(crate) in_memory_stale: AtomicU64,
    pub(crate) proposals: AtomicU64,
    pub(crate) raft_bytes: AtomicU64,
    pub(crate) lock_raft_bytes: AtomicU64,
    pub(crate) lock_waits: AtomicU64,
    pub(crate) lock_wait_timeouts: AtomicU64,
    pub(crate) deadlocks: AtomicU64,
    pub(crate) locks_lost_on_leader_loss: AtomicU64,
    pub(crate) one_pc: AtomicU64,
    pub(crate) locks_migrated_on_transfer: AtomicU64,
    pub(crate) locks_migrated_on_merge: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> NodeCounters {
        NodeCounters {
            in_memory_success: self.in_memory_success.load(Ordering::Relaxed),
            in_memory_full: self.in_memory_full.load(Ordering::Relaxed),
            in_memory_not_writable: self.in_memory_not_writable.load(Ordering::Relaxed),
            in_memory_stale: self.in_memory_stale.load(Ordering::Relaxed),
            proposals: self.proposals.load(Ordering::Relaxed),
            raft_bytes: self.raft_bytes.load(Ordering::Relaxed),
            lock_raft_bytes: self.lock_raft_bytes.load(Ordering::Relaxed),
            lock_waits: self.lock_waits.load(Ordering::Relaxed),
            lock_wait_timeouts: self.lock_wait_timeouts.load(Ordering::Relaxed),
            deadlocks: self.deadlocks.load(Ordering::Relaxed),
            locks_lost_on_leader_loss: self.locks_lost_on_leader_loss.load(Ordering::Relaxed),
            one_pc: self.one_pc.load(Ordering::Relaxed),
            locks_migrated_on_transfer: self.locks_migrated_on_transfer.load(Ordering::Relaxed),
            locks_migrated_on_merge: self.locks_migrated_on_merge.load(Ordering::Relaxed),
            ..NodeCounters::default()
        }
    }
}
