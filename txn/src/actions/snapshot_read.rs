//! Percolator snapshot reads: [`point_get`], [`batch_get`] and [`scan`] at a timestamp,
//! blocked only by locks that may commit below it.

use crate::mvcc::{Lock, LockInfo, LockType, MvccError, MvccReader};

/// Whether `lock` on `key` blocks a read at `ts` (TiKV's `Lock::check_ts_conflict`).
///
/// It does not when the lock started after `ts`, is a `Lock` or `Pessimistic` lock (they
/// never change the value), has `min_commit_ts > ts` (it will commit above the reader), is
/// listed in `bypass_locks` (the reader learned it is committed above `ts` or rolled back),
/// or when `ts` is `u64::MAX` and `key` is the lock's primary (an autocommit point get of
/// the latest version ignores the primary lock).
///
/// # Errors
/// [`MvccError::KeyIsLocked`] when the lock blocks the read.
pub fn check_ts_conflict(
    key: &[u8],
    lock: &Lock,
    ts: u64,
    bypass_locks: &[u64],
) -> Result<(), MvccError> {
    if lock.start_ts > ts
        || matches!(lock.lock_type, LockType::Lock | LockType::Pessimistic)
        || lock.min_commit_ts > ts
        || bypass_locks.contains(&lock.start_ts)
        || (ts == u64::MAX && key == lock.primary.as_slice())
    {
        return Ok(());
    }
    Err(MvccError::KeyIsLocked(Box::new(LockInfo::new(key, lock))))
}

/// The value of `key` visible at `ts`.
///
/// # Errors
/// [`MvccError::KeyIsLocked`] when a lock blocks the read ([`check_ts_conflict`]), and
/// [`MvccError::Corrupt`] for damaged data.
pub fn point_get(
    reader: &MvccReader<'_>,
    key: &[u8],
    ts: u64,
    bypass_locks: &[u64],
) -> Result<Option<Vec<u8>>, MvccError> {
    if let Some(lock) = reader.load_lock(key)? {
        check_ts_conflict(key, &lock, ts, bypass_locks)?;
    }
    reader.get(key, ts)
}

/// [`point_get`] of each key, in the order given.
///
/// # Errors
/// The first error of any key.
#[allow(clippy::type_complexity)] // (key, value) pairs: the plainest form for callers
pub fn batch_get(
    reader: &MvccReader<'_>,
    keys: &[Vec<u8>],
    ts: u64,
    bypass_locks: &[u64],
) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>, MvccError> {
    keys.iter()
        .map(|key| Ok((key.clone(), point_get(reader, key, ts, bypass_locks)?)))
        .collect()
}

/// The values visible at `ts` of keys in `[start, end)` (no end: to the last key), at most
/// `limit` (`0`: all), in key order. Deleted keys are left out.
///
/// A lock blocks the scan only if it lies in the part of the range the result covers: up
/// to the last key returned when `limit` cut the scan short.
///
/// # Errors
/// [`MvccError::KeyIsLocked`] for the first blocking lock in key order, and
/// [`MvccError::Corrupt`] for damaged data.
#[allow(clippy::type_complexity)] // (key, value) pairs: the plainest form for callers
pub fn scan(
    reader: &MvccReader<'_>,
    start: &[u8],
    end: Option<&[u8]>,
    limit: usize,
    ts: u64,
    bypass_locks: &[u64],
) -> Result<Vec<(Vec<u8>, Vec<u8>)>, MvccError> {
    let values = reader.scan_latest(start, end, limit, ts)?;
    // When cut short, the result covers [start, last key]; its exclusive end is the
    // smallest key above the last one.
    let covered_end = match values.last() {
        Some((last, _)) if limit > 0 && values.len() >= limit => {
            let mut after = last.clone();
            after.push(0);
            Some(after)
        }
        _ => end.map(<[u8]>::to_vec),
    };
    let locks = reader.scan_locks(start, covered_end.as_deref(), 0, |lock| {
        // The key-dependent exemption (the primary at ts MAX) is checked below.
        check_ts_conflict(&[], lock, ts, bypass_locks).is_err()
    })?;
    for (key, lock) in &locks {
        check_ts_conflict(key, lock, ts, bypass_locks)?;
    }
    Ok(values)
}
