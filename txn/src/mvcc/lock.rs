//! [`Lock`]: the value of the lock column family (and of an in-memory pessimistic lock).

use serde::{Deserialize, Serialize};
use surge_lock_table::LockValue;

/// What a lock stands for (TiKV's `LockType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockType {
    /// A prewritten put: the value is in the default column family or inline.
    Put,
    /// A prewritten delete.
    Delete,
    /// A prewritten read lock (`SELECT ... FOR UPDATE` without a write): commits as a
    /// `WriteType::Lock` record.
    Lock,
    /// A pessimistic lock taken by a DML before prewrite; never committed as such.
    Pessimistic,
}

/// A lock on one key, held by the transaction that started at `start_ts`.
///
/// # Invariants
/// - `for_update_ts != 0` exactly when the lock belongs to a pessimistic transaction.
/// - A `Pessimistic` lock carries no value; a `Put` lock's value is `short_value` or lives in
///   the default column family at `(key, start_ts)`.
/// - `min_commit_ts` only grows (pushed by readers through `check_txn_status`, replicated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    /// The kind of lock.
    pub lock_type: LockType,
    /// The transaction's primary key: where its fate is decided.
    pub primary: Vec<u8>,
    /// The transaction's start timestamp.
    pub start_ts: u64,
    /// Time to live in milliseconds, counted from the physical part of `start_ts`.
    pub ttl: u64,
    /// The value of a `Put` lock when it is at most [`SHORT_VALUE_MAX_LEN`] bytes.
    pub short_value: Option<Vec<u8>>,
    /// The pessimistic transaction's `for_update_ts` (0 for an optimistic transaction).
    pub for_update_ts: u64,
    /// Number of keys the transaction writes (a hint for resolvers).
    pub txn_size: u64,
    /// The smallest commit timestamp the transaction may use.
    pub min_commit_ts: u64,
}

/// Values up to this many bytes are stored inline in the lock and the write record instead of
/// the default column family (TiKV's `SHORT_VALUE_MAX_LEN`).
pub const SHORT_VALUE_MAX_LEN: usize = 255;

impl Lock {
    /// A lock with the given type, primary and timestamps and no value.
    pub fn new(
        lock_type: LockType,
        primary: Vec<u8>,
        start_ts: u64,
        ttl: u64,
        for_update_ts: u64,
    ) -> Lock {
        Lock {
            lock_type,
            primary,
            start_ts,
            ttl,
            short_value: None,
            for_update_ts,
            txn_size: 0,
            min_commit_ts: 0,
        }
    }

    /// Whether this is a pessimistic (not yet prewritten) lock.
    pub fn is_pessimistic_lock(&self) -> bool {
        self.lock_type == LockType::Pessimistic
    }

    /// Whether the lock belongs to a pessimistic transaction (prewritten or not).
    pub fn is_pessimistic_txn(&self) -> bool {
        self.for_update_ts != 0
    }

    /// Whether the lock's TTL has run out at `current_ts` (both TSO timestamps).
    pub fn is_expired(&self, current_ts: u64) -> bool {
        crate::physical_ms(current_ts) >= crate::physical_ms(self.start_ts).saturating_add(self.ttl)
    }

    /// Encodes the lock for the lock column family.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Infallible for this type: postcard only fails on writer errors or unsupported types.
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// Decodes a lock written by [`Lock::to_bytes`].
    ///
    /// # Errors
    /// [`crate::MvccError::Corrupt`] naming the key when the bytes are not a lock.
    pub fn from_bytes(key: &[u8], bytes: &[u8]) -> Result<Lock, crate::MvccError> {
        postcard::from_bytes(bytes).map_err(|e| crate::MvccError::Corrupt {
            what: "lock",
            key: key.to_vec(),
            detail: e.to_string(),
        })
    }
}

impl LockValue for Lock {
    fn heap_size(&self) -> usize {
        self.primary.len() + self.short_value.as_ref().map_or(0, Vec::len)
    }
}
