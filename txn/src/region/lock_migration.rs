//! Applying migrated locks: the in-memory pessimistic locks a leader transfer or a merge
//! proposes as lock-CF records, checked against what the log applied since they were copied.
//!
//! A copy taken from the lock table may be older than the log by the time it applies: a write
//! of its key may have been proposed between the copy and the migration's proposal. The
//! leader prevents that by copying the locks again under their keys' latches and proposing
//! them before the latches go (`RegionPeer::propose_locks`). The apply rule below is a second
//! guard of SurgeDB's own, which every replica applies alike. TiKV has no such rule: its
//! `propose_locks_before_transfer_leader` (in `components/raftstore`) proposes the locks as
//! plain lock-CF puts and relies on ordering alone, the status change, the copy and the
//! proposal all made on the peer's own thread, which also orders the writes' proposals.
//!
//! A migrated lock is put only where it is still the newest state of its key:
//!
//! | the key holds                                     | the migrated lock                    |
//! |---------------------------------------------------|--------------------------------------|
//! | its txn's pessimistic lock, older for_update_ts   | put (min_commit_ts never lowered)    |
//! | its txn's pessimistic lock, same for_update_ts    | raises the stored ttl, min_commit_ts |
//! | its txn's prewrite lock                           | skipped                              |
//! | a newer pessimistic lock of its txn               | skipped                              |
//! | another transaction's lock                        | skipped                              |
//! | no lock; its txn's commit or rollback record      | skipped (finished)                   |
//! | no lock; another's commit after its for_update_ts | skipped (released)                   |
//! | no lock, none of those                            | put                                  |
//!
//! ("txn": the migrated lock's transaction; "raises": the stored lock is put again with the
//! copy's ttl and min_commit_ts where they are higher, or left alone.)
//!
//! The last row is why the rule alone is not enough: a lock released without leaving a
//! record (a pessimistic rollback, the commit of a pessimistic lock never prewritten,
//! `check_txn_status` removing an expired pessimistic primary) looks exactly like a lock never
//! written, and a stale copy would bring it back. Only the latch re-copy guards against that.
//! The rule catches what leaves a trace: a prewrite, a finished transaction, another
//! transaction's write, and a lock updated in place since the copy (a `min_commit_ts` pushed
//! by `check_txn_status`, a ttl raised by `txn_heartbeat`), which it never lowers.

use crate::{Cf, Lock, Modify, MvccError, MvccReader, WriteType, encode_key};

/// What apply does with one migrated lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Migrated {
    /// Put this lock into the lock column family: the copy, or (when the key holds the same
    /// lock) the stored one with what the copy raised.
    Put(Lock),
    /// The key holds a lock the copy must not replace (its transaction's prewrite lock, a
    /// newer pessimistic lock, another transaction's lock), or the same lock with nothing
    /// lower than the copy.
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
        let same_txn_pessimistic = existing.start_ts == lock.start_ts
            && existing.is_pessimistic_lock()
            && lock.is_pessimistic_lock();
        if !same_txn_pessimistic || existing.for_update_ts > lock.for_update_ts {
            return Ok(Migrated::KeepsLock);
        }
        if existing.for_update_ts < lock.for_update_ts {
            // A re-lock kept in memory: the copy is newer, but a min_commit_ts only grows.
            let mut put = lock.clone();
            put.min_commit_ts = put.min_commit_ts.max(existing.min_commit_ts);
            return Ok(Migrated::Put(put));
        }
        // The same lock: the stored one may have been updated in place since the copy
        // (replicated pushes and heartbeats); the copy may only raise it.
        let mut put = existing.clone();
        put.ttl = put.ttl.max(lock.ttl);
        put.min_commit_ts = put.min_commit_ts.max(lock.min_commit_ts);
        return Ok(if put == existing {
            Migrated::KeepsLock
        } else {
            Migrated::Put(put)
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
    Ok(Migrated::Put(lock.clone()))
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
            Ok(Migrated::Put(put)) => puts.push(Modify::Put {
                cf: Cf::Lock,
                key: encode_key(key),
                value: put.to_bytes(),
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

    /// `base` with `f` applied.
    fn with(base: Lock, f: impl FnOnce(&mut Lock)) -> Lock {
        let mut l = base;
        f(&mut l);
        l
    }

    #[test]
    fn a_migrated_lock_lands_only_where_it_is_still_the_newest_state_of_its_key() {
        let put = |t: WriteType, start_ts| Write::new(t, start_ts, None);
        // The copy: ttl 3000, min_commit_ts MIN.
        const MIN: u64 = FOR_UPDATE + 10;
        let copy = with(pessimistic(START, FOR_UPDATE), |l| l.min_commit_ts = MIN);
        let stored = |f: fn(&mut Lock)| with(copy.clone(), f);
        let cases: Vec<(&str, State, Migrated)> = vec![
            ("nothing there", State::Empty, Migrated::Put(copy.clone())),
            (
                "an older copy of the same lock (a re-lock kept in memory)",
                State::Lock(stored(|l| l.for_update_ts = FOR_UPDATE - 5)),
                Migrated::Put(copy.clone()),
            ),
            (
                "an older copy whose min_commit_ts was pushed above the copy's",
                State::Lock(stored(|l| {
                    l.for_update_ts = FOR_UPDATE - 5;
                    l.min_commit_ts = MIN + 50;
                })),
                Migrated::Put(with(copy.clone(), |l| l.min_commit_ts = MIN + 50)),
            ),
            (
                "the same lock",
                State::Lock(copy.clone()),
                Migrated::KeepsLock,
            ),
            (
                "the same lock, its min_commit_ts pushed since (check_txn_status)",
                State::Lock(stored(|l| l.min_commit_ts = MIN + 50)),
                Migrated::KeepsLock,
            ),
            (
                "the same lock, its ttl raised since (txn_heartbeat)",
                State::Lock(stored(|l| l.ttl = 9000)),
                Migrated::KeepsLock,
            ),
            (
                "the same lock, pushed since, with a lower ttl than the copy's",
                State::Lock(stored(|l| {
                    l.ttl = 1000;
                    l.min_commit_ts = MIN + 50;
                })),
                Migrated::Put(with(copy.clone(), |l| l.min_commit_ts = MIN + 50)),
            ),
            (
                "the same lock with a lower min_commit_ts than the copy's",
                State::Lock(stored(|l| l.min_commit_ts = MIN - 5)),
                Migrated::Put(copy.clone()),
            ),
            (
                "a newer pessimistic lock of the transaction",
                State::Lock(stored(|l| l.for_update_ts = FOR_UPDATE + 5)),
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
                Migrated::Put(copy.clone()),
            ),
            (
                "another transaction's rollback after for_update_ts",
                State::Record(FOR_UPDATE + 20, Write::rollback(FOR_UPDATE + 20, true)),
                Migrated::Put(copy.clone()),
            ),
        ];
        for (name, state, want) in cases {
            let engine = engine_with(state);
            let snap = engine.snapshot();
            let reader = MvccReader::new(&*snap, None);
            assert_eq!(
                migrated_lock(&reader, b"k", &copy),
                Ok(want.clone()),
                "case: {name}"
            );
            let puts = migrated_lock_puts(&reader, 1, &[(b"k".to_vec(), copy.clone())]);
            let want_puts: Vec<Modify> = match want {
                Migrated::Put(l) => vec![Modify::Put {
                    cf: Cf::Lock,
                    key: encode_key(b"k"),
                    value: l.to_bytes(),
                }],
                _ => Vec::new(),
            };
            assert_eq!(puts, want_puts, "case: {name}");
        }
    }
}
