//! [`acquire_pessimistic_lock`]: a DML's lock on a key before prewrite (TiKV's
//! `actions/acquire_pessimistic_lock.rs`).

use serde::{Deserialize, Serialize};

use crate::mvcc::{Lock, LockInfo, LockType, MvccError, MvccReader, MvccTxn, WriteType};

/// One key of a pessimistic lock request of the transaction `txn.start_ts()`.
#[derive(Debug, Clone, Copy)]
pub struct PessimisticLockRequest<'k> {
    /// The key to lock.
    pub key: &'k [u8],
    /// The transaction's primary key.
    pub primary: &'k [u8],
    /// Fail with [`MvccError::AlreadyExist`] when the key has a visible value (an insert).
    pub should_not_exist: bool,
    /// The lock's TTL in milliseconds.
    pub lock_ttl: u64,
    /// The statement's `for_update_ts`: the snapshot of its current read.
    pub for_update_ts: u64,
    /// Return the value visible at `for_update_ts`.
    pub need_value: bool,
    /// Report whether the key has a visible value at `for_update_ts`.
    pub need_check_existence: bool,
    /// The lock's initial `min_commit_ts`.
    pub min_commit_ts: u64,
}

impl PessimisticLockRequest<'_> {
    /// The timestamp this lock reads the key at, when it reads it: with `should_not_exist`,
    /// `need_value` or `need_check_existence`, `for_update_ts` (else `None`).
    ///
    /// The caller raises the region's `max_ts` to it before running
    /// [`acquire_pessimistic_lock`], under the key's latches, as TiKV's action calls
    /// `update_max_ts(for_update_ts)`: what the lock reports (the value, the key's
    /// existence) is a read at `for_update_ts`, and a one-phase commit that chose its
    /// commit_ts below it afterwards would be missed by that read. The lock itself does not
    /// keep such a commit out when the lock is lost (a pipelined lock reported granted and
    /// then refused at apply): the prewrite's amend check passes for a commit below the
    /// transaction's `start_ts`, and the one-phase update would be lost.
    pub fn read_ts(&self) -> Option<u64> {
        (self.should_not_exist || self.need_value || self.need_check_existence)
            .then_some(self.for_update_ts)
    }
}

/// What a successful lock reports about the key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PessimisticLockOutcome {
    /// The value at `for_update_ts`, when `need_value` was asked (else `None`).
    pub value: Option<Vec<u8>>,
    /// Whether the key has a value at `for_update_ts`, when `need_value` or
    /// `need_check_existence` was asked (else `false`).
    pub exists: bool,
}

/// Locks `req.key` for the transaction `txn.start_ts()` with a `Pessimistic` lock offered
/// through [`MvccTxn::put_pessimistic_lock`] (the region keeps it in memory when it can).
///
/// The caller first raises the region's `max_ts` to [`PessimisticLockRequest::read_ts`]
/// when it is `Some` (TiKV does it at the top of this action, whatever the outcome).
///
/// Cases, as TiKV:
/// - another transaction's lock: [`MvccError::KeyIsLocked`] (the caller waits or resolves);
/// - this transaction's pessimistic lock: refreshed (`for_update_ts`, `ttl` and
///   `min_commit_ts` only grow), value read at `for_update_ts`;
/// - this transaction's prewritten lock: nothing to do, the key is already locked;
/// - a write record newer than `for_update_ts` (any type): [`MvccError::WriteConflict`];
/// - this transaction's rollback record at `start_ts`, or a protected or overlapped rollback
///   of it under a newer record: [`MvccError::PessimisticLockRolledBack`];
/// - `should_not_exist` and a visible value: [`MvccError::AlreadyExist`].
///
/// # Errors
/// As above, and [`MvccError::Corrupt`] for damaged data.
pub fn acquire_pessimistic_lock(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    req: &PessimisticLockRequest<'_>,
) -> Result<PessimisticLockOutcome, MvccError> {
    let start_ts = txn.start_ts();
    let key = req.key;
    let read = |reader: &MvccReader<'_>| -> Result<PessimisticLockOutcome, MvccError> {
        if !(req.need_value || req.need_check_existence) {
            return Ok(PessimisticLockOutcome::default());
        }
        let value = reader.get(key, req.for_update_ts)?;
        Ok(PessimisticLockOutcome {
            exists: value.is_some(),
            value: value.filter(|_| req.need_value),
        })
    };
    if let Some(mut lock) = reader.load_lock(key)? {
        if lock.start_ts != start_ts {
            return Err(MvccError::KeyIsLocked(Box::new(LockInfo::new(key, &lock))));
        }
        if lock.lock_type != LockType::Pessimistic {
            // Prewritten already (a retried lock request after prewrite): the key is ours.
            return read(reader);
        }
        // Refresh only forward: a stale retry must not lower the lock's for_update_ts.
        if req.for_update_ts > lock.for_update_ts
            || req.lock_ttl > lock.ttl
            || req.min_commit_ts > lock.min_commit_ts
        {
            lock.for_update_ts = lock.for_update_ts.max(req.for_update_ts);
            lock.ttl = lock.ttl.max(req.lock_ttl);
            lock.min_commit_ts = lock.min_commit_ts.max(req.min_commit_ts);
            txn.put_pessimistic_lock(key, lock);
        }
        return read(reader);
    }

    // Each case below needs a record after `for_update_ts` or at or after `start_ts`; the
    // engine's bound may rule them all out without a seek.
    let may_have_newer = reader.newest_write_bound(key) >= start_ts.min(req.for_update_ts);
    if may_have_newer && let Some((commit_ts, write)) = reader.seek_write(key, u64::MAX)? {
        if commit_ts > req.for_update_ts {
            return Err(MvccError::WriteConflict {
                start_ts,
                conflict_start_ts: write.start_ts,
                conflict_commit_ts: commit_ts,
                key: key.to_vec(),
                primary: req.primary.to_vec(),
            });
        }
        let rolled_back = |commit_ts: u64, write: &crate::Write| {
            commit_ts == start_ts
                && (write.write_type == WriteType::Rollback || write.has_overlapped_rollback)
        };
        if rolled_back(commit_ts, &write) {
            return Err(MvccError::PessimisticLockRolledBack {
                start_ts,
                key: key.to_vec(),
            });
        }
        // A newer record may hide this transaction's rollback; only a protected (or
        // overlapped) one is certain to survive, so only that one is looked for.
        if commit_ts > start_ts
            && let Some((older_ts, older)) = reader.seek_write(key, start_ts)?
            && rolled_back(older_ts, &older)
            && (older.protected || older.has_overlapped_rollback)
        {
            return Err(MvccError::PessimisticLockRolledBack {
                start_ts,
                key: key.to_vec(),
            });
        }
    }

    let outcome = if req.should_not_exist {
        let value = reader.get(key, req.for_update_ts)?;
        if value.is_some() {
            return Err(MvccError::AlreadyExist { key: key.to_vec() });
        }
        PessimisticLockOutcome::default()
    } else {
        read(reader)?
    };
    let mut lock = Lock::new(
        LockType::Pessimistic,
        req.primary.to_vec(),
        start_ts,
        req.lock_ttl,
        req.for_update_ts,
    );
    lock.min_commit_ts = req.min_commit_ts;
    txn.put_pessimistic_lock(key, lock);
    Ok(outcome)
}
