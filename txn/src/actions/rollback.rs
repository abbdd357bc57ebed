//! [`rollback`]: abort the transaction on one key (TiKV's `actions/cleanup.rs` without the
//! TTL check, and the rollback helpers `check_txn_status` shares).

use crate::mvcc::{
    Lock, LockType, MvccError, MvccReader, MvccTxn, TxnCommitRecord, Write, WriteType,
};

/// Removes the transaction's rollback record below `start_ts` when it is an unprotected
/// rollback: rollbacks of one key would otherwise pile up (TiKV's `collapse_prev_rollback`).
fn collapse_prev_rollback(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
) -> Result<(), MvccError> {
    if let Some((ts, write)) = reader.seek_write(key, txn.start_ts())?
        && write.write_type == WriteType::Rollback
        && !write.protected
    {
        txn.delete_write(key, ts);
    }
    Ok(())
}

/// Records the rollback of `txn.start_ts()` on `key` given what the write column family
/// holds there (TiKV's `make_rollback`): a rollback record at `start_ts`, or, when another
/// transaction committed at exactly `start_ts`, that record flagged with
/// `has_overlapped_rollback` (only for a protected rollback: an unprotected one may be
/// lost, as TiKV allows).
fn write_rollback(txn: &mut MvccTxn, key: &[u8], protected: bool, overlapped_write: Option<Write>) {
    let start_ts = txn.start_ts();
    match overlapped_write {
        Some(mut write) => {
            if protected {
                write.has_overlapped_rollback = true;
                txn.put_write(key, start_ts, &write);
            }
        }
        None => txn.put_write(key, start_ts, &Write::rollback(start_ts, protected)),
    }
}

/// The commit timestamp of the transaction `start_ts` on `key` when the write column family
/// holds its commit record there (a rollback record does not count).
///
/// A lock of that transaction beside such a record is stale: the record is written by the
/// commit that removes the lock, and after it the transaction can never lock the key again
/// (a late lock request or prewrite meets the record as a newer write and fails). Yet one
/// was left on disk engines, where a merge added the source's data to what this node's
/// lagging replica of the source left under the same keys (see `Engine::ingest`), and
/// `check_txn_status` kept answering such a lock on a primary with
/// [`MvccError::Committed`] from [`rollback_lock`]: the readers it blocked retried for good
/// (TiKV panics there). [`check_txn_status`](super::check_txn_status) and
/// [`commit`](super::commit) therefore settle such a lock as committed.
///
/// # Errors
/// [`MvccError::Corrupt`] for damaged data.
pub(crate) fn committed_at(
    reader: &MvccReader<'_>,
    key: &[u8],
    start_ts: u64,
) -> Result<Option<u64>, MvccError> {
    Ok(match reader.get_txn_commit_record(key, start_ts)? {
        TxnCommitRecord::SingleRecord { commit_ts, write }
            if write.write_type != WriteType::Rollback =>
        {
            Some(commit_ts)
        }
        _ => None,
    })
}

/// Removes the transaction's own `lock` on `key`, stale beside the transaction's commit
/// record there (see [`committed_at`]), and keeps the record: what the commit that wrote
/// the record did to the lock. Safe whatever the lock's type:
/// - a `Pessimistic` lock holds no data, and a commit removes it without a record anyway;
///   the transaction it protected is over;
/// - a prewritten lock (`Put`, `Delete`, `Lock`) is what the record was made from: the
///   short value moved into the record, and a long value stays in the default column
///   family at `(key, start_ts)`, where the record points, so it is kept (a rollback would
///   delete it). The commit is final (a record is never taken back), so nothing is waited
///   for, not even the lock's TTL.
pub(crate) fn remove_stale_lock(txn: &mut MvccTxn, key: &[u8]) {
    let start_ts = txn.start_ts();
    txn.unlock_key(key, start_ts);
}

/// Rolls back the transaction's own `lock` on `key`: removes it and its long value and
/// records the rollback (TiKV's `rollback_lock`). The rollback is protected when asked, and
/// always on the primary key of a pessimistic transaction, whose record must keep a late
/// prewrite or lock request from succeeding.
pub(crate) fn rollback_lock(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    lock: &Lock,
    protect: bool,
) -> Result<(), MvccError> {
    let start_ts = txn.start_ts();
    let overlapped_write = match reader.get_txn_commit_record(key, start_ts)? {
        TxnCommitRecord::None { overlapped_write } => overlapped_write,
        TxnCommitRecord::SingleRecord { commit_ts, write }
            if write.write_type != WriteType::Rollback =>
        {
            // The lock is stale (see `committed_at`): a committed transaction cannot be
            // rolled back, so this is refused, changing nothing. `check_txn_status` and
            // `commit` remove such a lock instead of reaching here.
            return Err(MvccError::Committed {
                start_ts,
                commit_ts,
                key: key.to_vec(),
            });
        }
        // Already rolled back: only the lock is left to remove.
        _ => {
            txn.unlock_key(key, start_ts);
            return Ok(());
        }
    };
    if lock.lock_type == LockType::Put && lock.short_value.is_none() {
        txn.delete_value(key, start_ts);
    }
    let protected = protect || (lock.is_pessimistic_txn() && key == lock.primary.as_slice());
    write_rollback(txn, key, protected, overlapped_write);
    if !protected {
        collapse_prev_rollback(txn, reader, key)?;
    }
    txn.unlock_key(key, start_ts);
    Ok(())
}

/// What a rollback found when the transaction holds no lock on the key.
pub(crate) enum MissingLock {
    /// The transaction committed there.
    Committed {
        /// Its commit timestamp.
        commit_ts: u64,
    },
    /// A rollback was already recorded.
    RolledBack,
    /// Nothing was there; a rollback record was written now (if `write` was asked).
    NotFound,
}

/// Looks for the transaction's record on a key it holds no lock on and, when there is
/// none and `write` is set, writes a rollback record so that a late prewrite fails
/// (TiKV's `check_txn_status_missing_lock`).
pub(crate) fn rollback_missing_lock(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    protect: bool,
    write: bool,
) -> Result<MissingLock, MvccError> {
    match reader.get_txn_commit_record(key, txn.start_ts())? {
        TxnCommitRecord::SingleRecord { commit_ts, write } => {
            if write.write_type == WriteType::Rollback {
                Ok(MissingLock::RolledBack)
            } else {
                Ok(MissingLock::Committed { commit_ts })
            }
        }
        TxnCommitRecord::OverlappedRollback { .. } => Ok(MissingLock::RolledBack),
        TxnCommitRecord::None { overlapped_write } => {
            if write {
                if !protect {
                    collapse_prev_rollback(txn, reader, key)?;
                }
                write_rollback(txn, key, protect, overlapped_write);
            }
            Ok(MissingLock::NotFound)
        }
    }
}

/// Rolls back `key` of the transaction `txn.start_ts()` (TiKV's `Rollback`/`Cleanup`).
///
/// - Its own lock (any type): removed with its long value, and the rollback recorded
///   (protected when asked, and always on the primary key of a pessimistic transaction).
/// - Already committed: [`MvccError::Committed`], even with a stale lock of its own left
///   beside the commit record (nothing changed; [`check_txn_status`](super::check_txn_status)
///   and [`commit`](super::commit) remove such a lock).
/// - Already rolled back: `Ok`, nothing written.
/// - Nothing (or another transaction's lock): the rollback is recorded all the same, so
///   that a prewrite arriving late fails.
///
/// Recording the rollback writes a rollback record at `start_ts`, except where another
/// transaction committed at exactly `start_ts` (its commit record holds that slot): a
/// protected rollback then flags that record with `has_overlapped_rollback`, and an
/// unprotected one writes nothing at all, so nothing on this key stops a late prewrite (as
/// TiKV allows: unprotected rollbacks are for keys whose fate the primary's record decides,
/// and a lock such a prewrite leaves is resolved from it). An unprotected rollback also
/// removes the key's newest older record when that is an unprotected rollback (TiKV's
/// `collapse_prev_rollback`).
///
/// # Errors
/// As above, and [`MvccError::Corrupt`] for damaged data.
pub fn rollback(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    protect_rollback: bool,
) -> Result<(), MvccError> {
    let start_ts = txn.start_ts();
    match reader.load_lock(key)? {
        Some(lock) if lock.start_ts == start_ts => {
            rollback_lock(txn, reader, key, &lock, protect_rollback)
        }
        _ => match rollback_missing_lock(txn, reader, key, protect_rollback, true)? {
            MissingLock::Committed { commit_ts } => Err(MvccError::Committed {
                start_ts,
                commit_ts,
                key: key.to_vec(),
            }),
            MissingLock::RolledBack | MissingLock::NotFound => Ok(()),
        },
    }
}
