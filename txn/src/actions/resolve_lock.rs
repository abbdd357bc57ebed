//! [`resolve_lock`]: finish a secondary lock once the primary decided (TiKV's
//! `ResolveLock` command, per key).

use super::{commit, rollback};
use crate::mvcc::{MvccError, MvccReader, MvccTxn};

/// Commits `key` of the transaction `txn.start_ts()` at `commit_ts`, or rolls it back
/// (unprotected) when `commit_ts` is 0: the primary's fate, found by `check_txn_status`,
/// applied to a secondary.
///
/// # Errors
/// Those of [`commit`] or [`rollback`](crate::rollback).
pub fn resolve_lock(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    commit_ts: u64,
) -> Result<(), MvccError> {
    if commit_ts == 0 {
        rollback(txn, reader, key, false)
    } else {
        commit(txn, reader, key, commit_ts)
    }
}
