//! Errors and refusals of the lock table.

use std::fmt;

use crate::status::LockStatus;

/// Why an insert into the in-memory table was refused.
///
/// Every reason except [`RefuseReason::KeyTooLarge`] is an ordinary, retryable outcome: the
/// caller writes the locks through the replicated (pipelined) path instead. `KeyTooLarge` is
/// bad input and must be reported to the client.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RefuseReason {
    /// The table is not writable in its current status.
    #[error("lock table not writable: status is {status}")]
    NotWritable {
        /// The status at the time of the refusal.
        status: LockStatus,
    },
    /// The request was made for another Raft term than the table's.
    #[error("term mismatch: table term {table}, request term {request}")]
    TermMismatch {
        /// The table's term.
        table: u64,
        /// The term the caller gave.
        request: u64,
    },
    /// The request was made for another region version (epoch) than the table's.
    #[error("region version mismatch: table version {table}, request version {request}")]
    VersionMismatch {
        /// The table's region version.
        table: u64,
        /// The version the caller gave.
        request: u64,
    },
    /// The region's budget cannot take the batch.
    #[error("region lock budget full: {used} bytes used + {needed} needed > limit {limit}")]
    RegionBudgetFull {
        /// Bytes the region held.
        used: usize,
        /// Net bytes the batch would add.
        needed: usize,
        /// The per-region limit.
        limit: usize,
    },
    /// The node's budget cannot take the batch.
    #[error("node lock budget full: {used} bytes used + {needed} needed > limit {limit}")]
    NodeBudgetFull {
        /// Bytes the node held.
        used: usize,
        /// Net bytes the batch would add.
        needed: usize,
        /// The node limit.
        limit: usize,
    },
    /// A key of the batch is longer than the configured maximum.
    #[error("key #{index} of the batch is {len} bytes, over the maximum of {max}")]
    KeyTooLarge {
        /// Position of the key in the batch.
        index: usize,
        /// Its length.
        len: usize,
        /// The configured maximum key size.
        max: usize,
    },
}

impl RefuseReason {
    /// Whether the caller should write the locks through the replicated path instead
    /// (true for everything except bad input).
    pub fn should_fall_back(&self) -> bool {
        !matches!(self, RefuseReason::KeyTooLarge { .. })
    }
}

/// A refused insert: the reason and the untouched batch, handed back so the caller can
/// write it through the replicated path (like tokio's `TrySendError` returns the value).
pub struct Refused<L> {
    /// Why the batch was refused.
    pub reason: RefuseReason,
    /// The batch, in the order given.
    pub batch: Vec<(Vec<u8>, L)>,
}

impl<L> Refused<L> {
    /// The batch, given back.
    pub fn into_batch(self) -> Vec<(Vec<u8>, L)> {
        self.batch
    }
}

impl<L> fmt::Debug for Refused<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refused")
            .field("reason", &self.reason)
            .field("batch_len", &self.batch.len())
            .finish()
    }
}

impl<L> fmt::Display for Refused<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "in-memory lock batch of {} refused: {}",
            self.batch.len(),
            self.reason
        )
    }
}

impl<L> std::error::Error for Refused<L> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.reason)
    }
}

/// Errors of lock table operations other than inserts.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// The request's term differs from the table's (TiKV `StaleCommand`).
    #[error("stale command: table term {table}, request term {request}")]
    StaleCommand {
        /// The table's term.
        table: u64,
        /// The term the caller gave.
        request: u64,
    },
    /// The request's region version differs from the table's (TiKV `EpochNotMatch`).
    #[error("epoch not match: table version {table}, request version {request}")]
    EpochNotMatch {
        /// The table's region version.
        table: u64,
        /// The version the caller gave.
        request: u64,
    },
    /// The peer is not leader, so its table says nothing about which locks exist.
    #[error("not leader: the in-memory lock table is not valid on this peer")]
    NotLeader,
    /// A flashback of the region is in progress.
    #[error("flashback in progress")]
    FlashbackInProgress,
    /// A split range is empty (`end <= start`).
    #[error("split range #{index} is empty")]
    EmptySplitRange {
        /// Position in the sorted list of ranges (the kept range included).
        index: usize,
    },
    /// Two split ranges overlap.
    #[error("split ranges #{first} and #{second} overlap")]
    OverlappingSplitRanges {
        /// Position of the first range in the sorted list.
        first: usize,
        /// Position of the second range in the sorted list.
        second: usize,
    },
    /// A lock lies in none of the split ranges; nothing was moved.
    #[error("lock key {key:?} lies in none of the split ranges")]
    KeyOutsideSplitRanges {
        /// The first such key.
        key: Vec<u8>,
    },
    /// A merge cannot start in the table's status (TiKV: "skip merging").
    #[error("cannot start merge: status is {status}")]
    MergeNotNormal {
        /// The status at the time.
        status: LockStatus,
    },
    /// The locks are too large to be proposed with the merge.
    #[error("cannot start merge: locks take {memory_size} bytes, over the limit of {max_bytes}")]
    MergeTooLarge {
        /// Bytes the locks take.
        memory_size: usize,
        /// The limit the caller gave.
        max_bytes: usize,
    },
    /// An insert was refused; converted from [`Refused`] when the caller has no use for the
    /// batch (it is dropped).
    #[error("in-memory lock batch of {locks} refused: {reason}")]
    InsertRefused {
        /// Why.
        reason: RefuseReason,
        /// How many locks the dropped batch held.
        locks: usize,
    },
    /// Absorbing another table's locks would exceed this node's budget.
    #[error("node lock budget full: {used} bytes used + {needed} needed > limit {limit}")]
    NodeBudgetFull {
        /// Bytes the node held.
        used: usize,
        /// Bytes needed.
        needed: usize,
        /// The node limit.
        limit: usize,
    },
}

impl<L> From<Refused<L>> for LockError {
    fn from(refused: Refused<L>) -> Self {
        LockError::InsertRefused {
            reason: refused.reason,
            locks: refused.batch.len(),
        }
    }
}

/// Result with [`LockError`] as the default error.
pub type Result<T, E = LockError> = std::result::Result<T, E>;
