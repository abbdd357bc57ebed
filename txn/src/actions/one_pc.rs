//! One-phase commit: the part of prewrite's [`CommitKind::OnePc`](crate::CommitKind) branch
//! that turns a would-be lock into its commit record.
//!
//! # Why 1PC is safe
//! A transaction whose keys all lie in one region is prewritten and committed by one
//! replicated batch, so there is no window in which a reader sees half of it. Two
//! conditions keep snapshot isolation:
//! - the `commit_ts` is above every timestamp a reader of these keys has already read at
//!   (the region picks it above its max read ts), so no reader that already ran would have
//!   had to see the write; this module only checks it against the transaction's own floor
//!   ([`commit_ts_floor`]), which readers may have pushed through `check_txn_status`;
//! - the keys are guarded (latched) from the read of the max ts until the batch is applied,
//!   so no reader slips in between; that is the region layer's part.

use super::commit::commit_record;
use crate::mvcc::{Lock, MvccError, MvccReader, MvccTxn};

/// The smallest `commit_ts` a lock allows: above its start and its `for_update_ts`, and at
/// least its `min_commit_ts`.
pub fn commit_ts_floor(lock: &Lock) -> u64 {
    lock.min_commit_ts
        .max(lock.start_ts.saturating_add(1))
        .max(lock.for_update_ts.saturating_add(1))
}

/// Writes `lock` as a commit record at `commit_ts` instead of a lock, and removes the
/// transaction's pessimistic lock on the key when it had one.
pub(crate) fn write_one_pc(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    mut lock: Lock,
    had_lock: bool,
    commit_ts: u64,
) -> Result<(), MvccError> {
    let floor = commit_ts_floor(&lock);
    if commit_ts < floor {
        return Err(MvccError::CommitTsExpired {
            start_ts: lock.start_ts,
            commit_ts,
            key: key.to_vec(),
            min_commit_ts: floor,
        });
    }
    let write = commit_record(reader, key, &mut lock, commit_ts)?;
    txn.put_write(key, commit_ts, &write);
    if had_lock {
        txn.unlock_key(key, lock.start_ts);
    }
    Ok(())
}
