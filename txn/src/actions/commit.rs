//! [`commit`]: the second phase of two-phase commit on one key (TiKV's `actions/commit.rs`).

use crate::mvcc::{Lock, LockType, MvccError, MvccReader, MvccTxn, Write, WriteType};

use super::one_pc::commit_ts_floor;
use super::rollback::{committed_at, remove_stale_lock};

/// The commit record of `lock` at `commit_ts` (its short value moves into the record).
///
/// When a rollback record of another transaction sits at exactly `commit_ts` (that
/// transaction started at our commit_ts and was rolled back on this key), the commit record
/// replaces it and carries the rollback as `has_overlapped_rollback`, so that a late
/// prewrite of that transaction still finds it rolled back. TiKV keeps such timestamps in
/// the lock (`rollback_ts`); reading the write column family instead gives the same answer
/// because the region's latches serialize the actions on a key.
pub(crate) fn commit_record(
    reader: &MvccReader<'_>,
    key: &[u8],
    lock: &mut Lock,
    commit_ts: u64,
) -> Result<Write, MvccError> {
    let write_type = match lock.lock_type {
        LockType::Put => WriteType::Put,
        LockType::Delete => WriteType::Delete,
        LockType::Lock | LockType::Pessimistic => WriteType::Lock,
    };
    let mut write = Write::new(write_type, lock.start_ts, lock.short_value.take());
    if let Some(existing) = reader.write_at(key, commit_ts)?
        && (existing.write_type == WriteType::Rollback || existing.has_overlapped_rollback)
    {
        write.has_overlapped_rollback = true;
    }
    Ok(write)
}

/// Commits `key` of the transaction `txn.start_ts()` at `commit_ts`.
///
/// - Its own lock: `commit_ts` below the lock's floor (its `min_commit_ts`, and above its
///   `start_ts` and `for_update_ts`) gives [`MvccError::CommitTsExpired`]; a prewritten
///   lock becomes a commit record and is removed.
/// - Its own `Pessimistic` lock (left by a pessimistic rollback that never arrived): it is
///   removed without a record, as current TiKV does, instead of being committed as a `Lock`
///   record as older TiKV did; the key was never prewritten, so there is nothing to commit.
/// - Its own lock beside its own commit record (a stale lock, which the commit that wrote
///   the record had removed; see `committed_at` in `rollback.rs`): already committed, so
///   the lock is removed and the record kept, `Ok`, even below the lock's floor (a
///   `min_commit_ts` pushed on the stale lock would otherwise refuse the commit that
///   resolves it, for good).
/// - No own lock: its commit record means a retry, `Ok`; a rollback record or nothing
///   gives [`MvccError::TxnLockNotFound`].
///
/// # Errors
/// As above, and [`MvccError::Corrupt`] for damaged data.
pub fn commit(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    commit_ts: u64,
) -> Result<(), MvccError> {
    let start_ts = txn.start_ts();
    let mut lock = match reader.load_lock(key)? {
        Some(lock) if lock.start_ts == start_ts => lock,
        _ => {
            let record = reader.get_txn_commit_record(key, start_ts)?;
            return match record.info() {
                Some((_, write_type)) if write_type != WriteType::Rollback => Ok(()),
                _ => Err(MvccError::TxnLockNotFound {
                    start_ts,
                    commit_ts,
                    key: key.to_vec(),
                }),
            };
        }
    };
    let floor = commit_ts_floor(&lock);
    if commit_ts < floor {
        // Looked for only here, off the common path: with `commit_ts` at or above the
        // floor, a stale lock is settled below as a live one is (the record is written
        // again, the same, and the lock removed).
        if committed_at(reader, key, start_ts)?.is_some() {
            remove_stale_lock(txn, key);
            return Ok(());
        }
        return Err(MvccError::CommitTsExpired {
            start_ts,
            commit_ts,
            key: key.to_vec(),
            min_commit_ts: floor,
        });
    }
    if lock.is_pessimistic_lock() {
        txn.unlock_key(key, start_ts);
        return Ok(());
    }
    let write = commit_record(reader, key, &mut lock, commit_ts)?;
    txn.put_write(key, commit_ts, &write);
    txn.unlock_key(key, start_ts);
    Ok(())
}
