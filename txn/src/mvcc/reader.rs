//! [`MvccReader`]: finds locks (memory table first), write records and visible values in one
//! snapshot of a region.

use surge_lock_table::{KeyRange, RegionLockTable};

use super::error::MvccError;
use super::lock::Lock;
use super::write::{Write, WriteType};
use crate::engine::{Cf, Snapshot, decode_key, encode_key, encode_key_with_ts, split_ts};

/// What the write column family says about one transaction on one key (TiKV's
/// `TxnCommitRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnCommitRecord {
    /// The transaction's own record: a commit at `commit_ts`, or a rollback (then
    /// `commit_ts` is the start_ts).
    SingleRecord {
        /// The record's timestamp.
        commit_ts: u64,
        /// The record.
        write: Write,
    },
    /// Another transaction committed at exactly this transaction's start_ts and carries its
    /// rollback as `has_overlapped_rollback`.
    OverlappedRollback {
        /// The overlapping record's commit_ts (equal to the start_ts asked about).
        commit_ts: u64,
    },
    /// Nothing about the transaction.
    None {
        /// Another transaction's record at exactly the start_ts asked about, without the
        /// overlapped-rollback flag: a rollback must then set the flag on this record
        /// rather than write its own (which would replace the commit).
        overlapped_write: Option<Write>,
    },
}

impl TxnCommitRecord {
    /// The record's timestamp and type when the transaction has its own record.
    pub fn info(&self) -> Option<(u64, WriteType)> {
        match self {
            TxnCommitRecord::SingleRecord { commit_ts, write } => {
                Some((*commit_ts, write.write_type))
            }
            _ => None,
        }
    }

    /// Whether the transaction is known to be rolled back on this key.
    pub fn is_rolled_back(&self) -> bool {
        match self {
            TxnCommitRecord::SingleRecord { write, .. } => write.write_type == WriteType::Rollback,
            TxnCommitRecord::OverlappedRollback { .. } => true,
            TxnCommitRecord::None { .. } => false,
        }
    }
}

/// Reads the MVCC state of a region through one [`Snapshot`] and, on a leader, its
/// in-memory pessimistic lock table (TiKV's `MvccReader`).
///
/// Keys given to and returned by the reader are user keys; it encodes them for the engine.
///
/// # Invariants
/// - A lock in the memory table shadows the lock column family's entry for the same key,
///   and is visible even when marked deleted: the write that deletes it is not applied yet.
/// - Limits of `0` mean "no limit" (as in TiKV's scans).
#[derive(Clone, Copy)]
pub struct MvccReader<'a> {
    snap: &'a dyn Snapshot,
    mem_locks: Option<&'a RegionLockTable<Lock>>,
}

impl std::fmt::Debug for MvccReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MvccReader")
            .field("applied_index", &self.snap.applied_index())
            .field("mem_locks", &self.mem_locks)
            .finish()
    }
}

/// The smallest engine key above every key that starts with `encoded` (an encoded user key,
/// whose last byte is a marker below `0xFF`).
fn prefix_end(encoded: &[u8]) -> Vec<u8> {
    let mut end = encoded.to_vec();
    if let Some(last) = end.last_mut() {
        *last = last.saturating_add(1);
    }
    end
}

fn corrupt_key(cf: Cf, key: &[u8], detail: String) -> MvccError {
    MvccError::Corrupt {
        what: match cf {
            Cf::Lock => "lock cf key",
            Cf::Write => "write cf key",
            Cf::Default => "default cf key",
        },
        key: key.to_vec(),
        detail,
    }
}

fn decode_user_key(cf: Cf, encoded: &[u8]) -> Result<Vec<u8>, MvccError> {
    match decode_key(encoded) {
        Ok((key, used)) if used == encoded.len() => Ok(key),
        Ok(_) => Err(corrupt_key(
            cf,
            encoded,
            "trailing bytes after the key".to_string(),
        )),
        Err(e) => Err(corrupt_key(cf, encoded, e.to_string())),
    }
}

/// One step of [`MvccReader::walk_writes`].
pub(crate) enum WriteWalk<'a> {
    /// The walk reaches a new user key: `Ok(false)` stops it before the key's records, and
    /// the walk returns the key.
    NextKey,
    /// A write record of the current key.
    Record {
        /// The user key.
        key: &'a [u8],
        /// The record's timestamp.
        commit_ts: u64,
        /// The encoded record.
        value: &'a [u8],
    },
}

/// [`Snapshot::scan`] with a visitor that may fail: the scan stops at the first error,
/// which is returned.
fn try_scan(
    snap: &dyn Snapshot,
    cf: Cf,
    start: &[u8],
    end: Option<&[u8]>,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<bool, MvccError>,
) -> Result<(), MvccError> {
    let mut result = Ok(());
    snap.scan(cf, start, end, &mut |key, value| match visit(key, value) {
        Ok(more) => more,
        Err(e) => {
            result = Err(e);
            false
        }
    });
    result
}

impl<'a> MvccReader<'a> {
    /// A reader of `snap`, looking in `mem_locks` first for locks (pass `None` on a follower
    /// or when the region keeps no locks in memory).
    pub fn new(
        snap: &'a dyn Snapshot,
        mem_locks: Option<&'a RegionLockTable<Lock>>,
    ) -> MvccReader<'a> {
        MvccReader { snap, mem_locks }
    }

    /// The snapshot read.
    pub fn snapshot(&self) -> &'a dyn Snapshot {
        self.snap
    }

    /// The lock on `key`: the memory table's (deleted-marked or not), else the lock column
    /// family's.
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when the stored lock cannot be decoded.
    pub fn load_lock(&self, key: &[u8]) -> Result<Option<Lock>, MvccError> {
        if let Some(entry) = self.mem_locks.and_then(|table| table.get(key)) {
            return Ok(Some(entry.lock().clone()));
        }
        match self.snap.get(Cf::Lock, &encode_key(key)) {
            Some(bytes) => Lock::from_bytes(key, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Visits `key`'s write records with `commit_ts <= ts`, newest first, until `visit`
    /// returns `Ok(false)`.
    pub(crate) fn for_each_version(
        &self,
        key: &[u8],
        ts: u64,
        mut visit: impl FnMut(u64, Write) -> Result<bool, MvccError>,
    ) -> Result<(), MvccError> {
        let encoded = encode_key(key);
        let end = prefix_end(&encoded);
        let start = encode_key_with_ts(key, ts);
        try_scan(
            self.snap,
            Cf::Write,
            &start,
            Some(&end),
            |engine_key, value| {
                let (_, commit_ts) = split_ts(engine_key)
                    .map_err(|e| corrupt_key(Cf::Write, engine_key, e.to_string()))?;
                visit(commit_ts, Write::from_bytes(key, value)?)
            },
        )
    }

    /// The newest write record of `key` with `commit_ts <= ts`, of any type.
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when a stored key or record cannot be decoded.
    pub fn seek_write(&self, key: &[u8], ts: u64) -> Result<Option<(u64, Write)>, MvccError> {
        let mut found = None;
        self.for_each_version(key, ts, |commit_ts, write| {
            found = Some((commit_ts, write));
            Ok(false)
        })?;
        Ok(found)
    }

    /// An upper bound of the commit timestamp of `key`'s newest write record, from the
    /// engine's memory without a seek (`u64::MAX` when the engine keeps none): when it is
    /// below `ts`, the key has no record at or after `ts`.
    pub fn newest_write_bound(&self, key: &[u8]) -> u64 {
        self.snap.newest_write_bound(&encode_key(key))
    }

    /// The write record of `key` at exactly `commit_ts`, if any: one point lookup, where
    /// [`MvccReader::seek_write`] opens a scan (a commit asks this of every key it commits,
    /// so a large transaction's commit pays it hundreds of thousands of times).
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when the stored record cannot be decoded.
    pub fn write_at(&self, key: &[u8], commit_ts: u64) -> Result<Option<Write>, MvccError> {
        match self
            .snap
            .get(Cf::Write, &encode_key_with_ts(key, commit_ts))
        {
            Some(bytes) => Write::from_bytes(key, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// What the write column family says about the transaction started at `start_ts` on
    /// `key`: its own commit or rollback record, another transaction's record that overlaps
    /// it (committed at exactly `start_ts`), or nothing.
    ///
    /// Only records with `commit_ts >= start_ts` are looked at: a transaction's records are
    /// never older than its start.
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when a stored key or record cannot be decoded.
    pub fn get_txn_commit_record(
        &self,
        key: &[u8],
        start_ts: u64,
    ) -> Result<TxnCommitRecord, MvccError> {
        let mut record = TxnCommitRecord::None {
            overlapped_write: None,
        };
        self.for_each_version(key, u64::MAX, |commit_ts, write| {
            if commit_ts < start_ts {
                return Ok(false);
            }
            if write.start_ts == start_ts {
                record = TxnCommitRecord::SingleRecord { commit_ts, write };
                return Ok(false);
            }
            if commit_ts == start_ts {
                record = if write.has_overlapped_rollback {
                    TxnCommitRecord::OverlappedRollback { commit_ts }
                } else {
                    TxnCommitRecord::None {
                        overlapped_write: Some(write),
                    }
                };
                return Ok(false);
            }
            Ok(true)
        })?;
        Ok(record)
    }

    /// The value of a committed `Put` record of `key`: inline, or from the default column
    /// family at `(key, write.start_ts)`.
    pub(crate) fn put_value(&self, key: &[u8], write: Write) -> Result<Vec<u8>, MvccError> {
        if let Some(value) = write.short_value {
            return Ok(value);
        }
        self.snap
            .get(Cf::Default, &encode_key_with_ts(key, write.start_ts))
            .ok_or_else(|| MvccError::Corrupt {
                what: "default cf value",
                key: key.to_vec(),
                detail: format!("missing value of the put started at {}", write.start_ts),
            })
    }

    /// The committed value of `key` visible at `ts`, ignoring locks: the newest `Put` or
    /// `Delete` record with `commit_ts <= ts` (`Lock` and `Rollback` records are skipped).
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when a stored key, record or long value is damaged or missing.
    pub fn get(&self, key: &[u8], ts: u64) -> Result<Option<Vec<u8>>, MvccError> {
        let mut found = None;
        self.for_each_version(key, ts, |_, write| match write.write_type {
            WriteType::Put | WriteType::Delete => {
                found = Some(write);
                Ok(false)
            }
            WriteType::Lock | WriteType::Rollback => Ok(true),
        })?;
        match found {
            Some(write) if write.write_type == WriteType::Put => {
                self.put_value(key, write).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Locks of user keys in `[start, end)` (no end: to the last key) for which `filter`
    /// holds, at most `limit` of them (`0`: all), in key order. Memory-table and lock-CF
    /// locks are merged; a key in both is reported once, with the memory table's lock (as
    /// TiKV does since tikv#16818: duplicates there made a pessimistic rollback write the
    /// same lock-CF key twice).
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when a stored key or lock cannot be decoded.
    pub fn scan_locks(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        filter: impl Fn(&Lock) -> bool,
    ) -> Result<Vec<(Vec<u8>, Lock)>, MvccError> {
        let mut out: Vec<(Vec<u8>, Lock)> = Vec::new();
        let full = |out: &Vec<(Vec<u8>, Lock)>| limit > 0 && out.len() >= limit;
        if end.is_some_and(|end| end <= start) {
            return Ok(out);
        }
        let range = match end {
            Some(end) => KeyRange::new(start, end),
            None => KeyRange::from_start(start),
        };
        let mem = self
            .mem_locks
            .map(|table| table.scan(&range, 0).entries)
            .unwrap_or_default();
        let mut mem = mem.into_iter().peekable();
        // Emits the memory locks with keys below `bound` (all of them when `None`), and says
        // whether the next one is exactly `bound`, which then shadows the lock CF's lock.
        let mut drain_mem = |out: &mut Vec<(Vec<u8>, Lock)>, bound: Option<&[u8]>| {
            while let Some((key, entry)) = mem.next_if(|(key, _)| bound.is_none_or(|b| *key <= b)) {
                if full(out) {
                    return true;
                }
                if filter(entry.lock()) {
                    out.push((key.to_vec(), entry.lock().clone()));
                }
                if bound == Some(key) {
                    return true;
                }
            }
            false
        };
        let encoded_end = end.map(encode_key);
        try_scan(
            self.snap,
            Cf::Lock,
            &encode_key(start),
            encoded_end.as_deref(),
            |engine_key, value| {
                let key = decode_user_key(Cf::Lock, engine_key)?;
                let lock = Lock::from_bytes(&key, value)?;
                let shadowed = drain_mem(&mut out, Some(&key));
                if !shadowed && !full(&out) && filter(&lock) {
                    out.push((key, lock));
                }
                Ok(!full(&out))
            },
        )?;
        drain_mem(&mut out, None);
        Ok(out)
    }

    /// Visits the write records of the user keys in `[start, end)` (no end: to the last
    /// key) in key order, a key's newest first, telling `visit` of each new key before its
    /// records; `Ok(false)` from `visit` stops the walk. Returns the key the walk stopped
    /// before, when `visit` refused a [`WriteWalk::NextKey`].
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] for a damaged key; `visit`'s errors.
    pub(crate) fn walk_writes(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        mut visit: impl FnMut(WriteWalk<'_>) -> Result<bool, MvccError>,
    ) -> Result<Option<Vec<u8>>, MvccError> {
        if end.is_some_and(|end| end <= start) {
            return Ok(None);
        }
        let encoded_end = end.map(encode_key);
        // The encoded key being visited and its decoded form.
        let mut current: Vec<u8> = Vec::new();
        let mut current_key: Vec<u8> = Vec::new();
        let mut stopped_before = None;
        try_scan(
            self.snap,
            Cf::Write,
            &encode_key(start),
            encoded_end.as_deref(),
            |engine_key, value| {
                let (encoded, commit_ts) = split_ts(engine_key)
                    .map_err(|e| corrupt_key(Cf::Write, engine_key, e.to_string()))?;
                if encoded != current.as_slice() {
                    let key = decode_user_key(Cf::Write, encoded)?;
                    if !visit(WriteWalk::NextKey)? {
                        stopped_before = Some(key);
                        return Ok(false);
                    }
                    current = encoded.to_vec();
                    current_key = key;
                }
                visit(WriteWalk::Record {
                    key: &current_key,
                    commit_ts,
                    value,
                })
            },
        )?;
        Ok(stopped_before)
    }

    /// The values visible at `ts` of user keys in `[start, end)` (no end: to the last key),
    /// at most `limit` of them (`0`: all), in key order, ignoring locks. Deleted keys are
    /// left out.
    ///
    /// # Errors
    /// [`MvccError::Corrupt`] when a stored key, record or long value is damaged or missing.
    #[allow(clippy::type_complexity)] // (key, value) pairs: the plainest form for callers
    pub fn scan_latest(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        ts: u64,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, MvccError> {
        let mut out = Vec::new();
        // Whether the current key's visible version was already found.
        let mut settled = false;
        self.walk_writes(start, end, |step| match step {
            WriteWalk::NextKey => {
                settled = false;
                Ok(true)
            }
            WriteWalk::Record {
                key,
                commit_ts,
                value,
            } => {
                if settled || commit_ts > ts {
                    return Ok(true);
                }
                let write = Write::from_bytes(key, value)?;
                match write.write_type {
                    WriteType::Lock | WriteType::Rollback => return Ok(true),
                    WriteType::Delete => {}
                    WriteType::Put => {
                        let value = self.put_value(key, write)?;
                        out.push((key.to_vec(), value));
                    }
                }
                settled = true;
                Ok(!(limit > 0 && out.len() >= limit))
            }
        })?;
        Ok(out)
    }
}
