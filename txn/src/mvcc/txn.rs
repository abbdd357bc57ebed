//! [`MvccTxn`]: the changes one Percolator action makes, and [`TxnWrites`], what it hands on.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::lock::Lock;
use super::write::Write;
use crate::engine::{Cf, Modify, WriteBatch, encode_key, encode_key_with_ts};

/// What a transaction does to one key's lock.
#[derive(Debug, Clone)]
enum LockChange {
    /// A replicated lock-CF put (the encoded lock).
    Put(Vec<u8>),
    /// A replicated lock-CF delete.
    Delete,
    /// A pessimistic lock the region may keep in memory instead of replicating.
    Pessimistic(Lock),
}

/// Collects the changes of one or more actions of the transaction started at `start_ts`
/// (TiKV's `MvccTxn`).
///
/// # Invariants
/// - Each key has at most one lock change: a later `put_lock`, `put_pessimistic_lock` or
///   `unlock_key` of the same key replaces the earlier one. So a key never appears both as a
///   lock-CF change in [`TxnWrites::modifies`] and in [`TxnWrites::pessimistic_locks`].
/// - Write and default column family changes are kept in call order (the engine applies them
///   in order, so the last change of a key wins there too).
#[derive(Debug, Clone)]
pub struct MvccTxn {
    start_ts: u64,
    /// Write and default CF changes, in call order.
    data: Vec<Modify>,
    /// Lock changes in first-touch order; `lock_index` maps a user key to its slot.
    locks: Vec<(Vec<u8>, LockChange)>,
    lock_index: HashMap<Vec<u8>, usize>,
    released: Vec<(Vec<u8>, u64)>,
}

impl MvccTxn {
    /// An empty transaction for `start_ts`.
    pub fn new(start_ts: u64) -> MvccTxn {
        MvccTxn {
            start_ts,
            data: Vec::new(),
            locks: Vec::new(),
            lock_index: HashMap::new(),
            released: Vec::new(),
        }
    }

    /// The transaction's start timestamp.
    pub fn start_ts(&self) -> u64 {
        self.start_ts
    }

    fn set_lock(&mut self, key: &[u8], change: LockChange) {
        match self.lock_index.get(key) {
            Some(&slot) => self.locks[slot].1 = change,
            None => {
                self.lock_index.insert(key.to_vec(), self.locks.len());
                self.locks.push((key.to_vec(), change));
            }
        }
    }

    /// Puts `lock` on `key` in the lock column family (a replicated write).
    pub fn put_lock(&mut self, key: &[u8], lock: &Lock) {
        self.set_lock(key, LockChange::Put(lock.to_bytes()));
    }

    /// Offers `lock` as a pessimistic lock on `key`: the region keeps it in its memory table
    /// when it can, and otherwise writes it to the lock column family.
    pub fn put_pessimistic_lock(&mut self, key: &[u8], lock: Lock) {
        self.set_lock(key, LockChange::Pessimistic(lock));
    }

    /// Deletes `key`'s lock from the lock column family and records that the lock of
    /// `released_lock_ts` is released, so that its waiters can be woken once applied.
    pub fn unlock_key(&mut self, key: &[u8], released_lock_ts: u64) {
        self.set_lock(key, LockChange::Delete);
        self.released.push((key.to_vec(), released_lock_ts));
    }

    /// Writes the record `write` for `key` at `commit_ts` (for a rollback: at its start_ts).
    pub fn put_write(&mut self, key: &[u8], commit_ts: u64, write: &Write) {
        self.data.push(Modify::Put {
            cf: Cf::Write,
            key: encode_key_with_ts(key, commit_ts),
            value: write.to_bytes(),
        });
    }

    /// Removes `key`'s write record at `commit_ts`.
    pub fn delete_write(&mut self, key: &[u8], commit_ts: u64) {
        self.data.push(Modify::Delete {
            cf: Cf::Write,
            key: encode_key_with_ts(key, commit_ts),
        });
    }

    /// Stores a long `value` of `key` written by the transaction started at `start_ts`.
    pub fn put_value(&mut self, key: &[u8], start_ts: u64, value: &[u8]) {
        self.data.push(Modify::Put {
            cf: Cf::Default,
            key: encode_key_with_ts(key, start_ts),
            value: value.to_vec(),
        });
    }

    /// Removes the long value of `key` written by the transaction started at `start_ts`.
    pub fn delete_value(&mut self, key: &[u8], start_ts: u64) {
        self.data.push(Modify::Delete {
            cf: Cf::Default,
            key: encode_key_with_ts(key, start_ts),
        });
    }

    /// Whether nothing was collected.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.locks.is_empty()
    }

    /// The collected changes.
    pub fn into_writes(self) -> TxnWrites {
        let mut modifies = self.data;
        let mut pessimistic_locks = Vec::new();
        let mut lock_cf_keys = Vec::new();
        for (key, change) in self.locks {
            match change {
                LockChange::Put(value) => {
                    modifies.push(Modify::Put {
                        cf: Cf::Lock,
                        key: encode_key(&key),
                        value,
                    });
                    lock_cf_keys.push(key);
                }
                LockChange::Delete => {
                    modifies.push(Modify::Delete {
                        cf: Cf::Lock,
                        key: encode_key(&key),
                    });
                    lock_cf_keys.push(key);
                }
                LockChange::Pessimistic(lock) => pessimistic_locks.push((key, lock)),
            }
        }
        TxnWrites {
            modifies,
            pessimistic_locks,
            lock_cf_keys,
            released: self.released,
        }
    }
}

/// The changes an [`MvccTxn`] produced, as the region layer applies or replicates them.
///
/// # Invariants
/// - A user key is in at most one of `lock_cf_keys` and `pessimistic_locks`, and at most once
///   in either.
/// - `lock_cf_keys` lists exactly the user keys of the lock-CF changes in `modifies`: the
///   region marks those keys' in-memory locks deleted when it proposes the batch, and
///   removes them once it is applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnWrites {
    /// Engine changes (encoded keys), in the order to apply.
    pub modifies: Vec<Modify>,
    /// User key and pessimistic lock, not yet in `modifies`: for the memory table, or to be
    /// written to the lock column family when the table refuses them.
    pub pessimistic_locks: Vec<(Vec<u8>, Lock)>,
    /// User keys whose lock-CF entry this batch puts or deletes.
    pub lock_cf_keys: Vec<Vec<u8>>,
    /// `(user key, lock_ts)` of the locks this batch removes: wake their waiters once applied.
    pub released: Vec<(Vec<u8>, u64)>,
}

impl TxnWrites {
    /// Everything as one engine batch, with the pessimistic locks as lock-CF puts (the
    /// replicated path). Its `applied_index` is 0: the region sets it.
    pub fn into_batch(self) -> WriteBatch {
        let mut modifies = self.modifies;
        modifies.extend(
            self.pessimistic_locks
                .into_iter()
                .map(|(key, lock)| Modify::Put {
                    cf: Cf::Lock,
                    key: encode_key(&key),
                    value: lock.to_bytes(),
                }),
        );
        WriteBatch {
            modifies,
            applied_index: 0,
        }
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.modifies.is_empty() && self.pessimistic_locks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LockType, WriteType};

    fn lock(lock_type: LockType) -> Lock {
        Lock::new(lock_type, b"p".to_vec(), 10, 100, 10)
    }

    #[test]
    fn last_lock_change_of_a_key_wins() {
        let put = |t: &mut MvccTxn| t.put_lock(b"k", &lock(LockType::Put));
        let pess = |t: &mut MvccTxn| t.put_pessimistic_lock(b"k", lock(LockType::Pessimistic));
        let unlock = |t: &mut MvccTxn| t.unlock_key(b"k", 10);
        type Step = fn(&mut MvccTxn);
        // (steps, lock-CF modifies, pessimistic locks)
        let cases: Vec<(Vec<Step>, usize, usize)> = vec![
            (vec![put, pess], 0, 1),
            (vec![pess, put], 1, 0),
            (vec![pess, unlock], 1, 0),
            (vec![unlock, pess], 0, 1),
            (vec![put, put, put], 1, 0),
        ];
        for (i, (steps, cf_changes, pessimistic)) in cases.into_iter().enumerate() {
            let mut txn = MvccTxn::new(10);
            for step in steps {
                step(&mut txn);
            }
            let writes = txn.into_writes();
            let lock_modifies = writes
                .modifies
                .iter()
                .filter(|m| m.cf() == Cf::Lock)
                .count();
            assert_eq!(lock_modifies, cf_changes, "case {i}");
            assert_eq!(writes.lock_cf_keys.len(), cf_changes, "case {i}");
            assert_eq!(writes.pessimistic_locks.len(), pessimistic, "case {i}");
        }
    }

    #[test]
    fn into_batch_replicates_pessimistic_locks_and_round_trips_serde() {
        let mut txn = MvccTxn::new(10);
        txn.put_pessimistic_lock(b"a", lock(LockType::Pessimistic));
        txn.put_write(
            b"b",
            12,
            &Write::new(WriteType::Put, 10, Some(b"v".to_vec())),
        );
        txn.unlock_key(b"b", 10);
        assert!(!txn.is_empty());
        let writes = txn.into_writes();
        assert_eq!(writes.released, vec![(b"b".to_vec(), 10)]);
        let bytes = postcard::to_allocvec(&writes).unwrap();
        let back: TxnWrites = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, writes);
        let batch = writes.into_batch();
        assert_eq!(batch.applied_index, 0);
        assert!(batch.modifies.contains(&Modify::Put {
            cf: Cf::Lock,
            key: encode_key(b"a"),
            value: lock(LockType::Pessimistic).to_bytes(),
        }));
        assert_eq!(batch.modifies.len(), 3);
        assert!(MvccTxn::new(1).is_empty());
        assert!(MvccTxn::new(1).into_writes().is_empty());
    }
}
