//! Applying migrated locks: the in-memory pessimistic locks a leader transfer or a merge
//! proposes as lock-CF records, checked against what the log applied since they were copied.
//!
//! A copy taken from the lock table may be older than the log by the time it applies: a write
//! of its key may have been proposed between the copy and the migration's proposal (the
//! leader also takes the keys' latches to prevent that; this is the apply side's guard, and
//! what every replica applies alike). So a migrated lock is put only where it is still the
//! newest state of its key, after TiKV's rule that a lock migration never replaces a lock of
//! another kind or a newer one:
//!
//! | the key holds                                                   | the migrated lock   |
//! |-----------------------------------------------------------------|---------------------|
//! | its transaction's pessimistic lock, same or older for_update_ts | put (copy is newer) |
//! | its transaction's prewrite lock, or a newer pessimistic lock    | skipped             |
//! | another transaction's lock                                      | skipped             |
//! | no lock; the transaction's commit or rollback record            | skipped (finished)  |
//! | no lock; another's write committed after its for_update_ts      | skipped (released)  |
//! | no lock, none of those                                          | put                 |

use crate::{Cf, Lock, Modify, MvccError, MvccReader, WriteType, encode_key};

/// What apply does with one migrated lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Migrated {
    /// Put it into the lock column family.
    Put,
    /// The key holds a lock the copy must not replace (its transaction's prewrite lock, a
    /// newer pessimistic lock, another transaction's lock).
    KeepsLock,
    /// The transaction has a commit or rollback record on the key.
    TxnFinished,
    /// Another transaction committed a write of the key after the lock's `for_update_ts`:
    /// the lock was released (and the key written) after the copy was taken.
    WrittenSince,
}

/// What apply does with `lock`, migrated onto `key`, given the region as `reader` sees it
/// (the engine at this entry's apply, no memory table).
///
/// # Errors
/// [`MvccError::Corrupt`] for a stored lock or record that cannot be decoded.
pub(crate) fn migrated_lock(
    reader: &MvccReader<'_>,
    key: &[u8],
    lock: &Lock,
) -> Result<Migrated, MvccError> {
    if let Some(existing) = reader.load_lock(key)? {
        let older_copy_of_this_lock = existing.start_ts == lock.start_ts
            && existing.is_pessimistic_lock()
            && lock.is_pessimistic_lock()
            && existing.for_update_ts <= lock.for_update_ts;
        return Ok(if older_copy_of_this_lock {
            Migrated::Put
        } else {
            Migrated::KeepsLock
        });
    }
    let record = reader.get_txn_commit_record(key, lock.start_ts)?;
    if record.info().is_some() || record.is_rolled_back() {
        return Ok(Migrated::TxnFinished);
    }
    // Newest first, past rollback records (they do not need the key's lock).
    let mut ts = u64::MAX;
    while let Some((commit_ts, write)) = reader.seek_write(key, ts)? {
        if commit_ts <= lock.for_update_ts {
            break;
        }
        if write.write_type != WriteType::Rollback {
            return Ok(Migrated::WrittenSince);
        }
        ts = commit_ts - 1;
    }
    Ok(Migrated::Put)
}

/// The lock-CF puts for the migrated `locks` that [`migrated_lock`] lets through. A key
/// whose state cannot be read is left as it is (logged): a migrated lock is only a copy.
pub(crate) fn migrated_lock_puts(
    reader: &MvccReader<'_>,
    region_id: u64,
    locks: &[(Vec<u8>, Lock)],
) -> Vec<Modify> {
    let mut puts = Vec::with_capacity(locks.len());
    for (key, lock) in locks {
        match migrated_lock(reader, key, lock) {
            Ok(Migrated::Put) => puts.push(Modify::Put {
                cf: Cf::Lock,
                key: encode_key(key),
                value: lock.to_bytes(),
            }),
            Ok(outcome) => {
                tracing::debug!(
                    region = region_id,
                    lock_ts = lock.start_ts,
                    ?outcome,
                    "migrated lock skipped"
                );
            }
            Err(e) => {
                tracing::error!(
                    region = region_id,
                    error = %e,
                    "migrated lock skipped: key unreadable"
                );
            }
        }
    }
    puts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, LockType, MemEngine, Write, WriteBatch, encode_key_with_ts};

    const START: u64 = 100;
    const FOR_UPDATE: u64 = 110;

    fn pessimistic(start_ts: u64, for_update_ts: u64) -> Lock {
        Lock::new(
            LockType::Pessimistic,
            b"k".to_vec(),
            start_ts,
            3000,
            for_update_ts,
        )
    }

    fn prewritten(start_ts: u64, for_update_ts: u64) -> Lock {
        let mut l = Lock::new(LockType::Put, b"k".to_vec(), start_ts, 3000, for_update_ts);
        l.short_value = Some(b"v".to_vec());
        l
    }

    /// What the key holds before the migrated lock applies.
    enum State {
        Empty,
        Lock(Lock),
        /// A write record at `(commit_ts, record)`.
        Record(u64, Write),
    }

    fn engine_with(state: State) -> MemEngine {
        let engine = MemEngine::new();
        let modify = match state {
            State::Empty => return engine,
            State::Lock(l) => Modify::Put {
                cf: Cf::Lock,
                key: encode_key(b"k"),
                value: l.to_bytes(),
            },
            State::Record(commit_ts, w) => Modify::Put {
                cf: Cf::Write,
                key: encode_key_with_ts(b"k", commit_ts),
                value: w.to_bytes(),
            },
        };
        engine
            .write(&WriteBatch {
                modifies: vec![modify],
                applied_index: 1,
            })
            .expect("write");
        engine
    }

    #[test]
    fn a_migrated_lock_lands_only_where_it_is_still_the_newest_state_of_its_key() {
        let put = |t: WriteType, start_ts| Write::new(t, start_ts, None);
        let cases: Vec<(&str, State, Migrated)> = vec![
            ("nothing there", State::Empty, Migrated::Put),
            (
                "an older copy of the same lock (a re-lock kept in memory)",
                State::Lock(pessimistic(START, FOR_UPDATE - 5)),
                Migrated::Put,
            ),
            (
                "the same lock",
                State::Lock(pessimistic(START, FOR_UPDATE)),
                Migrated::Put,
            ),
            (
                "a newer pessimistic lock of the transaction",
                State::Lock(pessimistic(START, FOR_UPDATE + 5)),
                Migrated::KeepsLock,
            ),
            (
                "the transaction's prewrite lock",
                State::Lock(prewritten(START, FOR_UPDATE)),
                Migrated::KeepsLock,
            ),
            (
                "another transaction's lock",
                State::Lock(pessimistic(START + 50, START + 50)),
                Migrated::KeepsLock,
            ),
            (
                "the transaction's commit record",
                State::Record(FOR_UPDATE + 20, put(WriteType::Put, START)),
                Migrated::TxnFinished,
            ),
            (
                "the transaction's rollback record",
                State::Record(START, Write::rollback(START, true)),
                Migrated::TxnFinished,
            ),
            (
                "another transaction's commit after for_update_ts",
                State::Record(FOR_UPDATE + 20, put(WriteType::Put, FOR_UPDATE + 10)),
                Migrated::WrittenSince,
            ),
            (
                "another transaction's commit before for_update_ts",
                State::Record(FOR_UPDATE - 1, put(WriteType::Put, START - 10)),
                Migrated::Put,
            ),
            (
                "another transaction's rollback after for_update_ts",
                State::Record(FOR_UPDATE + 20, Write::rollback(FOR_UPDATE + 20, true)),
                Migrated::Put,
            ),
        ];
        let migrated = pessimistic(START, FOR_UPDATE);
        for (name, state, want) in cases {
            let engine = engine_with(state);
            let snap = engine.snapshot();
            let reader = MvccReader::new(&*snap, None);
            assert_eq!(
                migrated_lock(&reader, b"k", &migrated),
                Ok(want),
                "case: {name}"
            );
            let puts = migrated_lock_puts(&reader, 1, &[(b"k".to_vec(), migrated.clone())]);
            assert_eq!(
                puts.len(),
                usize::from(want == Migrated::Put),
                "case: {name}"
            );
        }
    }
}
