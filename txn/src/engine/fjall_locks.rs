//! A [`FjallRegion`]'s lock column family: held in memory, written at checkpoints.
//!
//! A Percolator lock lives from its prewrite to its commit, a few milliseconds. Written to
//! fjall, each cost two memtable inserts (the lock, then its tombstone) besides the commit
//! record's one, and every applied batch a third for the region's record with its applied
//! index: in a profile of the write-only benchmark, memtable inserts were 17% of the
//! machine, and a build without the lock keyspace writes and the per-batch record reached
//! `MemEngine`'s TPS. So the view keeps the range's locks in a persistent map (a read
//! snapshot copies it in O(1)) and writes them, with the record and its applied index, only
//! at a **checkpoint**: every [`CHECKPOINT_EVERY`] applied entries (in the batch of the
//! entry that reaches it), before the log is compacted (`Engine::checkpoint`), and with
//! every change of the record (split, merge, snapshot apply).
//!
//! Why the log replay after a crash is still exact: the lock keyspace holds the range's
//! locks exactly as of the record's index `C`, while the write and default keyspaces may
//! hold batches applied after `C` (they were written, the record was not). Every entry
//! applied between two checkpoints is a batch of blind puts and deletes computed by the
//! leader (a record change is itself a checkpoint, and so is the one apply that reads the
//! engine to decide what it writes, a transfer's migrated locks), and replaying blind
//! writes `C+1..=N` in order over a state that already holds some of them, in order,
//! yields the state after `N`: each key ends with the last write to it. The Raft log keeps
//! every entry after `C`, since it is compacted only up to a checkpoint's index.

use std::ops::Bound;
use std::sync::Arc;

use fjall::Readable;

use super::{FjallRegion, range_of};
use crate::engine::error::EngineError;
use crate::engine::fjall_engine::{FjallEngine, io};

/// A region's locks: encoded user key to encoded lock.
pub(super) type LockMap = imbl::OrdMap<Arc<[u8]>, Arc<[u8]>>;

/// Applied entries after which a write also writes a checkpoint. It bounds what a restart
/// replays per region (and the `engine_crash` test's replay count); a checkpoint writes
/// what changed since the last one, found by comparing two versions of the map (shared
/// parts are skipped).
pub(super) const CHECKPOINT_EVERY: u64 = 32;

/// The in-memory lock column family of a view, what the lock keyspace holds of it, and
/// the applied index of both.
///
/// Readers take this alone (a snapshot copies `map` and `applied` with a fjall snapshot);
/// a writer holds it from its fjall commit until `map` and `applied` are the batch's.
#[derive(Debug, Default)]
pub(super) struct Locks {
    /// The locks as of `applied`.
    pub(super) map: LockMap,
    /// The range's entries in the lock keyspace as of the last checkpoint.
    pub(super) on_disk: LockMap,
    /// The applied index of the record on disk: the locks there are exactly as of it.
    pub(super) checkpoint: u64,
    /// The index of the last batch applied.
    pub(super) applied: u64,
}

impl Locks {
    /// `map`, just written by a checkpoint at `index`.
    pub(super) fn at(map: LockMap, index: u64) -> Locks {
        Locks {
            on_disk: map.clone(),
            map,
            checkpoint: index,
            applied: index,
        }
    }
}

/// The lock keyspace's entries in `[start, end)` (a checkpoint).
pub(super) fn read_locks(
    engine: &FjallEngine,
    start: &[u8],
    end: Option<&[u8]>,
) -> Result<LockMap, EngineError> {
    let snap = engine.db.snapshot();
    let mut map = LockMap::new();
    for guard in snap.range::<&[u8], _>(&engine.lock, range_of(start, end)) {
        let (k, v) = guard.into_inner().map_err(|e| io("read locks", &e))?;
        map.insert(Arc::from(&k[..]), Arc::from(&v[..]));
    }
    Ok(map)
}

/// `map`'s entries in `[start, end)`.
pub(super) fn locks_in<'a>(
    map: &'a LockMap,
    start: &'a [u8],
    end: Option<&'a [u8]>,
) -> impl Iterator<Item = (&'a Arc<[u8]>, &'a Arc<[u8]>)> + 'a {
    let upper = end.map_or(Bound::Unbounded, Bound::Excluded);
    map.range::<_, [u8]>((Bound::Included(start), upper))
}

impl FjallRegion {
    /// Adds to `batch` what turns the lock keyspace's `[start, end)` into `map`'s entries
    /// there: a tombstone for each stored lock `map` lacks, an insert for each new or
    /// changed one. The stored side is read (a record change: a merge, or a region that
    /// left the node, may have left entries there that no view of this node knows).
    /// Returns what the range holds once `batch` is committed.
    ///
    /// # Errors
    /// [`EngineError::Io`] when the range cannot be read; the view then stops (`index`:
    /// the applied index of the change), since a record change written without it could
    /// leave stale locks on disk.
    pub(super) fn lock_diff_read(
        &self,
        batch: &mut fjall::OwnedWriteBatch,
        map: &LockMap,
        start: &[u8],
        end: Option<&[u8]>,
        index: u64,
    ) -> Result<LockMap, EngineError> {
        let stored = read_locks(&self.engine, start, end).inspect_err(|e| {
            self.fail(index, e.to_string());
        })?;
        for (k, _) in &stored {
            if !map.contains_key(&**k) {
                batch.remove(&self.engine.lock, k.to_vec());
            }
        }
        let mut after = LockMap::new();
        for (k, v) in locks_in(map, start, end) {
            if stored.get(&**k) != Some(v) {
                batch.insert(&self.engine.lock, &**k, &**v);
            }
            after.insert(k.clone(), v.clone());
        }
        Ok(after)
    }

    /// As [`FjallRegion::lock_diff_read`] between two checkpoints, where the range holds
    /// `on_disk` (the last checkpoint's map) and `map` holds only the range's keys.
    pub(super) fn lock_diff_known(
        &self,
        batch: &mut fjall::OwnedWriteBatch,
        map: &LockMap,
        on_disk: &LockMap,
    ) {
        for item in on_disk.diff(map) {
            match item {
                imbl::ordmap::DiffItem::Add(k, v)
                | imbl::ordmap::DiffItem::Update { new: (k, v), .. } => {
                    batch.insert(&self.engine.lock, &**k, &**v);
                }
                imbl::ordmap::DiffItem::Remove(k, _) => {
                    batch.remove(&self.engine.lock, k.to_vec());
                }
            }
        }
    }
}

/// `map` without its entries in `[start, end)`, and those entries.
pub(super) fn split_locks(map: &LockMap, start: &[u8], end: Option<&[u8]>) -> (LockMap, LockMap) {
    let mut rest = map.clone();
    let mut taken = LockMap::new();
    for (k, v) in locks_in(map, start, end) {
        rest.remove(&**k);
        taken.insert(k.clone(), v.clone());
    }
    (rest, taken)
}
