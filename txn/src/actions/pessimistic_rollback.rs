//! [`pessimistic_rollback`]: release a pessimistic lock a statement no longer needs (TiKV's
//! `PessimisticRollback` command).

use crate::mvcc::{MvccError, MvccReader, MvccTxn};

/// Removes the transaction's `Pessimistic` lock on `key` if its `for_update_ts` is at most
/// `for_update_ts` (a newer statement's lock is kept). Anything else (no lock, another
/// transaction's lock, a prewritten lock) is left alone: `Ok` without changes. No rollback
/// record is written: the transaction itself goes on.
///
/// # Errors
/// [`MvccError::Corrupt`] for a damaged lock.
pub fn pessimistic_rollback(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    for_update_ts: u64,
) -> Result<(), MvccError> {
    if let Some(lock) = reader.load_lock(key)?
        && lock.is_pessimistic_lock()
        && lock.start_ts == txn.start_ts()
        && lock.for_update_ts <= for_update_ts
    {
        txn.unlock_key(key, lock.start_ts);
    }
    Ok(())
}
