//! [`TxnHistory`]: the multi-key transactions of a workload with their timestamps, reads and
//! writes, recorded from many threads, for [`crate::check_snapshot_isolation`].
//!
//! Keys are small integers (the workload maps them to its byte keys). Every transaction that
//! writes gets a unique id (never 0), and every value it writes names it: a read reports the
//! id of the transaction whose write it returned, 0 for a key never written.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

/// What became of a transaction's commit, as its client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOutcome {
    /// Acknowledged: committed at `commit_ts`.
    Committed {
        /// The commit timestamp the store answered.
        commit_ts: u64,
    },
    /// The answer was lost: it may or may not have committed (all of it or nothing).
    Unknown,
    /// Definitely not committed (a conflict, a lost lock, a rollback, or it never got to
    /// commit): nothing it wrote may ever be read.
    Aborted,
}

/// How a read chose its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    /// A snapshot read: the version visible at the transaction's `start_ts` (the newest
    /// commit at or below it).
    Snapshot,
    /// A locking ("current") read: the newest committed version when the lock was taken, at
    /// a `for_update_ts` the workload does not know.
    Latest,
}

/// One key a transaction read from the store (not from its own buffered writes).
///
/// If the transaction commits and also writes `key`, its write replaced exactly the version
/// this read returned (first committer wins, or the lock held since the read): the checker
/// treats any other commit between the two as a lost update. So a workload records a read
/// of a key it then writes only when that holds: an optimistic transaction's read, a
/// pessimistic one's locking read, never a pessimistic snapshot read of a key it locks
/// later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRead {
    /// The key.
    pub key: u64,
    /// The id of the transaction whose write the read returned; 0: the key was never
    /// written.
    pub saw: u64,
    /// Snapshot or locking read.
    pub kind: ReadKind,
    /// When the read began on the history's clock: for a snapshot read, before the
    /// transaction took its `start_ts`; for a locking read, before the lock request. A write
    /// acknowledged before then must be visible to it.
    pub invoke: u64,
}

/// One transaction: its reads, the keys it wrote and how its commit ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRecord {
    /// Unique, never 0 (0 names the initial state).
    pub id: u64,
    /// The client thread that ran it (for reports).
    pub client: u64,
    /// Its snapshot.
    pub start_ts: u64,
    /// What it read, in order.
    pub reads: Vec<KeyRead>,
    /// The keys it wrote (each once); empty for a read-only transaction.
    pub writes: Vec<u64>,
    /// How its commit ended.
    pub outcome: TxnOutcome,
    /// When its commit returned on the history's clock (for an acknowledged commit: when
    /// the acknowledgement arrived).
    pub complete: u64,
}

impl TxnRecord {
    /// The commit timestamp, for an acknowledged commit.
    pub fn commit_ts(&self) -> Option<u64> {
        match self.outcome {
            TxnOutcome::Committed { commit_ts } => Some(commit_ts),
            TxnOutcome::Unknown | TxnOutcome::Aborted => None,
        }
    }
}

/// A history shared by the client threads: one clock, one list. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TxnHistory {
    start: Instant,
    txns: Arc<Mutex<Vec<TxnRecord>>>,
}

impl Default for TxnHistory {
    fn default() -> TxnHistory {
        TxnHistory::new()
    }
}

impl TxnHistory {
    /// An empty history whose clock starts now.
    pub fn new() -> TxnHistory {
        TxnHistory {
            start: Instant::now(),
            txns: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Now on the history's clock, in nanoseconds.
    pub fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records a transaction.
    pub fn record(&self, txn: TxnRecord) {
        self.txns.lock().push(txn);
    }

    /// Every transaction recorded so far.
    pub fn txns(&self) -> Vec<TxnRecord> {
        self.txns.lock().clone()
    }
}
