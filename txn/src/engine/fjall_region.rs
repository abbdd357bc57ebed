//! [`FjallRegion`]: one region's view of its node's [`FjallEngine`], implementing [`Engine`].

use std::ops::Bound;
use std::sync::Arc;

use fjall::{Keyspace, Readable};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::cf::Cf;
use super::crash_points::{crash_point, engine_crash_points as points};
use super::error::EngineError;
use super::fjall_engine::{FjallEngine, describe, io};
use super::key_codec::{decode_key, encode_key, split_ts};
use super::mem_engine::{OwnedMap, decode_export, encode_pairs};
use super::region_record::RegionRecord;
use super::snapshot_stream::SnapshotStreamReader;
use super::traits::{Engine, EntriesView, Snapshot};
use super::write_batch::{Modify, WriteBatch};
use fjall_locks::{CHECKPOINT_EVERY, LockMap, Locks, locks_in, read_locks, split_locks};

/// Keys deleted or inserted per fjall batch while a snapshot is applied (bounds memory).
const APPLY_CHUNK: usize = 4096;

/// A region's record as stored in the `regions` keyspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Meta {
    /// The Raft index of the last batch applied. Stored: the index of the last checkpoint
    /// (see `fjall_locks.rs`), as of which the record and the locks are exact.
    applied_index: u64,
    /// Approximate bytes of keys and values in the range's write and default column
    /// families, by the rule of [`counted`] (the lock column family is not counted: its
    /// entries are a running transaction's, short-lived and small); a split divides it
    /// evenly between the halves.
    size: u64,
    /// Set while a snapshot is being applied: the range's data is incomplete, and a
    /// restart must apply the snapshot again (the region reports no durable state).
    applying: bool,
    record: RegionRecord,
}

/// Whether entries of `cf` count in a region's size. The disk engine keeps the size
/// without reading before it writes: a put adds its key and value, a delete subtracts what
/// it removes (read, deletes being rare), and the lock column family is not counted (a
/// lock lives as long as its transaction, and reading the old lock on every put and
/// delete was half of each apply on the Raft thread in a profile). The size drives split checks,
/// which need no exact figure.
fn counted(cf: Cf) -> bool {
    cf != Cf::Lock
}

/// One region's view of the node's engine: its range of the shared keyspaces and its record.
///
/// # Invariants
/// - The range's lock column family is held in memory (`locks`); the lock keyspace holds it
///   as of the stored record's applied index, the last checkpoint (see `fjall_locks.rs`).
///   Every write of the record is a checkpoint: the record and the locks' difference are
///   one fjall batch.
/// - Between two checkpoints only batches of blind puts and deletes are applied, so the
///   replay of the log after the stored index is exact whatever part of them the write and
///   default keyspaces already hold.
/// - Writes come from the region's apply (one thread at a time); `meta` holds the applied
///   index, size and record of now, and is held by every write, checkpoint and record
///   change. A writer also holds `locks` from its fjall commit until the map and the
///   applied index are the batch's, and a snapshot takes the fjall snapshot and the map
///   under `locks`, so it sees one applied batch.
/// - After a failed write the view refuses every write ([`EngineError::Stopped`]): the
///   failed batch is not in the engine, and a later one applied on top would leave a hole
///   that the log replay after a restart (from the record's index) could not see.
pub struct FjallRegion {
    engine: Arc<FjallEngine>,
    id: u64,
    meta: Mutex<Meta>,
    /// Whether the record exists on disk (a new region's view has none until it writes).
    stored: Mutex<bool>,
    failed: Mutex<Option<EngineError>>,
    /// The range's lock column family (taken after `meta` when both are held).
    locks: Mutex<Locks>,
}

impl std::fmt::Debug for FjallRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallRegion")
            .field("id", &self.id)
            .field("applied_index", &self.meta.lock().applied_index)
            .finish()
    }
}

/// A range of engine keys: start, and end (`None`: to the end of the key space).
type Bounds = (Vec<u8>, Option<Vec<u8>>);

/// A key and its value, shared.
type Pair = (Arc<[u8]>, Arc<[u8]>);

/// The range `[start, end)` of user keys as engine-key bounds.
fn bounds(record: &RegionRecord) -> Bounds {
    let start = encode_key(&record.start);
    let end = (!record.end.is_empty()).then(|| encode_key(&record.end));
    (start, end)
}

fn range_of<'a>(start: &'a [u8], end: Option<&'a [u8]>) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    (
        Bound::Included(start),
        end.map_or(Bound::Unbounded, Bound::Excluded),
    )
}

fn encode_meta(meta: &Meta) -> Vec<u8> {
    // Serializing plain fields into a Vec cannot fail.
    postcard::to_allocvec(meta).unwrap_or_default()
}

impl FjallRegion {
    /// The key of region `id`'s record in the `regions` keyspace.
    pub(super) fn record_key(id: u64) -> [u8; 9] {
        let mut k = [b'r'; 9];
        k[1..].copy_from_slice(&id.to_be_bytes());
        k
    }

    pub(super) fn open(
        engine: Arc<FjallEngine>,
        id: u64,
        start: &[u8],
        end: &[u8],
    ) -> Result<Arc<FjallRegion>, EngineError> {
        let key = Self::record_key(id);
        let bad = |detail: String| EngineError::Open {
            path: format!("{} (record of region {id})", engine.path().display()),
            detail,
        };
        let (meta, stored) = match engine.regions.get(key).map_err(|e| bad(describe(&e)))? {
            Some(bytes) => (
                postcard::from_bytes::<Meta>(&bytes).map_err(|e| bad(e.to_string()))?,
                true,
            ),
            None => (
                Meta {
                    record: RegionRecord {
                        start: start.to_vec(),
                        end: end.to_vec(),
                        state: Vec::new(),
                    },
                    ..Meta::default()
                },
                false,
            ),
        };
        // A view without a record (a new region, or a split's child restored from its
        // seed) starts, like its other column families, from what the range holds.
        let (start, end) = bounds(&meta.record);
        let map = read_locks(&engine, &start, end.as_deref()).map_err(|e| bad(e.to_string()))?;
        let locks = Locks::at(map, meta.applied_index);
        Ok(Arc::new(FjallRegion {
            engine,
            id,
            meta: Mutex::new(meta),
            stored: Mutex::new(stored),
            failed: Mutex::new(None),
            locks: Mutex::new(locks),
        }))
    }

    /// The region's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The node's engine.
    pub fn engine(&self) -> &Arc<FjallEngine> {
        &self.engine
    }

    fn check_failed(&self) -> Result<(), EngineError> {
        match &*self.failed.lock() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Stops the view's writes after a failure at `index` (the first failure is kept).
    fn fail(&self, index: u64, detail: String) -> EngineError {
        let mut failed = self.failed.lock();
        let e = failed.get_or_insert(EngineError::Stopped {
            region: self.id,
            index,
            detail,
        });
        e.clone()
    }

    /// Commits `batch` plus the record `meta` as a checkpoint of the locks held now over
    /// the record's range, then mirrors `meta` in memory; on failure the view stops (see
    /// the type's invariants).
    fn commit(
        &self,
        batch: fjall::OwnedWriteBatch,
        held: &mut Meta,
        meta: Meta,
        what: &'static str,
    ) -> Result<(), EngineError> {
        let map = self.locks.lock().map.clone();
        self.commit_with(batch, held, meta, map, what)
    }

    /// As [`FjallRegion::commit`], with `map` as the view's locks from the commit on.
    fn commit_with(
        &self,
        mut batch: fjall::OwnedWriteBatch,
        held: &mut Meta,
        meta: Meta,
        map: LockMap,
        what: &'static str,
    ) -> Result<(), EngineError> {
        let (start, end) = bounds(&meta.record);
        let on_disk =
            self.lock_diff_read(&mut batch, &map, &start, end.as_deref(), meta.applied_index)?;
        // The view keeps the range's locks only: a later checkpoint diffs its map against
        // `on_disk` and must not write keys of other ranges (a view opened over more than
        // its region's range before the record said which).
        self.commit_record(batch, held, meta, on_disk.clone(), on_disk, what)
    }

    /// Commits `batch` (which holds the checkpoint's lock difference, after which the lock
    /// keyspace's range holds `on_disk`) plus the record `meta`; then `meta` and `map` are
    /// the view's, and `meta`'s index its checkpoint. On failure the view stops (see the
    /// type's invariants).
    fn commit_record(
        &self,
        mut batch: fjall::OwnedWriteBatch,
        held: &mut Meta,
        meta: Meta,
        map: LockMap,
        on_disk: LockMap,
        what: &'static str,
    ) -> Result<(), EngineError> {
        self.put_record(&mut batch, self.id, &meta);
        let index = meta.applied_index;
        let mut locks = self.locks.lock();
        match self.engine.commit_checkpoint(batch) {
            Ok(()) => {
                *locks = Locks {
                    map,
                    on_disk,
                    checkpoint: index,
                    applied: index,
                };
                drop(locks);
                *held = meta;
                *self.stored.lock() = true;
                Ok(())
            }
            Err(e) => {
                drop(locks);
                Err(self.write_failed(index, what, &e))
            }
        }
    }

    /// Adds region `id`'s record `meta` to `batch` (committed by
    /// `FjallEngine::commit_checkpoint`, which adds the newest-write timestamp).
    fn put_record(&self, batch: &mut fjall::OwnedWriteBatch, id: u64, meta: &Meta) {
        batch.insert(
            &self.engine.regions,
            Self::record_key(id),
            encode_meta(meta),
        );
    }

    /// A failed fjall commit at `index`: logged, and the view stops.
    fn write_failed(&self, index: u64, what: &'static str, e: &fjall::Error) -> EngineError {
        let err = io(what, e);
        tracing::error!(region = self.id, index, error = %err, "engine write failed; region stopped");
        self.fail(index, err.to_string());
        err
    }

    /// Writes a checkpoint taken at `meta`'s index with the locks `map` of then, unless a
    /// later one is on disk already (a record change since). The view's record and data in
    /// memory stay as they are.
    ///
    /// # Errors
    /// The view's failure; [`EngineError::Io`] when a snapshot is being applied (the log
    /// must not be compacted then) or the write fails (the view then stops).
    fn write_checkpoint(&self, meta: &Meta, map: &LockMap) -> Result<(), EngineError> {
        // `meta` serializes this with the writes and the record changes; the checks follow
        // it, so a snapshot apply that failed or began meanwhile is seen.
        let held = self.meta.lock();
        self.check_failed()?;
        let on_disk = {
            let locks = self.locks.lock();
            if held.applying || meta.applying {
                return Err(EngineError::Io {
                    what: "checkpoint",
                    detail: format!("region {}: a snapshot is being applied", self.id),
                });
            }
            if locks.checkpoint >= meta.applied_index {
                return Ok(());
            }
            locks.on_disk.clone()
        };
        let mut batch = self.engine.db.batch();
        self.lock_diff_known(&mut batch, map, &on_disk);
        self.put_record(&mut batch, self.id, meta);
        self.engine
            .commit_checkpoint(batch)
            .map_err(|e| self.write_failed(meta.applied_index, "checkpoint", &e))?;
        let mut locks = self.locks.lock();
        locks.on_disk = map.clone();
        locks.checkpoint = meta.applied_index;
        drop(locks);
        *self.stored.lock() = true;
        drop(held);
        Ok(())
    }

    /// The stored size of `key` in `ks` (key plus value), 0 when absent.
    fn stored_size(&self, ks: &Keyspace, key: &[u8]) -> Result<u64, EngineError> {
        let v = ks.size_of(key).map_err(|e| io("read", &e))?;
        Ok(v.map_or(0, |n| (key.len() as u64) + u64::from(n)))
    }

    /// A read view of now ([`FjallRegion::read_view`]) and the record's range, under
    /// `meta` so that no record change falls between them.
    fn view(&self) -> (fjall::Snapshot, LockMap, u64, Bounds) {
        let held = self.meta.lock();
        let range = bounds(&held.record);
        let (snap, map, applied) = self.read_view();
        drop(held);
        (snap, map, applied, range)
    }

    /// A fjall snapshot and the locks of the same applied batch, with its index.
    fn read_view(&self) -> (fjall::Snapshot, LockMap, u64) {
        let locks = self.locks.lock();
        (self.engine.db.snapshot(), locks.map.clone(), locks.applied)
    }

    /// Reports a read error: logged, and the view's writes stop (a read that missed data
    /// must not lead to a write).
    fn read_failed(&self, e: &fjall::Error) {
        let detail = describe(e);
        tracing::error!(region = self.id, error = %detail, "engine read failed; region stopped");
        self.fail(
            self.meta.lock().applied_index,
            format!("read failed: {detail}"),
        );
    }
}

/// Every entry of `[start, end)` as of `snap` and `locks`, per column family.
fn collect(
    engine: &FjallEngine,
    snap: &fjall::Snapshot,
    locks: &LockMap,
    start: &[u8],
    end: Option<&[u8]>,
) -> Result<[Vec<Pair>; 3], EngineError> {
    let mut out: [Vec<Pair>; 3] = Default::default();
    for (slot, cf) in out.iter_mut().zip(Cf::ALL) {
        if cf == Cf::Lock {
            slot.extend(locks_in(locks, start, end).map(|(k, v)| (k.clone(), v.clone())));
            continue;
        }
        for guard in snap.range::<&[u8], _>(engine.cf(cf), range_of(start, end)) {
            let (k, v) = guard.into_inner().map_err(|e| io("export", &e))?;
            slot.push((Arc::from(&k[..]), Arc::from(&v[..])));
        }
    }
    Ok(out)
}

/// A consistent view of the region: a fjall snapshot of the engine and the region's locks
/// of the same applied batch.
struct FjallSnapshot<'a> {
    view: &'a FjallRegion,
    snap: fjall::Snapshot,
    locks: LockMap,
    applied: u64,
}

impl Snapshot for FjallSnapshot<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Option<Vec<u8>> {
        if cf == Cf::Lock {
            return self.locks.get(key).map(|v| v.to_vec());
        }
        match self.snap.get(self.view.engine.cf(cf), key) {
            Ok(v) => v.map(|v| v.to_vec()),
            Err(e) => {
                self.view.read_failed(&e);
                None
            }
        }
    }

    fn scan(
        &self,
        cf: Cf,
        start: &[u8],
        end: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) {
        if end.is_some_and(|end| end <= start) {
            return;
        }
        if cf == Cf::Lock {
            for (k, v) in locks_in(&self.locks, start, end) {
                if !visit(k, v) {
                    break;
                }
            }
            return;
        }
        for guard in self
            .snap
            .range::<&[u8], _>(self.view.engine.cf(cf), range_of(start, end))
        {
            match guard.into_inner() {
                Ok((k, v)) => {
                    if !visit(&k, &v) {
                        break;
                    }
                }
                Err(e) => {
                    self.view.read_failed(&e);
                    break;
                }
            }
        }
    }

    fn applied_index(&self) -> u64 {
        self.applied
    }

    /// The node's [`NewestWrites`](super::newest_writes::NewestWrites) bound: noted before
    /// each write is committed, so it covers this snapshot's records (and maybe later ones).
    fn newest_write_bound(&self, encoded_key: &[u8]) -> u64 {
        self.view.engine.newest_writes.bound(encoded_key)
    }
}

impl Engine for FjallRegion {
    fn snapshot(&self) -> Box<dyn Snapshot + '_> {
        let (snap, locks, applied) = self.read_view();
        Box::new(FjallSnapshot {
            view: self,
            snap,
            locks,
            applied,
        })
    }

    fn write(&self, batch: &WriteBatch) -> Result<(), EngineError> {
        self.check_failed()?;
        let mut held = self.meta.lock();
        let mut out = self.engine.db.batch();
        // Copies (O(1)): a failed batch leaves the view's locks as they were.
        let (mut locks, on_disk, checkpoint) = {
            let l = self.locks.lock();
            (l.map.clone(), l.on_disk.clone(), l.checkpoint)
        };
        let mut size = held.size as i128;
        // What this batch wrote so far, so a key changed twice in it is counted once
        // (reads see the engine before the batch).
        let mut seen: std::collections::HashMap<(Cf, &[u8]), i128> =
            std::collections::HashMap::new();
        // The write records put, for the newest-write index (noted before the commit).
        let mut records: Vec<&[u8]> = Vec::new();
        for modify in &batch.modifies {
            if modify.cf() == Cf::Lock {
                match modify {
                    Modify::Put { key, value, .. } => {
                        locks.insert(Arc::from(key.as_slice()), Arc::from(value.as_slice()));
                    }
                    Modify::Delete { key, .. } => {
                        locks.remove(key.as_slice());
                    }
                }
                continue;
            }
            let ks = self.engine.cf(modify.cf());
            let slot = (modify.cf(), modify.key());
            let counts = counted(modify.cf());
            match modify {
                Modify::Put { key, value, .. } => {
                    if counts {
                        // No read of the old value: a write or default key carries a
                        // timestamp and is new but for rare rewrites (an overlapped
                        // rollback's flag), which are counted twice.
                        let old = seen.get(&slot).copied().unwrap_or(0);
                        let new = (key.len() + value.len()) as i128;
                        size += new - old;
                        seen.insert(slot, new);
                    }
                    if modify.cf() == Cf::Write {
                        records.push(key.as_slice());
                    }
                    out.insert(ks, key.as_slice(), value.as_slice());
                }
                Modify::Delete { key, .. } => {
                    if counts {
                        // Deletes are rare here (a rolled-back prewrite's value):
                        // their size is read.
                        let old = match seen.get(&slot) {
                            Some(n) => *n,
                            None => self.stored_size(ks, key)? as i128,
                        };
                        size -= old;
                        seen.insert(slot, 0);
                    }
                    out.remove(ks, key.as_slice());
                }
            }
        }
        let size = size.max(0) as u64;
        self.engine.note_writes(records);
        crash_point(points::BEFORE_BATCH);
        if batch.applied_index >= checkpoint.saturating_add(CHECKPOINT_EVERY) {
            let meta = Meta {
                applied_index: batch.applied_index,
                size,
                ..held.clone()
            };
            self.lock_diff_known(&mut out, &locks, &on_disk);
            self.commit_record(out, &mut held, meta, locks.clone(), locks, "write")?;
        } else {
            // Only the data: the record (and its index) waits for the next checkpoint,
            // and a batch of locks alone writes nothing to fjall.
            let mut l = self.locks.lock();
            if !out.is_empty()
                && let Err(e) = out.commit()
            {
                drop(l);
                return Err(self.write_failed(batch.applied_index, "write", &e));
            }
            l.map = locks;
            l.applied = batch.applied_index;
            drop(l);
            held.applied_index = batch.applied_index;
            held.size = size;
        }
        crash_point(points::AFTER_BATCH);
        Ok(())
    }

    fn applied_index(&self) -> u64 {
        self.meta.lock().applied_index
    }

    fn export(&self) -> Vec<u8> {
        self.export_view()()
    }

    /// Takes a fjall snapshot now (cheap: a sequence number) and, when called, encodes the
    /// range from it: the Raft snapshot built for a follower behind the log's start. The
    /// log itself is compacted with a marker after [`Engine::persist`], not with this.
    fn export_view(&self) -> Box<dyn FnOnce() -> Vec<u8> + Send> {
        let (snap, locks, applied, (start, end)) = self.view();
        let engine = self.engine.clone();
        let id = self.id;
        Box::new(
            move || match collect(&engine, &snap, &locks, &start, end.as_deref()) {
                Ok([l, w, d]) => encode_pairs([&l, &w, &d], applied),
                Err(e) => {
                    tracing::error!(region = id, error = %e, "engine export failed");
                    encode_pairs::<&[u8], &[u8]>([&[], &[], &[]], applied)
                }
            },
        )
    }

    fn import(&self, data: &[u8], applied_index: u64) -> Result<(), EngineError> {
        let record = self.meta.lock().record.clone();
        self.import_region(data, applied_index, &record)
    }

    fn size_bytes(&self) -> u64 {
        self.meta.lock().size
    }

    /// Ends the view's range at `at` and returns an empty export: the entries stay in the
    /// node's keyspaces, keyed by user key, and belong to whichever region covers them now
    /// (a restart replaying a split whose child recovered on its own gives up the range
    /// this way; a split proper uses [`Engine::split_region`]). Nothing is read: the size
    /// is halved as [`Engine::split_region`] does (it collected the whole upper range
    /// before, only for its size, which a large region could not afford at a restart).
    fn split_off(&self, at: &[u8]) -> Vec<u8> {
        let mut held = self.meta.lock();
        let mut meta = held.clone();
        meta.size -= meta.size / 2;
        let applied = meta.applied_index;
        let result = match decode_key(at) {
            Ok((user, _)) => {
                meta.record.end = user;
                // The locks at or above `at` are the hosted child's: its view holds them
                // (from its own seed and log) and this view gives them up without writing
                // there. The parent's replayed locks of that range are lost with them:
                // this path runs only when the split's engine batch was lost after its sync
                // failed, and writing them over the child's range could as well resurrect
                // locks the child resolved since or delete ones it took.
                let kept = split_locks(&self.locks.lock().map, at, None).0;
                self.commit_with(self.engine.db.batch(), &mut held, meta, kept, "split_off")
            }
            Err(_) => self.commit(self.engine.db.batch(), &mut held, meta, "split_off"),
        };
        if let Err(e) = result {
            tracing::error!(region = self.id, error = %e, "engine split_off failed");
        }
        encode_pairs::<&[u8], &[u8]>([&[], &[], &[]], applied)
    }

    /// One fjall batch: a tombstone for every key of the range the export lacks (what this
    /// node's replica of the source left there and the source's leader no longer has), then
    /// the export's entries. A key the export has is only inserted, never also removed in
    /// the batch, so no key takes two changes in one batch. The size grows by the export's
    /// counted bytes, read nowhere: what lies under the source's keys was counted in the
    /// source's size, never in this region's (a `CommitMerge` applies once: the engine's
    /// applied index keeps a restart from replaying it).
    fn ingest(&self, data: &[u8], start: &[u8], end: Option<&[u8]>) -> Result<(), EngineError> {
        self.check_failed()?;
        let body = decode_export(data)?;
        let mut held = self.meta.lock();
        let mut out = self.engine.db.batch();
        let mut size = held.size;
        let snap = self.engine.db.snapshot();
        // The source's locks join the view's in memory (the record's change after the
        // merge writes them); those this replica held in the range and the source lacks go.
        let (mut locks, _) = split_locks(&self.locks.lock().map, start, end);
        for (cf, incoming) in body.by_cf_ref() {
            if cf == Cf::Lock {
                for (k, v) in incoming {
                    locks.insert(Arc::from(k.as_slice()), Arc::from(v.as_slice()));
                }
                continue;
            }
            let ks = self.engine.cf(cf);
            for guard in snap.range::<&[u8], _>(ks, range_of(start, end)) {
                let key = guard.key().map_err(|e| {
                    // A read that missed keys must not lead to a write (see `read_failed`,
                    // which takes `meta`, held here).
                    let err = io("ingest", &e);
                    self.fail(held.applied_index, err.to_string());
                    err
                })?;
                if !incoming.contains_key(key.as_ref()) {
                    out.remove(ks, key.to_vec());
                }
            }
        }
        drop(snap);
        for (cf, map) in body.by_cf() {
            if cf == Cf::Lock {
                continue;
            }
            let ks = self.engine.cf(cf);
            if cf == Cf::Write {
                self.engine.note_writes(map.keys().map(Vec::as_slice));
            }
            for (k, v) in &map {
                if counted(cf) {
                    size += (k.len() + v.len()) as u64;
                }
                out.insert(ks, k.as_slice(), v.as_slice());
            }
        }
        let meta = Meta {
            size,
            ..held.clone()
        };
        let (start, end) = bounds(&meta.record);
        let on_disk =
            self.lock_diff_read(&mut out, &locks, &start, end.as_deref(), meta.applied_index)?;
        self.commit_record(out, &mut held, meta, locks, on_disk, "ingest")
    }

    /// Two passes over the range's write keys (count, then the middle one); a region is
    /// split at most every few seconds, and keys are read without their values.
    fn middle_key(&self) -> Option<Vec<u8>> {
        let snap = self.engine.db.snapshot();
        let (start, end) = bounds(&self.meta.lock().record);
        let ks = &self.engine.write;
        let keys = || {
            snap.range::<&[u8], _>(ks, range_of(&start, end.as_deref()))
                .filter_map(|g| g.key().ok())
        };
        let n = keys().count();
        if n < 2 {
            return None;
        }
        let middle = keys().nth(n / 2)?;
        let first = keys().next()?;
        let (encoded, _) = split_ts(&middle).ok()?;
        let (first_encoded, _) = split_ts(&first).ok()?;
        if encoded == first_encoded {
            return None;
        }
        decode_key(encoded).ok().map(|(user_key, _)| user_key)
    }

    fn is_durable(&self) -> bool {
        true
    }

    /// [`FjallEngine`]'s write stall (see `FjallOptions::max_write_buffer_bytes`).
    fn throttle_writes(&self) {
        self.engine.throttle();
    }

    fn durable_region(&self) -> Option<(u64, RegionRecord)> {
        let meta = self.meta.lock();
        let checkpoint = self.locks.lock().checkpoint;
        (*self.stored.lock() && !meta.applying).then(|| (checkpoint, meta.record.clone()))
    }

    fn set_region(&self, record: &RegionRecord, applied_index: u64) -> Result<(), EngineError> {
        self.check_failed()?;
        let mut held = self.meta.lock();
        let meta = Meta {
            applied_index,
            record: record.clone(),
            ..held.clone()
        };
        let out = self.engine.db.batch();
        self.commit(out, &mut held, meta, "set region")
    }

    /// Deletes the range (in chunks), then inserts the export (in chunks), with the
    /// `applying` marker set in the record from before the first delete until the last
    /// insert: a crash in between leaves a record without a durable state, so the restart
    /// applies the Raft snapshot again (see `fjall_snapshot_apply.rs`).
    fn import_region(
        &self,
        data: &[u8],
        applied_index: u64,
        record: &RegionRecord,
    ) -> Result<(), EngineError> {
        self.check_failed()?;
        let body = decode_export(data)?;
        self.apply_snapshot(applied_index, record, |inserts| {
            for (cf, map) in body.by_cf() {
                for (k, v) in OwnedMap::into_iter(map) {
                    inserts.insert(cf, &k, &v)?;
                }
            }
            Ok(())
        })
    }

    /// As `import_region`, with the entries inserted as the stream yields them.
    fn import_stream(
        &self,
        stream: &mut SnapshotStreamReader<'_>,
        applied_index: u64,
    ) -> Result<(), EngineError> {
        self.apply_stream(stream, applied_index)
    }

    fn entries_view(&self) -> EntriesView {
        self.stream_view()
    }

    fn split_region(
        &self,
        at: &[u8],
        parent: &RegionRecord,
        parent_index: u64,
        child_id: u64,
        child: &RegionRecord,
        child_index: u64,
    ) -> Result<Arc<dyn Engine>, EngineError> {
        let _ = at;
        self.check_failed()?;
        let child_view = self.engine.region(child_id, &child.start, &child.end)?;
        let mut held = self.meta.lock();
        // The size is split evenly: a split is a metadata change and reads no data; the
        // split key is the write column's middle key, so halves are about right.
        let child_size = held.size / 2;
        let child_meta = Meta {
            applied_index: child_index,
            size: child_size,
            applying: false,
            record: child.clone(),
        };
        let parent_meta = Meta {
            applied_index: parent_index,
            size: held.size - child_size,
            applying: false,
            record: parent.clone(),
        };
        let mut out = self.engine.db.batch();
        self.put_record(&mut out, child_id, &child_meta);
        // Both records are checkpoints: the locks of the whole range before the split go
        // to disk, and each view keeps those of its part.
        let all = self.locks.lock().map.clone();
        let (start, end) = bounds(&held.record);
        self.lock_diff_read(&mut out, &all, &start, end.as_deref(), parent_index)?;
        let (child_start, child_end) = bounds(child);
        let (parent_locks, child_locks) = split_locks(&all, &child_start, child_end.as_deref());
        self.commit_record(
            out,
            &mut held,
            parent_meta,
            parent_locks.clone(),
            parent_locks,
            "split",
        )?;
        *child_view.meta.lock() = child_meta;
        *child_view.locks.lock() = Locks::at(child_locks, child_index);
        *child_view.stored.lock() = true;
        self.engine.register(child_id, &child_view);
        Ok(child_view)
    }

    /// The record and the locks of now, written by the closure as a checkpoint (skipped
    /// when a later one is on disk by then).
    fn checkpoint(&self) -> Box<dyn FnOnce() -> Result<(), EngineError> + Send> {
        let held = self.meta.lock();
        let map = self.locks.lock().map.clone();
        let meta = held.clone();
        drop(held);
        let engine = self.engine.clone();
        let id = self.id;
        Box::new(move || match engine.live_view(id) {
            Some(view) => view.write_checkpoint(&meta, &map),
            None => Err(EngineError::Io {
                what: "checkpoint",
                detail: format!("region {id}: its view is gone"),
            }),
        })
    }

    fn persist(&self) -> Result<(), EngineError> {
        crash_point(points::BEFORE_PERSIST);
        self.engine.persist()?;
        crash_point(points::AFTER_PERSIST);
        Ok(())
    }
}

#[path = "fjall_snapshot_apply.rs"]
mod fjall_snapshot_apply;

#[path = "fjall_locks.rs"]
mod fjall_locks;

#[cfg(test)]
#[path = "fjall_region_test.rs"]
mod fjall_region_test;

#[cfg(test)]
#[path = "fjall_snapshot_stream_test.rs"]
mod fjall_snapshot_stream_test;

#[cfg(test)]
#[path = "fjall_locks_test.rs"]
mod fjall_locks_test;

#[cfg(test)]
#[path = "fjall_newest_writes_test.rs"]
mod fjall_newest_writes_test;
