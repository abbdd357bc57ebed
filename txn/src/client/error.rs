//! [`TxnError`]: why a transaction operation failed, as a value the caller acts on.

use crate::{KeyError, MvccError, RegionError, ServiceError, WaitForEdge};

/// Why a transaction operation failed.
///
/// Most variants are ordinary outcomes of concurrency (conflicts, lock waits, deadlock
/// victims, retries that ran out): [`TxnError::is_retryable`] says whether running the whole
/// transaction again may succeed. [`TxnError::Undetermined`] is special: the transaction may
/// or may not have committed, and the caller must find out before retrying anything that is
/// not idempotent.
///
/// It is serde-encodable so that a coordinator serving clients over a network (the
/// `surgedb` node) can send it as it is: a remote caller matches the same variants. New
/// variants are added at the end, which keeps earlier encodings valid.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum TxnError {
    /// Another transaction committed a write to `key` after this one's snapshot (optimistic
    /// prewrite) or after its `for_update_ts` (pessimistic lock retries ran out).
    #[error(
        "write conflict on key {:?}: txn {start_ts} conflicts with txn {conflict_start_ts} committed at {conflict_commit_ts}",
        String::from_utf8_lossy(key)
    )]
    WriteConflict {
        /// This transaction.
        start_ts: u64,
        /// The transaction that wrote the key.
        conflict_start_ts: u64,
        /// Its commit timestamp.
        conflict_commit_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// A pessimistic lock was not granted within the wait timeout.
    #[error(
        "lock wait timeout on key {:?} held by txn {lock_ts}",
        String::from_utf8_lossy(key)
    )]
    LockWaitTimeout {
        /// The key.
        key: Vec<u8>,
        /// The holder.
        lock_ts: u64,
    },
    /// Waiting for a lock would have closed a cycle: this transaction is the victim.
    #[error("deadlock: wait chain of {} edges", chain.len())]
    Deadlock {
        /// The cycle, starting with this transaction's own wait.
        chain: Vec<WaitForEdge>,
    },
    /// A key stayed locked by a live transaction for the whole backoff budget.
    #[error(
        "key {:?} stayed locked by txn {lock_ts}",
        String::from_utf8_lossy(key)
    )]
    KeyIsLocked {
        /// The key.
        key: Vec<u8>,
        /// The holder.
        lock_ts: u64,
    },
    /// A key this transaction locked pessimistically lost its lock before prewrite (a leader
    /// crashed with in-memory locks, or the lock expired and was rolled back) and amending
    /// it was unsafe.
    #[error(
        "pessimistic lock of txn {start_ts} not found on key {:?}",
        String::from_utf8_lossy(key)
    )]
    PessimisticLockNotFound {
        /// This transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// This transaction was rolled back on `key` by another client (its lock expired) before
    /// it could lock it.
    #[error(
        "txn {start_ts} was rolled back on key {:?}",
        String::from_utf8_lossy(key)
    )]
    PessimisticLockRolledBack {
        /// This transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// Committing the primary found neither the lock nor a commit record: the transaction
    /// was rolled back (by another client, after its lock expired). It did not commit.
    #[error(
        "txn {start_ts} lock not found on key {:?} at commit",
        String::from_utf8_lossy(key)
    )]
    TxnLockNotFound {
        /// This transaction.
        start_ts: u64,
        /// The primary key.
        key: Vec<u8>,
    },
    /// Readers kept pushing the primary's `min_commit_ts` past every commit timestamp tried.
    #[error("commit_ts {commit_ts} of txn {start_ts} expired: min_commit_ts is {min_commit_ts}")]
    CommitTsExpired {
        /// This transaction.
        start_ts: u64,
        /// The last commit timestamp tried.
        commit_ts: u64,
        /// The primary's `min_commit_ts`.
        min_commit_ts: u64,
    },
    /// A key that must not exist has a visible value.
    #[error("key {:?} already exists", String::from_utf8_lossy(key))]
    AlreadyExist {
        /// The key.
        key: Vec<u8>,
    },
    /// The answer to the primary's commit was lost, did not decode or did not fit the
    /// request, and retrying could not tell whether it was applied: the transaction may or
    /// may not have committed.
    #[error("txn {start_ts}: outcome undetermined: {detail}")]
    Undetermined {
        /// This transaction.
        start_ts: u64,
        /// What was lost.
        detail: String,
    },
    /// A region error persisted after every retry within the backoff budget.
    #[error("region error after retries: {0}")]
    Region(RegionError),
    /// No node could be reached within the backoff budget.
    #[error("unavailable after retries: {0}")]
    Unavailable(ServiceError),
    /// A node answered with a reply that does not fit the request.
    #[error("protocol error: {detail}")]
    Protocol {
        /// What was unexpected.
        detail: String,
    },
    /// A node refused for a reason this layer does not act on (corrupt data, a transaction
    /// not found by a heartbeat).
    #[error("key error: {0}")]
    Key(KeyError),
    /// The transaction was already over. A [`crate::Transaction`] never returns it (its
    /// commit and rollback take it); a transaction reached through a session that ended
    /// (the `surgedb` TCP client's, whose connection was lost) does.
    #[error("transaction already finished")]
    TxnFinished,
    /// The coordinator's binlog could not take the transaction (not opened, stopped after a
    /// failure, a journal or cache write failed). The transaction did not commit; a failure
    /// after the commit point is reported as [`TxnError::Undetermined`] instead.
    #[error("binlog: {detail}")]
    Binlog {
        /// What failed.
        detail: String,
    },
    /// A hot-row update's operation was refused (a bound, an overflow, a stored value that is
    /// not an integer). Only this update failed; nothing of it was written.
    #[error(
        "hot update of key {:?} refused: {reason}",
        String::from_utf8_lossy(key)
    )]
    HotUpdateRejected {
        /// The key.
        key: Vec<u8>,
        /// Why.
        reason: super::hot_op::HotReject,
        /// The update carried `rollback_on_fail`.
        rollback: bool,
    },
    /// A hot-row update with `target_affect_row(expected)` affected another number of rows.
    /// Only this update failed; nothing of it was written.
    #[error(
        "hot update of key {:?}: target_affect_row({expected}) not met, {actual} rows affected",
        String::from_utf8_lossy(key)
    )]
    TargetAffectRow {
        /// The key.
        key: Vec<u8>,
        /// The hint's count.
        expected: u64,
        /// Rows the update would have affected.
        actual: u64,
        /// The update carried `rollback_on_fail`.
        rollback: bool,
    },
    /// A value given for a binlog row event ([`crate::Transaction::binlog_rows`]) does not
    /// fit its column (wrong kind, out of range, too long, NULL in a `NOT NULL` column), or
    /// a row has the wrong number of values. Nothing of that statement was logged; the
    /// transaction is still usable.
    #[error("binlog row of {table}, column {column}: {reason}")]
    BinlogValue {
        /// The table, as `db.table`.
        table: String,
        /// The column (or `#n` for a row of the wrong length).
        column: String,
        /// Why the value was refused.
        reason: String,
    },
    /// The transaction took longer than [`crate::StreamOptions::max_record_skew`] from its
    /// stream record's timestamp to its commit timestamp, so it was rolled back before its
    /// commit point (stream readers bound their scans by that skew). Retryable.
    #[error(
        "txn {start_ts}: stream record taken at {record_ts}, commit_ts {commit_ts} is {skew_ms} ms later (max {max_skew_ms} ms); rolled back"
    )]
    StreamRecordTooSlow {
        /// This transaction.
        start_ts: u64,
        /// The timestamp of its stream record.
        record_ts: u64,
        /// The commit timestamp it would have used.
        commit_ts: u64,
        /// Physical milliseconds between the two.
        skew_ms: u64,
        /// The bound.
        max_skew_ms: u64,
    },
    /// A write of a key under [`crate::STREAM_PREFIX`] (alone, or after a table's
    /// `t{id}`), which holds the replication stream's records and is not for users.
    /// Nothing was written.
    #[error(
        "key {:?} is reserved: keys under the stream prefix (alone or after a table's t{{id}}) hold stream records",
        String::from_utf8_lossy(key)
    )]
    ReservedKey {
        /// The key.
        key: Vec<u8>,
    },
    /// A stream record read back from the store did not decode (damaged, or written by a
    /// newer layout).
    #[error("stream record of txn {start_ts} (record_ts {record_ts}): {detail}")]
    StreamRecord {
        /// The record's transaction.
        start_ts: u64,
        /// The record's timestamp.
        record_ts: u64,
        /// What was wrong.
        detail: String,
    },
    /// The store's stream records were laid out by another build of this crate: their
    /// keys would read back with wrong timestamps (see the crate's CHANGELOG).
    #[error(
        "the stream records in this store have key layout {found}, this build reads layout {expected}: start from a new data directory"
    )]
    StreamLayout {
        /// The layout found beside the stream settings (`"1"` when none is marked).
        found: String,
        /// The layout this build writes.
        expected: u32,
    },
}

impl TxnError {
    /// Whether running the whole transaction again (with a new `start_ts`) may succeed:
    /// conflicts, lock waits, deadlock victims, lost locks and retries that ran out.
    /// `false` for [`TxnError::Undetermined`] (first find out what happened), bad input
    /// ([`TxnError::AlreadyExist`]), protocol errors and misuse.
    pub fn is_retryable(&self) -> bool {
        match self {
            TxnError::WriteConflict { .. }
            | TxnError::LockWaitTimeout { .. }
            | TxnError::Deadlock { .. }
            | TxnError::KeyIsLocked { .. }
            | TxnError::PessimisticLockNotFound { .. }
            | TxnError::PessimisticLockRolledBack { .. }
            | TxnError::TxnLockNotFound { .. }
            | TxnError::CommitTsExpired { .. }
            | TxnError::StreamRecordTooSlow { .. }
            | TxnError::Region(_)
            | TxnError::Unavailable(_) => true,
            TxnError::AlreadyExist { .. }
            | TxnError::Undetermined { .. }
            | TxnError::Protocol { .. }
            | TxnError::Key(_)
            | TxnError::TxnFinished
            | TxnError::Binlog { .. }
            | TxnError::HotUpdateRejected { .. }
            | TxnError::TargetAffectRow { .. }
            | TxnError::BinlogValue { .. }
            | TxnError::ReservedKey { .. }
            | TxnError::StreamRecord { .. }
            | TxnError::StreamLayout { .. } => false,
        }
    }

    /// A [`TxnError::Protocol`] for a reply that does not fit `request`.
    pub(crate) fn unexpected(request: &str, reply: &crate::KvResponse) -> TxnError {
        TxnError::Protocol {
            detail: format!("unexpected reply to {request}: {reply:?}"),
        }
    }
}

impl From<KeyError> for TxnError {
    fn from(e: KeyError) -> TxnError {
        match e {
            KeyError::Mvcc(m) => TxnError::from(m),
            KeyError::Deadlock { chain, .. } => TxnError::Deadlock { chain },
            KeyError::LockWaitTimeout { key, lock_ts } => {
                TxnError::LockWaitTimeout { key, lock_ts }
            }
            other @ KeyError::TooOld { .. } => TxnError::Key(other),
        }
    }
}

impl From<MvccError> for TxnError {
    fn from(e: MvccError) -> TxnError {
        match e {
            MvccError::KeyIsLocked(info) => TxnError::KeyIsLocked {
                key: info.key,
                lock_ts: info.lock_ts,
            },
            MvccError::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
                ..
            } => TxnError::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
            },
            MvccError::PessimisticLockNotFound { start_ts, key, .. } => {
                TxnError::PessimisticLockNotFound { start_ts, key }
            }
            MvccError::PessimisticLockRolledBack { start_ts, key } => {
                TxnError::PessimisticLockRolledBack { start_ts, key }
            }
            MvccError::TxnLockNotFound { start_ts, key, .. } => {
                TxnError::TxnLockNotFound { start_ts, key }
            }
            MvccError::CommitTsExpired {
                start_ts,
                commit_ts,
                min_commit_ts,
                ..
            } => TxnError::CommitTsExpired {
                start_ts,
                commit_ts,
                min_commit_ts,
            },
            MvccError::AlreadyExist { key } => TxnError::AlreadyExist { key },
            other => TxnError::Key(KeyError::Mvcc(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LockInfo, LockNotFoundReason, LockType};

    fn lock_info() -> LockInfo {
        LockInfo {
            key: b"k".to_vec(),
            primary: b"p".to_vec(),
            lock_ts: 7,
            ttl: 3000,
            lock_type: LockType::Put,
            for_update_ts: 0,
            min_commit_ts: 8,
            txn_size: 1,
        }
    }

    #[test]
    fn key_errors_map_to_structured_variants() {
        let cases: Vec<(KeyError, TxnError, bool)> = vec![
            (
                KeyError::Mvcc(MvccError::WriteConflict {
                    start_ts: 1,
                    conflict_start_ts: 2,
                    conflict_commit_ts: 3,
                    key: b"k".to_vec(),
                    primary: b"p".to_vec(),
                }),
                TxnError::WriteConflict {
                    start_ts: 1,
                    conflict_start_ts: 2,
                    conflict_commit_ts: 3,
                    key: b"k".to_vec(),
                },
                true,
            ),
            (
                KeyError::LockWaitTimeout {
                    key: b"k".to_vec(),
                    lock_ts: 9,
                },
                TxnError::LockWaitTimeout {
                    key: b"k".to_vec(),
                    lock_ts: 9,
                },
                true,
            ),
            (
                KeyError::Deadlock {
                    txn: 1,
                    wait_for_txn: 2,
                    key: b"k".to_vec(),
                    chain: vec![WaitForEdge {
                        txn: 1,
                        wait_for_txn: 2,
                        key: b"k".to_vec(),
                    }],
                },
                TxnError::Deadlock {
                    chain: vec![WaitForEdge {
                        txn: 1,
                        wait_for_txn: 2,
                        key: b"k".to_vec(),
                    }],
                },
                true,
            ),
            (
                KeyError::Mvcc(MvccError::PessimisticLockNotFound {
                    start_ts: 4,
                    key: b"k".to_vec(),
                    reason: LockNotFoundReason::LockMissingAmendFail,
                }),
                TxnError::PessimisticLockNotFound {
                    start_ts: 4,
                    key: b"k".to_vec(),
                },
                true,
            ),
            (
                KeyError::Mvcc(MvccError::TxnLockNotFound {
                    start_ts: 4,
                    commit_ts: 5,
                    key: b"k".to_vec(),
                }),
                TxnError::TxnLockNotFound {
                    start_ts: 4,
                    key: b"k".to_vec(),
                },
                true,
            ),
            (
                KeyError::Mvcc(MvccError::CommitTsExpired {
                    start_ts: 4,
                    commit_ts: 5,
                    key: b"k".to_vec(),
                    min_commit_ts: 6,
                }),
                TxnError::CommitTsExpired {
                    start_ts: 4,
                    commit_ts: 5,
                    min_commit_ts: 6,
                },
                true,
            ),
            (
                KeyError::Mvcc(MvccError::AlreadyExist { key: b"k".to_vec() }),
                TxnError::AlreadyExist { key: b"k".to_vec() },
                false,
            ),
            (
                KeyError::Mvcc(MvccError::KeyIsLocked(Box::new(lock_info()))),
                TxnError::KeyIsLocked {
                    key: b"k".to_vec(),
                    lock_ts: 7,
                },
                true,
            ),
        ];
        for (input, want, retryable) in cases {
            let got = TxnError::from(input.clone());
            assert_eq!(got, want, "mapping {input:?}");
            assert_eq!(got.is_retryable(), retryable, "retryable {got:?}");
        }
    }

    #[test]
    fn corrupt_data_is_kept_as_a_key_error_and_not_retryable() {
        let corrupt = MvccError::Corrupt {
            what: "lock",
            key: b"k".to_vec(),
            detail: "x".into(),
        };
        let got = TxnError::from(KeyError::Mvcc(corrupt.clone()));
        assert_eq!(got, TxnError::Key(KeyError::Mvcc(corrupt)));
        assert!(!got.is_retryable());
        assert!(
            !TxnError::Undetermined {
                start_ts: 1,
                detail: "lost".into()
            }
            .is_retryable()
        );
        assert!(!TxnError::TxnFinished.is_retryable());
    }
}
