//! [`Write`]: the value of the write column family (a commit or rollback record).

use serde::{Deserialize, Serialize};

/// What a write record stands for (TiKV's `WriteType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WriteType {
    /// A committed put.
    Put,
    /// A committed delete.
    Delete,
    /// A committed read lock: no data change, but it counts for conflict checks.
    Lock,
    /// A rollback record, keyed by the rolled-back transaction's `start_ts`.
    Rollback,
}

/// A record in the write column family, keyed by `(key, commit_ts)` (for a rollback:
/// `(key, start_ts)`).
///
/// # Invariants
/// - A `Rollback` record's key timestamp equals its `start_ts`.
/// - `short_value` is set only for `Put` records whose value is at most
///   [`crate::SHORT_VALUE_MAX_LEN`] bytes; other puts keep the value in the default column
///   family at `(key, start_ts)`.
/// - A `protected` rollback is never removed by a later commit that lands on the same key
///   timestamp (TiKV's protected rollback: it guards the primary key against a late prewrite).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Write {
    /// The kind of record.
    pub write_type: WriteType,
    /// The start timestamp of the transaction that wrote it.
    pub start_ts: u64,
    /// The value of a short put.
    pub short_value: Option<Vec<u8>>,
    /// For a rollback: whether it is protected (kept even when collapsing rollbacks).
    pub protected: bool,
    /// Set when a rollback of another transaction happened at this record's commit_ts
    /// (TiKV's `has_overlapped_rollback`): the rollback is then represented by this flag.
    pub has_overlapped_rollback: bool,
}

impl Write {
    /// A record of `write_type` for the transaction started at `start_ts`.
    pub fn new(write_type: WriteType, start_ts: u64, short_value: Option<Vec<u8>>) -> Write {
        Write {
            write_type,
            start_ts,
            short_value,
            protected: false,
            has_overlapped_rollback: false,
        }
    }

    /// A rollback record for `start_ts`.
    pub fn rollback(start_ts: u64, protected: bool) -> Write {
        Write {
            write_type: WriteType::Rollback,
            start_ts,
            short_value: None,
            protected,
            has_overlapped_rollback: false,
        }
    }

    /// Encodes the record for the write column family.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// Decodes a record written by [`Write::to_bytes`].
    ///
    /// # Errors
    /// [`crate::MvccError::Corrupt`] naming the key when the bytes are not a write record.
    pub fn from_bytes(key: &[u8], bytes: &[u8]) -> Result<Write, crate::MvccError> {
        postcard::from_bytes(bytes).map_err(|e| crate::MvccError::Corrupt {
            what: "write record",
            key: key.to_vec(),
            detail: e.to_string(),
        })
    }
}
