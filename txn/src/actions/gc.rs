//! [`gc`] and [`gc_scan`]: MVCC garbage collection below a safe point (TiKV's `gc` of
//! `storage/mvcc/reader` and its GC worker's key scan).
//!
//! A safe point `sp` promises that no read at a timestamp below `sp` and no new lock of a
//! transaction started below `sp` will ever be served (the node refuses them), and that no
//! lock of a transaction started below `sp` is left undecided (the collector resolves them
//! first). Under that promise, a key's write records with `commit_ts <= sp` matter only for
//! what a read at `sp` sees: the newest `Put` among them. Everything else at or below `sp` is
//! garbage:
//!
//! - records older than that newest `Put`, and its long values in the default column family;
//! - a `Delete` that is the newest data record at or below `sp`, and everything older;
//! - every `Lock` and `Rollback` record at or below `sp` (they guard against a late
//!   prewrite of a transaction started below `sp`, which the node refuses anyway).
//!
//! Records above `sp` are never touched, so a read at any `ts >= sp` sees the same value
//! before and after (the property test in this file checks exactly that).

use serde::{Deserialize, Serialize};

use crate::mvcc::{MvccError, MvccReader, MvccTxn, Write, WriteType, WriteWalk};

/// What [`gc`] removed of one key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcStats {
    /// Write records removed.
    pub records: u64,
    /// Long values removed from the default column family.
    pub values: u64,
}

impl GcStats {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: GcStats) {
        self.records += other.records;
        self.values += other.values;
    }
}

/// Removes `key`'s garbage below `safe_point` (see the module docs) into `txn`, at most
/// `limit` records of it (`0`: no limit; any part of a key's garbage may go alone, newest
/// first here, so a key with more is finished by later calls); returns what it removed.
/// Deterministic in the snapshot; once a call without a limit applied, another removes
/// nothing.
///
/// # Errors
/// [`MvccError::Corrupt`] for a damaged key or record.
pub fn gc(
    txn: &mut MvccTxn,
    reader: &MvccReader<'_>,
    key: &[u8],
    safe_point: u64,
    limit: u64,
) -> Result<GcStats, MvccError> {
    let mut stats = GcStats::default();
    // Set once the newest data record at or below the safe point was passed: from there on
    // everything goes.
    let mut remove_all = false;
    reader.for_each_version(key, safe_point, |commit_ts, write| {
        // Only the newest data record stays, and only if it is a put.
        let keep = !remove_all && write.write_type == WriteType::Put;
        remove_all |= matches!(write.write_type, WriteType::Put | WriteType::Delete);
        if !keep {
            remove_record(txn, key, commit_ts, &write, &mut stats);
        }
        Ok(limit == 0 || stats.records < limit)
    })?;
    Ok(stats)
}

fn remove_record(txn: &mut MvccTxn, key: &[u8], commit_ts: u64, write: &Write, s: &mut GcStats) {
    txn.delete_write(key, commit_ts);
    s.records += 1;
    if write.write_type == WriteType::Put && write.short_value.is_none() {
        txn.delete_value(key, write.start_ts);
        s.values += 1;
    }
}

/// What [`gc_scan`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcScan {
    /// Keys with garbage below the safe point, in key order.
    pub keys: Vec<Vec<u8>>,
    /// Where to continue when a limit cut the scan short (`None`: the range is done).
    pub resume_key: Option<Vec<u8>>,
    /// Write records looked at.
    pub records_seen: u64,
}

/// The keys of `[start, end)` (no end: to the last key) that have garbage below
/// `safe_point`, at most `limit_keys` of them, looking at about `limit_records` write
/// records at most (both cut only between keys; `0`: no limit). A key qualifies when it
/// has two records at or below the safe point, or one that is not a `Put`; [`gc`] then
/// decides under the key's latches what goes.
///
/// # Errors
/// [`MvccError::Corrupt`] for a damaged key.
pub fn gc_scan(
    reader: &MvccReader<'_>,
    start: &[u8],
    end: Option<&[u8]>,
    safe_point: u64,
    limit_keys: usize,
    limit_records: u64,
) -> Result<GcScan, MvccError> {
    let mut out = GcScan {
        keys: Vec::new(),
        resume_key: None,
        records_seen: 0,
    };
    // Whether the current key had a record at or below the safe point already, and
    // whether it was taken.
    let mut seen_below = false;
    let mut taken = false;
    out.resume_key = reader.walk_writes(start, end, |step| match step {
        WriteWalk::NextKey => {
            seen_below = false;
            taken = false;
            Ok(!((limit_keys > 0 && out.keys.len() >= limit_keys)
                || (limit_records > 0 && out.records_seen >= limit_records)))
        }
        WriteWalk::Record {
            key,
            commit_ts,
            value,
        } => {
            out.records_seen += 1;
            if taken || commit_ts > safe_point {
                return Ok(true);
            }
            // Only the record type is needed: a Put is the one record that may stay.
            let is_put = Write::from_bytes(key, value)?.write_type == WriteType::Put;
            if seen_below || !is_put {
                out.keys.push(key.to_vec());
                taken = true;
            }
            seen_below = true;
            Ok(true)
        }
    })?;
    Ok(out)
}

#[cfg(test)]
#[path = "gc_test.rs"]
mod tests;
