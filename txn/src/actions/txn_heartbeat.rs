//! [`txn_heartbeat`]: a long transaction extends its primary lock's TTL (TiKV's
//! `TxnHeartBeat`).

use crate::mvcc::{MvccError, MvccReader, MvccTxn};

/// Raises the TTL of the transaction's lock on `primary_key` to `advise_ttl` if that is
/// larger (never lowers it) and returns the TTL now in force. The update is a replicated
/// lock put, also for a lock kept in memory, so it survives a leader change.
///
/// # Errors
/// [`MvccError::TxnNotFound`] when the transaction holds no lock on the key, and
/// [`MvccError::Corrupt`] for a damaged lock.
pub fn txn_heartbeat(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    primary_key: &[u8],
    advise_ttl: u64,
) -> Result<u64, MvccError> {
    match reader.load_lock(primary_key)? {
        Some(mut lock) if lock.start_ts == txn.start_ts() => {
            if advise_ttl > lock.ttl {
                lock.ttl = advise_ttl;
                txn.put_lock(primary_key, &lock);
            }
            Ok(lock.ttl)
        }
        _ => Err(MvccError::TxnNotFound {
            start_ts: txn.start_ts(),
            key: primary_key.to_vec(),
        }),
    }
}
