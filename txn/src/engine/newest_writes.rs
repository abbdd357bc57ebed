//! [`NewestWrites`]: per key, an upper bound of the newest commit timestamp in the write
//! column family, so a prewrite's conflict check can skip its seek there.
//!
//! A prewrite asks of every key whether a record committed at or after its `start_ts`
//! exists (TiKV's `check_for_newer_version`). On the disk engine that question is a range
//! seek through fjall's memtables and tables, 8% of the write-only benchmark's machine in a
//! profile, and its answer is nearly always no: a transaction's keys were mostly last
//! written before it started. This index answers "no" from memory when it can.
//!
//! # Invariant
//! For every key `K` of the node's write column family, the newest commit timestamp among
//! `K`'s records is at most `max(entries[K], floor)` (an absent entry counting as 0). A
//! write of `K` at `ts` raises `entries[K]` to at least `ts` **before** the write is
//! visible to any reader; when the map is full it is emptied and `floor` raised to the
//! newest timestamp ever noted, so it keeps the invariant in bounded memory. Timestamps of
//! a key's records need not grow (a rollback record sits at its transaction's `start_ts`,
//! older than commits already there), hence a maximum and not the last value.
//!
//! A bound may be stale upwards (a later write noted, a failed batch's write noted) but
//! never below the truth, so a reader of an older snapshot is only sent to seek more often.

use std::collections::HashMap;

use parking_lot::Mutex;

/// Per encoded user key, an upper bound of its newest write record's commit timestamp.
///
/// See the module's invariant; keys are encoded as in the write column family, without a
/// timestamp.
#[derive(Debug)]
pub(crate) struct NewestWrites {
    inner: Mutex<Inner>,
    /// Keys remembered before the map is emptied into `floor`.
    capacity: usize,
}

#[derive(Debug)]
struct Inner {
    entries: HashMap<Box<[u8]>, u64>,
    /// At least the newest timestamp of every key without an entry.
    floor: u64,
    /// The newest timestamp noted or floored: what a restart may start from as its floor.
    newest: u64,
}

impl NewestWrites {
    /// An index with no entries whose keys are bounded by `floor` (the newest commit
    /// timestamp the engine may hold; `u64::MAX` when unknown), remembering up to
    /// `capacity` keys.
    pub(crate) fn new(floor: u64, capacity: usize) -> NewestWrites {
        NewestWrites {
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                floor,
                newest: floor,
            }),
            capacity,
        }
    }

    /// Notes write records (encoded key without timestamp, commit timestamp); call before
    /// they become visible to readers.
    pub(crate) fn note<'a>(&self, writes: impl IntoIterator<Item = (&'a [u8], u64)>) {
        // Emptied maps are freed after the lock is released: freeing 65,536 keys under it
        // would hold up every reader's `bound` meanwhile.
        let mut emptied = Vec::new();
        let mut inner = self.inner.lock();
        for (key, ts) in writes {
            inner.newest = inner.newest.max(ts);
            if let Some(bound) = inner.entries.get_mut(key) {
                *bound = (*bound).max(ts);
                continue;
            }
            if inner.entries.len() >= self.capacity {
                emptied.push(std::mem::take(&mut inner.entries));
                inner.floor = inner.newest;
                continue;
            }
            if ts > inner.floor {
                inner.entries.insert(key.into(), ts);
            }
        }
        drop(inner);
        drop(emptied);
    }

    /// Raises the floor to `ts` (records written without their keys being noted, or a key
    /// that could not be decoded: `u64::MAX` sends every check to the engine from then on).
    pub(crate) fn raise_floor(&self, ts: u64) {
        let mut inner = self.inner.lock();
        inner.floor = inner.floor.max(ts);
        inner.newest = inner.newest.max(ts);
    }

    /// An upper bound of the newest commit timestamp among `key`'s write records.
    pub(crate) fn bound(&self, key: &[u8]) -> u64 {
        let inner = self.inner.lock();
        inner
            .entries
            .get(key)
            .map_or(inner.floor, |&ts| ts.max(inner.floor))
    }

    /// The newest timestamp noted (or the floor): a floor for the index after a restart,
    /// valid for every record written before this call.
    pub(crate) fn newest(&self) -> u64 {
        self.inner.lock().newest
    }

    /// Keys with an entry.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().entries.len()
    }
}

#[cfg(test)]
#[path = "newest_writes_test.rs"]
mod newest_writes_test;
