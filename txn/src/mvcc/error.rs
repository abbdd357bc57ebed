//! [`MvccError`]: why a Percolator action refused, as a value the caller acts on.

use serde::{Deserialize, Serialize};

use super::lock::{Lock, LockType};

/// A lock that blocked a request, as reported to the client (TiKV's `LockInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    /// The locked key.
    pub key: Vec<u8>,
    /// The lock holder's primary key.
    pub primary: Vec<u8>,
    /// The lock holder's start timestamp.
    pub lock_ts: u64,
    /// The lock's TTL in milliseconds.
    pub ttl: u64,
    /// The lock's kind.
    pub lock_type: LockType,
    /// The holder's `for_update_ts` (0 for an optimistic transaction).
    pub for_update_ts: u64,
    /// The holder's `min_commit_ts`.
    pub min_commit_ts: u64,
    /// The holder's transaction size hint.
    pub txn_size: u64,
}

impl LockInfo {
    /// The report of `lock` on `key`.
    pub fn new(key: &[u8], lock: &Lock) -> LockInfo {
        LockInfo {
            key: key.to_vec(),
            primary: lock.primary.clone(),
            lock_ts: lock.start_ts,
            ttl: lock.ttl,
            lock_type: lock.lock_type,
            for_update_ts: lock.for_update_ts,
            min_commit_ts: lock.min_commit_ts,
            txn_size: lock.txn_size,
        }
    }
}

/// Why a pessimistic lock was not found at prewrite (TiKV's `PessimisticLockNotFoundReason`).
///
/// More reasons may be added, so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LockNotFoundReason {
    /// The key is locked by another transaction.
    LockTsMismatch,
    /// The lock's `for_update_ts` differs from the one the prewrite expected.
    LockForUpdateTsMismatch,
    /// No lock, and amending failed: a newer write exists.
    LockMissingAmendFail,
    /// The key holds a non-pessimistic lock of this transaction where a pessimistic one was
    /// expected.
    NonLockKeyConflict,
}

/// Why a Percolator action refused. Every variant except [`MvccError::Corrupt`] is an ordinary
/// outcome that the transaction layer acts on (wait, resolve, retry or abort).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum MvccError {
    /// The key is locked by another transaction: resolve or wait.
    #[error("key {:?} is locked by txn {}", String::from_utf8_lossy(&.0.key), .0.lock_ts)]
    KeyIsLocked(Box<LockInfo>),
    /// A newer write committed after this transaction's snapshot.
    #[error(
        "write conflict on key {:?}: txn {start_ts} conflicts with txn {conflict_start_ts} committed at {conflict_commit_ts}",
        String::from_utf8_lossy(key)
    )]
    WriteConflict {
        /// This transaction's start_ts.
        start_ts: u64,
        /// The conflicting transaction's start_ts.
        conflict_start_ts: u64,
        /// The conflicting transaction's commit_ts.
        conflict_commit_ts: u64,
        /// The key.
        key: Vec<u8>,
        /// This transaction's primary.
        primary: Vec<u8>,
    },
    /// A pessimistic key's lock is gone at prewrite (lost with a crashed leader, or taken).
    #[error(
        "pessimistic lock of txn {start_ts} not found on key {:?} ({reason:?})",
        String::from_utf8_lossy(key)
    )]
    PessimisticLockNotFound {
        /// The transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
        /// Why.
        reason: LockNotFoundReason,
    },
    /// The transaction was already rolled back on this key when it tried to lock it.
    #[error(
        "txn {start_ts} was rolled back on key {:?}",
        String::from_utf8_lossy(key)
    )]
    PessimisticLockRolledBack {
        /// The transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// Commit found neither the lock nor a commit record (the transaction was rolled back).
    #[error(
        "txn {start_ts} lock not found on key {:?} at commit",
        String::from_utf8_lossy(key)
    )]
    TxnLockNotFound {
        /// The transaction.
        start_ts: u64,
        /// The commit_ts asked for.
        commit_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// `check_txn_status` found no lock and no record, and was told not to roll back.
    #[error("txn {start_ts} not found on key {:?}", String::from_utf8_lossy(key))]
    TxnNotFound {
        /// The transaction.
        start_ts: u64,
        /// The primary key.
        key: Vec<u8>,
    },
    /// The commit_ts is below the lock's `min_commit_ts` (a reader pushed it).
    #[error("commit_ts {commit_ts} of txn {start_ts} expired: min_commit_ts is {min_commit_ts}")]
    CommitTsExpired {
        /// The transaction.
        start_ts: u64,
        /// The commit_ts asked for.
        commit_ts: u64,
        /// The key.
        key: Vec<u8>,
        /// The lock's min_commit_ts.
        min_commit_ts: u64,
    },
    /// A rollback found the transaction already committed on the key (TiKV's `Committed`).
    #[error(
        "txn {start_ts} is already committed at {commit_ts} on key {:?}",
        String::from_utf8_lossy(key)
    )]
    Committed {
        /// The transaction.
        start_ts: u64,
        /// Its commit timestamp.
        commit_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// A prewrite found a lock of its own transaction of the wrong kind: a pessimistic lock
    /// under an optimistic prewrite (TiKV's `LockTypeNotMatch`).
    #[error(
        "txn {start_ts} found its own {lock_type:?} lock on key {:?}, which its prewrite cannot replace",
        String::from_utf8_lossy(key)
    )]
    LockTypeNotMatch {
        /// The transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
        /// The kind of the lock found.
        lock_type: LockType,
    },
    /// A key that must not exist has a visible value.
    #[error("key {:?} already exists", String::from_utf8_lossy(key))]
    AlreadyExist {
        /// The key.
        key: Vec<u8>,
    },
    /// A stored record could not be decoded: the region's data is damaged.
    #[error("corrupt {what} at key {:?}: {detail}", String::from_utf8_lossy(key))]
    Corrupt {
        /// Which record.
        #[serde(deserialize_with = "deserialize_what")]
        what: StaticName,
        /// Its key.
        key: Vec<u8>,
        /// The decoder's message.
        detail: String,
    },
    /// `check_txn_status` was asked about `key` as a transaction's primary, but the
    /// transaction's lock on it names another primary (TiKV's `PrimaryMismatch`): the caller
    /// took a secondary for the primary. Nothing was changed; the transaction's fate is
    /// decided on `lock.primary`.
    #[error(
        "key {:?} is not the primary of txn {}: its lock names {:?}",
        String::from_utf8_lossy(key),
        lock.lock_ts,
        String::from_utf8_lossy(&lock.primary)
    )]
    PrimaryMismatch {
        /// The key asked about.
        key: Vec<u8>,
        /// The transaction's lock on it, naming the real primary.
        lock: Box<LockInfo>,
    },
}

/// `&'static str` under another name: serde's derive borrows a field spelled `&str` from the
/// input even with `deserialize_with`, which would make [`MvccError`] deserialize only from
/// `'static` input.
type StaticName = &'static str;

/// The names [`MvccError::Corrupt`] uses for `what`.
const CORRUPT_WHAT: &[&str] = &[
    "lock",
    "write record",
    "lock cf key",
    "write cf key",
    "default cf key",
    "default cf value",
];

/// Reads `what` of [`MvccError::Corrupt`] as one of the known static names, so that the
/// error deserializes from any input (a `&'static str` field would otherwise tie the
/// deserializer to `'static` input). An unknown name reads as `"record"`.
fn deserialize_what<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StaticName, D::Error> {
    let name = String::deserialize(d)?;
    Ok(CORRUPT_WHAT
        .iter()
        .find(|known| **known == name)
        .copied()
        .unwrap_or("record"))
}
