//! [`check_txn_status`]: a reader or resolver asks a transaction's primary key what became of
//! the transaction (TiKV's `actions/check_txn_status.rs`).

use serde::{Deserialize, Serialize};

use super::rollback::{
    MissingLock, committed_at, remove_stale_lock, rollback_lock, rollback_missing_lock,
};
use crate::mvcc::{Lock, LockInfo, MvccError, MvccReader, MvccTxn};

/// The state of a transaction as its primary key tells it.
///
/// More outcomes may be added (TiKV has grown this set), so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnStatus {
    /// Still running: the primary lock (after any push of its `min_commit_ts`).
    Uncommitted {
        /// The primary lock.
        lock: Lock,
        /// Whether `min_commit_ts` is now above the caller's `start_ts`, so the caller may
        /// read past this transaction's locks.
        min_commit_ts_pushed: bool,
    },
    /// Committed.
    Committed {
        /// The commit timestamp.
        commit_ts: u64,
    },
    /// Rolled back earlier.
    RolledBack,
    /// The primary lock had expired and was rolled back now.
    TtlExpire,
    /// No lock and no record: a protected rollback record was written now.
    LockNotExistRollback,
    /// No lock and no record while resolving a pessimistic lock: nothing was written.
    LockNotExistDoNothing,
    /// The expired primary was a pessimistic lock and the caller resolves a pessimistic
    /// lock: the primary lock was removed without a rollback record.
    PessimisticRollBack,
}

/// Checks the transaction `txn.start_ts()` on its `primary_key`.
///
/// - Its lock beside its own commit record on the key (a stale lock, which the commit
///   that wrote the record had removed; see `committed_at` in `rollback.rs`): the lock is
///   removed, the record kept, [`TxnStatus::Committed`], whatever the lock's type, TTL or
///   primary (a commit record of the transaction on any key means it committed). TiKV
///   panics on such a lock when it rolls back an expired one; answering
///   [`MvccError::Committed`] there, as SurgeDB did, left the readers it blocked retrying
///   for good.
/// - Its lock, naming another key as the primary: [`MvccError::PrimaryMismatch`] with the
///   lock, and nothing changed (the caller asks the real primary).
/// - Its lock, expired at `current_ts`: rolled back with a protected record
///   ([`TxnStatus::TtlExpire`]); but when both the lock and the lock being resolved are
///   pessimistic (`resolving_pessimistic_lock`), only removed
///   ([`TxnStatus::PessimisticRollBack`]).
/// - Its lock, alive: when `caller_start_ts >= min_commit_ts`, the lock's `min_commit_ts`
///   is pushed to `max(caller_start_ts + 1, current_ts)` by a replicated lock put, so the
///   caller can read without waiting and the transaction cannot commit below its snapshot.
///   `caller_start_ts` 0 (no reader) and `u64::MAX` (an autocommit point get, which may
///   just ignore the lock) push nothing.
/// - No lock: its commit or rollback record; with neither, a protected rollback is written
///   when `rollback_if_not_exist` ([`TxnStatus::LockNotExistRollback`]), nothing when
///   `resolving_pessimistic_lock` ([`TxnStatus::LockNotExistDoNothing`]), else
///   [`MvccError::TxnNotFound`].
///
/// Unlike TiKV, a `min_commit_ts` of 0 is pushed too: TiKV skips it only to stay compatible
/// with old TiDB versions during rolling upgrades.
///
/// TiKV checks the primary only when the request asks (`verify_is_primary`); here it is
/// always checked. TiKV also answers one mismatch differently: resolving a prewrite lock
/// (`resolving_pessimistic_lock` false), it takes a pessimistic lock naming another primary
/// for a stale one left by a primary that changed
/// (<https://github.com/pingcap/tidb/issues/42937>), removes it and decides as if the key held
/// no lock, rolling the key back when asked to. That is safe only when the caller's lock is a
/// real prewrite lock naming this key, so that the transaction can only commit through it. A
/// request does not say so, and SurgeDB's readers also resolve what is no prewrite lock: a
/// one-phase commit's guard reports its in-flight commit as a `Put` lock. That report now
/// names the commit's primary and TTL; it named the guarded key itself, already expired
/// (ttl 0), when this check came in, and with TiKV's rule such a reader would have removed a
/// live transaction's pessimistic lock on a secondary and written a rollback record there
/// while its primary could still commit. So SurgeDB refuses in that case too, changing
/// nothing, and the caller asks the primary the key's lock names. The price is liveness in one rare case: a pessimistic
/// transaction whose commit primary is not the first key it locked (its locks name that one;
/// the commit takes another when the statement that locked it failed before buffering its
/// write). A reader of one of its secondaries then backs off until the primary is prewritten
/// (or its pessimistic lock is resolved through the key it names), where TiKV would roll the
/// transaction back.
///
/// # Errors
/// As above, and [`MvccError::Corrupt`] for damaged data.
#[allow(clippy::too_many_arguments)] // TiKV's request fields, one each
pub fn check_txn_status(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    primary_key: &[u8],
    caller_start_ts: u64,
    current_ts: u64,
    rollback_if_not_exist: bool,
    resolving_pessimistic_lock: bool,
) -> Result<TxnStatus, MvccError> {
    let start_ts = txn.start_ts();
    let lock = reader.load_lock(primary_key)?;
    if lock.as_ref().is_some_and(|l| l.start_ts == start_ts)
        && let Some(commit_ts) = committed_at(reader, primary_key, start_ts)?
    {
        remove_stale_lock(txn, primary_key);
        return Ok(TxnStatus::Committed { commit_ts });
    }
    match lock {
        // A caller whose lock names this key as primary when the transaction's lock here
        // names another (a one-phase guard's report did, naming the key itself) takes a
        // secondary for the primary: deciding here would push or roll back a secondary alone,
        // and the primary could then commit below the reader while the secondary's commit
        // fails (TiKV's `verify_is_primary`).
        Some(lock) if lock.start_ts == start_ts && lock.primary != primary_key => {
            Err(MvccError::PrimaryMismatch {
                key: primary_key.to_vec(),
                lock: Box::new(LockInfo::new(primary_key, &lock)),
            })
        }
        Some(lock) if lock.start_ts == start_ts => lock_exists(
            txn,
            reader,
            primary_key,
            lock,
            caller_start_ts,
            current_ts,
            resolving_pessimistic_lock,
        ),
        _ => {
            let write = rollback_if_not_exist && !resolving_pessimistic_lock;
            match rollback_missing_lock(txn, reader, primary_key, true, write)? {
                MissingLock::Committed { commit_ts } => Ok(TxnStatus::Committed { commit_ts }),
                MissingLock::RolledBack => Ok(TxnStatus::RolledBack),
                MissingLock::NotFound if !rollback_if_not_exist => Err(MvccError::TxnNotFound {
                    start_ts,
                    key: primary_key.to_vec(),
                }),
                MissingLock::NotFound if resolving_pessimistic_lock => {
                    Ok(TxnStatus::LockNotExistDoNothing)
                }
                MissingLock::NotFound => Ok(TxnStatus::LockNotExistRollback),
            }
        }
    }
}

fn lock_exists(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    primary_key: &[u8],
    mut lock: Lock,
    caller_start_ts: u64,
    current_ts: u64,
    resolving_pessimistic_lock: bool,
) -> Result<TxnStatus, MvccError> {
    if lock.is_expired(current_ts) {
        if resolving_pessimistic_lock && lock.is_pessimistic_lock() {
            txn.unlock_key(primary_key, lock.start_ts);
            return Ok(TxnStatus::PessimisticRollBack);
        }
        rollback_lock(txn, reader, primary_key, &lock, true)?;
        return Ok(TxnStatus::TtlExpire);
    }
    if caller_start_ts != 0 && caller_start_ts != u64::MAX && caller_start_ts >= lock.min_commit_ts
    {
        lock.min_commit_ts = caller_start_ts.saturating_add(1).max(current_ts);
        // Replicated, even for a lock kept in memory: if the push were lost with the
        // leader, the transaction could commit below the snapshot of a reader that skipped
        // its locks.
        txn.put_lock(primary_key, &lock);
    }
    let min_commit_ts_pushed = (caller_start_ts != 0 && lock.min_commit_ts > caller_start_ts)
        || caller_start_ts == u64::MAX;
    Ok(TxnStatus::Uncommitted {
        lock,
        min_commit_ts_pushed,
    })
}
