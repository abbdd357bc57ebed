//! [`scan_lock`]: list the locks a resolver or GC must deal with (TiKV's `ScanLock`).

use crate::mvcc::{LockInfo, MvccError, MvccReader};

/// The locks with `start_ts <= max_ts` on keys in `[start, end)` (no end: to the last key),
/// at most `limit` (`0`: all), in key order, memory-table locks included and each key once.
///
/// # Errors
/// [`MvccError::Corrupt`] for damaged data.
pub fn scan_lock(
    reader: &MvccReader<'_>,
    max_ts: u64,
    start: &[u8],
    end: Option<&[u8]>,
    limit: usize,
) -> Result<Vec<LockInfo>, MvccError> {
    let locks = reader.scan_locks(start, end, limit, |lock| lock.start_ts <= max_ts)?;
    Ok(locks
        .iter()
        .map(|(key, lock)| LockInfo::new(key, lock))
        .collect())
}
