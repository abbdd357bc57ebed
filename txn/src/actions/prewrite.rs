//! [`prewrite`]: the first phase of Percolator's two-phase commit (TiKV's
//! `actions/prewrite.rs`), with the amend path for lost pessimistic locks and the 1PC branch.

use serde::{Deserialize, Serialize};

use super::one_pc::write_one_pc;
use crate::mvcc::{
    Lock, LockInfo, LockNotFoundReason, LockType, Mutation, MvccError, MvccReader, MvccTxn,
    PessimisticAction, SHORT_VALUE_MAX_LEN, WriteType,
};

/// How the prewrite finishes the transaction.
///
/// More kinds may be added (async commit, say), so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommitKind {
    /// Leave locks; a later `commit` writes the records (two-phase commit).
    TwoPc,
    /// Write the commit records at `commit_ts` now, without locks (one-phase commit: every
    /// key of the transaction is in this one request).
    OnePc {
        /// The commit timestamp the region chose.
        commit_ts: u64,
    },
}

/// The properties of the transaction shared by all its mutations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnProps {
    /// The transaction's start timestamp (must equal `txn.start_ts()`).
    pub start_ts: u64,
    /// The primary key.
    pub primary: Vec<u8>,
    /// The locks' TTL in milliseconds.
    pub lock_ttl: u64,
    /// The pessimistic transaction's `for_update_ts`; 0 for an optimistic transaction.
    pub for_update_ts: u64,
    /// Number of keys the transaction writes.
    pub txn_size: u64,
    /// The smallest commit timestamp allowed (the lock's initial `min_commit_ts`).
    pub min_commit_ts: u64,
    /// Two-phase or one-phase.
    pub commit_kind: CommitKind,
}

impl TxnProps {
    fn is_pessimistic(&self) -> bool {
        self.for_update_ts != 0
    }
}

/// What prewrite found on the key.
enum Found {
    /// No lock (or a lost pessimistic lock, amended).
    Nothing,
    /// This transaction's pessimistic lock, which prewrite replaces.
    Pessimistic(Lock),
    /// This transaction's prewritten lock: a retried prewrite.
    Prewritten,
}

fn lock_type_of(mutation: &Mutation) -> Option<LockType> {
    match mutation {
        Mutation::Put { .. } => Some(LockType::Put),
        Mutation::Delete { .. } => Some(LockType::Delete),
        Mutation::Lock { .. } => Some(LockType::Lock),
        Mutation::CheckNotExists { .. } => None,
    }
}

/// Checks the lock found on the key (TiKV's `PrewriteMutation::check_lock`).
fn check_lock(
    props: &TxnProps,
    key: &[u8],
    lock: Lock,
    action: PessimisticAction,
    expected_for_update_ts: Option<u64>,
) -> Result<Found, MvccError> {
    if lock.start_ts != props.start_ts {
        // A pessimistic key locked by someone else: our lock was lost and taken over.
        if action == PessimisticAction::DoPessimisticCheck {
            return Err(MvccError::PessimisticLockNotFound {
                start_ts: props.start_ts,
                key: key.to_vec(),
                reason: LockNotFoundReason::LockTsMismatch,
            });
        }
        return Err(MvccError::KeyIsLocked(Box::new(LockInfo::new(key, &lock))));
    }
    if !lock.is_pessimistic_lock() {
        return Ok(Found::Prewritten);
    }
    if !props.is_pessimistic() {
        return Err(MvccError::LockTypeNotMatch {
            start_ts: props.start_ts,
            key: key.to_vec(),
            lock_type: lock.lock_type,
        });
    }
    if let Some(expected) = expected_for_update_ts
        && lock.for_update_ts != expected
    {
        return Err(MvccError::PessimisticLockNotFound {
            start_ts: props.start_ts,
            key: key.to_vec(),
            reason: LockNotFoundReason::LockForUpdateTsMismatch,
        });
    }
    Ok(Found::Pessimistic(lock))
}

/// A pessimistic key whose lock is gone (lost with a leader, or never written by a
/// pipelined lock): usable as if locked only when nothing was written since the
/// transaction started (TiKV's `amend_pessimistic_lock`).
///
/// The lock's invariant is `for_update_ts >= the key's latest commit_ts` and
/// `for_update_ts >= start_ts`. The lost lock's `for_update_ts` is unknown, but `start_ts`
/// is a lower bound of it: a newest record older than `start_ts` is older than the lock, so
/// the data did not change after the lock was taken. A record at or after `start_ts` (this
/// transaction's own rollback included) may have, so the amend fails.
fn amend_pessimistic_lock(
    reader: &MvccReader<'_>,
    props: &TxnProps,
    key: &[u8],
) -> Result<(), MvccError> {
    if reader.newest_write_bound(key) < props.start_ts {
        return Ok(());
    }
    match reader.seek_write(key, u64::MAX)? {
        Some((commit_ts, _)) if commit_ts >= props.start_ts => {
            Err(MvccError::PessimisticLockNotFound {
                start_ts: props.start_ts,
                key: key.to_vec(),
                reason: LockNotFoundReason::LockMissingAmendFail,
            })
        }
        _ => Ok(()),
    }
}

/// Looks for a write newer than the transaction may see (TiKV's `check_for_newer_version`):
/// an optimistic transaction conflicts with any record committed after its `start_ts`; a
/// pessimistic transaction's unlocked key with any non-rollback record after its
/// `for_update_ts`. Either conflicts with its own rollback at `start_ts`.
fn check_for_newer_version(
    reader: &MvccReader<'_>,
    props: &TxnProps,
    key: &[u8],
) -> Result<(), MvccError> {
    let conflict = |commit_ts: u64, conflict_start_ts: u64| MvccError::WriteConflict {
        start_ts: props.start_ts,
        conflict_start_ts,
        conflict_commit_ts: commit_ts,
        key: key.to_vec(),
        primary: props.primary.clone(),
    };
    // Every case below needs a record at or after `start_ts` or after `for_update_ts`
    // (normally `for_update_ts >= start_ts`; the minimum does not rely on it).
    let oldest_relevant = if props.is_pessimistic() {
        props.start_ts.min(props.for_update_ts)
    } else {
        props.start_ts
    };
    if reader.newest_write_bound(key) < oldest_relevant {
        return Ok(());
    }
    let mut seek_ts = u64::MAX;
    while let Some((commit_ts, write)) = reader.seek_write(key, seek_ts)? {
        if commit_ts == props.start_ts
            && (write.write_type == WriteType::Rollback || write.has_overlapped_rollback)
        {
            return Err(conflict(commit_ts, write.start_ts));
        }
        if !props.is_pessimistic() {
            if commit_ts > props.start_ts {
                return Err(conflict(commit_ts, write.start_ts));
            }
        } else if commit_ts > props.for_update_ts {
            // A newer rollback is no conflict: rollbacks are written even while a key is
            // locked, and only serve to stop a retried prewrite of the rolled-back txn.
            if write.write_type == WriteType::Rollback {
                seek_ts = commit_ts - 1;
                continue;
            }
            return Err(conflict(commit_ts, write.start_ts));
        }
        return Ok(());
    }
    Ok(())
}

/// Prewrites one mutation of the transaction `txn.start_ts()`: checks conflicts and puts a
/// `Put`/`Delete`/`Lock` lock (or, with [`CommitKind::OnePc`], the commit record directly).
///
/// - Another transaction's lock: [`MvccError::KeyIsLocked`]; on a pessimistic key
///   ([`PessimisticAction::DoPessimisticCheck`]) [`MvccError::PessimisticLockNotFound`]
///   with `LockTsMismatch`, since the transaction's own lock must have been lost.
/// - This transaction's prewritten lock: a retry, `Ok` without changes.
/// - This transaction's pessimistic lock: replaced (its `ttl` and `min_commit_ts` are kept
///   when larger); `expected_for_update_ts`, when given, must equal its `for_update_ts`.
/// - A pessimistic key without lock: amended when no record is at or after `start_ts`,
///   else `PessimisticLockNotFound` with `LockMissingAmendFail`.
/// - Keys not pessimistically locked are checked for newer writes
///   ([`MvccError::WriteConflict`]): records committed after `start_ts` (optimistic; as
///   TiKV, a record at exactly `start_ts` by another transaction is in the snapshot and no
///   conflict) or non-rollback records after `for_update_ts` (pessimistic).
/// - [`Mutation::CheckNotExists`] only checks ([`MvccError::AlreadyExist`]); it writes
///   nothing. That check is a read at `start_ts` that no lock protects afterwards: the
///   caller raises the region's `max_ts` to `start_ts` first, under the key's latches
///   (TiKV's prewrite calls `update_max_ts(start_ts)`),
///   so that a one-phase commit of the key chosen later lands above it and the checker's
///   snapshot keeps the key absent.
///
/// Values of at most [`SHORT_VALUE_MAX_LEN`] bytes sit in the lock; longer ones go to the
/// default column family at `(key, start_ts)`.
///
/// # Errors
/// As above, [`MvccError::CommitTsExpired`] for a 1PC `commit_ts` below the floor
/// [`commit_ts_floor`](crate::commit_ts_floor), and [`MvccError::Corrupt`] for damaged data.
pub fn prewrite(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    props: &TxnProps,
    mutation: &Mutation,
    action: PessimisticAction,
    expected_for_update_ts: Option<u64>,
) -> Result<(), MvccError> {
    let key = mutation.key();
    let pessimistic_key = props.is_pessimistic() && action == PessimisticAction::DoPessimisticCheck;
    let found = match reader.load_lock(key)? {
        Some(lock) => check_lock(props, key, lock, action, expected_for_update_ts)?,
        None if pessimistic_key => {
            amend_pessimistic_lock(reader, props, key)?;
            Found::Nothing
        }
        None => Found::Nothing,
    };
    let old = match found {
        Found::Prewritten => return Ok(()),
        Found::Pessimistic(lock) => Some(lock),
        Found::Nothing => None,
    };
    // A pessimistic lock (held or amended) already excludes newer writes up to its
    // for_update_ts; every other key is checked here.
    if !pessimistic_key {
        check_for_newer_version(reader, props, key)?;
    }
    let Some(lock_type) = lock_type_of(mutation) else {
        // CheckNotExists: a constraint check only. A pessimistic key was checked when it
        // was locked.
        if !pessimistic_key && reader.get(key, u64::MAX)?.is_some() {
            return Err(MvccError::AlreadyExist { key: key.to_vec() });
        }
        return Ok(());
    };

    let mut lock = Lock::new(
        lock_type,
        props.primary.clone(),
        props.start_ts,
        props.lock_ttl,
        props.for_update_ts,
    );
    lock.txn_size = props.txn_size;
    lock.min_commit_ts = props.min_commit_ts;
    if let Some(old) = &old {
        // A check_txn_status or heartbeat may have pushed these on the pessimistic lock.
        lock.ttl = lock.ttl.max(old.ttl);
        lock.min_commit_ts = lock.min_commit_ts.max(old.min_commit_ts);
    }
    let long_value = match mutation {
        Mutation::Put { value, .. } if value.len() <= SHORT_VALUE_MAX_LEN => {
            lock.short_value = Some(value.clone());
            None
        }
        Mutation::Put { value, .. } => Some(value.as_slice()),
        _ => None,
    };
    if let Some(value) = long_value {
        txn.put_value(key, props.start_ts, value);
    }
    match props.commit_kind {
        CommitKind::TwoPc => txn.put_lock(key, &lock),
        CommitKind::OnePc { commit_ts } => {
            write_one_pc(txn, reader, key, lock, old.is_some(), commit_ts)?;
        }
    }
    Ok(())
}
