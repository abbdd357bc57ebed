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
    /// In-memory locks lost because leadership was lost.
    pub memory_locks_lost: u64,
    /// One-phase commits.
    pub one_pc: u64,
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
            memory_locks_lost: self.memory_locks_lost + other.memory_locks_lost,
            one_pc: self.one_pc + other.one_pc,
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
    pub(crate) memory_locks_lost: AtomicU64,
    pub(crate) one_pc: AtomicU64,
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
            memory_locks_lost: self.memory_locks_lost.load(Ordering::Relaxed),
            one_pc: self.one_pc.load(Ordering::Relaxed),
        }
    }
}
