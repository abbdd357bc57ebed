//! [`ClientCounters`]: what a client did, as a plain snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a client (and every clone of it) did since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounters {
    /// Transactions committed (including one-phase and read-only commits).
    pub commits: u64,
    /// Of those, committed with one phase (every key in one region).
    pub one_pc_commits: u64,
    /// Commits that ended in a write conflict.
    pub aborts_write_conflict: u64,
    /// Commits that found their locks gone (lost or rolled back by others).
    pub aborts_lock_lost: u64,
    /// Commits that failed for any other reason (region errors, nodes down, bad input).
    pub aborts_other: u64,
    /// Commits whose outcome could not be determined.
    pub undetermined: u64,
    /// Explicit rollbacks and rollbacks of dropped transactions.
    pub rollbacks: u64,
    /// Lock requests that failed with a lock wait timeout.
    pub lock_wait_timeouts: u64,
    /// Lock requests that failed as deadlock victims.
    pub deadlocks: u64,
    /// Requests retried after a region error or an unreachable node.
    pub region_error_retries: u64,
    /// Locks of other transactions resolved (committed or rolled back) by this client.
    pub locks_resolved: u64,
    /// Heartbeats sent.
    pub heartbeats: u64,
    /// Commit batches of secondaries sent by the background path (`async_secondaries`),
    /// as planned (a batch that meets a region change is still one).
    pub secondary_batches: u64,
    /// Of those, batches of paced transactions (whose secondaries took more than one).
    pub secondary_paced_batches: u64,
    /// Transactions whose background secondaries went in more than one batch (paced),
    /// counted once their last batch is done.
    pub secondary_paced_txns: u64,
    /// Microseconds the background path paused between batches (`secondary_pace`).
    pub secondary_pause_us: u64,
}

/// The live counters behind [`ClientCounters`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) commits: AtomicU64,
    pub(crate) one_pc_commits: AtomicU64,
    pub(crate) aborts_write_conflict: AtomicU64,
    pub(crate) aborts_lock_lost: AtomicU64,
    pub(crate) aborts_other: AtomicU64,
    pub(crate) undetermined: AtomicU64,
    pub(crate) rollbacks: AtomicU64,
    pub(crate) lock_wait_timeouts: AtomicU64,
    pub(crate) deadlocks: AtomicU64,
    pub(crate) region_error_retries: AtomicU64,
    pub(crate) locks_resolved: AtomicU64,
    pub(crate) heartbeats: AtomicU64,
    pub(crate) secondary_batches: AtomicU64,
    pub(crate) secondary_paced_batches: AtomicU64,
    pub(crate) secondary_paced_txns: AtomicU64,
    pub(crate) secondary_pause_us: AtomicU64,
}

/// Adds one to `counter`.
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// A snapshot of every counter (each read on its own; not one atomic cut).
    pub(crate) fn snapshot(&self) -> ClientCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClientCounters {
            commits: get(&self.commits),
            one_pc_commits: get(&self.one_pc_commits),
            aborts_write_conflict: get(&self.aborts_write_conflict),
            aborts_lock_lost: get(&self.aborts_lock_lost),
            aborts_other: get(&self.aborts_other),
            undetermined: get(&self.undetermined),
            rollbacks: get(&self.rollbacks),
            lock_wait_timeouts: get(&self.lock_wait_timeouts),
            deadlocks: get(&self.deadlocks),
            region_error_retries: get(&self.region_error_retries),
            locks_resolved: get(&self.locks_resolved),
            heartbeats: get(&self.heartbeats),
            secondary_batches: get(&self.secondary_batches),
            secondary_paced_batches: get(&self.secondary_paced_batches),
            secondary_paced_txns: get(&self.secondary_paced_txns),
            secondary_pause_us: get(&self.secondary_pause_us),
        }
    }

    /// Counts a failed commit by its cause.
    pub(crate) fn count_abort(&self, error: &super::TxnError) {
        use super::TxnError as E;
        match error {
            E::WriteConflict { .. } => bump(&self.aborts_write_conflict),
            E::PessimisticLockNotFound { .. }
            | E::PessimisticLockRolledBack { .. }
            | E::TxnLockNotFound { .. } => bump(&self.aborts_lock_lost),
            E::Undetermined { .. } => bump(&self.undetermined),
            _ => bump(&self.aborts_other),
        }
    }
}
