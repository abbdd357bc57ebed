//! How a [`FjallRegion`] applies a Raft snapshot (a whole export or a stream) and reads one
//! as a stream: the `applying` marker, the range delete, the inserts in bounded batches.

use fjall::Readable;
use parking_lot::MutexGuard;

use super::fjall_locks::{LockMap, locks_in, read_locks};
use super::{APPLY_CHUNK, FjallRegion, Meta, bounds, range_of};
use crate::engine::cf::Cf;
use crate::engine::crash_points::{crash_point, engine_crash_points as points};
use crate::engine::error::EngineError;
use crate::engine::fjall_engine::io;
use crate::engine::region_record::RegionRecord;
use crate::engine::snapshot_stream::SnapshotStreamReader;
use crate::engine::traits::EntriesView;

/// The inserts of a snapshot's apply, committed every [`APPLY_CHUNK`] keys so memory stays
/// bounded; counts the bytes inserted (the region's new size).
pub(super) struct ChunkedInserts<'a> {
    view: &'a FjallRegion,
    batch: fjall::OwnedWriteBatch,
    size: u64,
    index: u64,
}

impl ChunkedInserts<'_> {
    /// Adds `key -> value` to `cf`, committing the batch once it is full.
    pub(super) fn insert(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<(), EngineError> {
        if super::counted(cf) {
            self.size += (key.len() + value.len()) as u64;
        }
        if cf == Cf::Write {
            self.view.engine.note_writes([key]);
        }
        self.batch.insert(self.view.engine.cf(cf), key, value);
        if self.batch.len() >= APPLY_CHUNK {
            let full = std::mem::replace(&mut self.batch, self.view.engine.db.batch());
            full.commit()
                .map_err(|e| self.view.apply_failed(self.index, &e))?;
        }
        Ok(())
    }

    /// Commits what is left; returns the bytes inserted.
    fn finish(self) -> Result<u64, EngineError> {
        self.batch
            .commit()
            .map_err(|e| self.view.apply_failed(self.index, &e))?;
        Ok(self.size)
    }
}

impl FjallRegion {
    /// A fjall error during a snapshot's apply at `index`: the range is incomplete, so the
    /// view stops (and the `applying` marker stays, so a restart applies it again).
    fn apply_failed(&self, index: u64, e: &fjall::Error) -> EngineError {
        let err = io("snapshot apply", e);
        self.fail(index, err.to_string());
        err
    }

    /// Runs a snapshot's apply at `applied_index` for `record`: sets the `applying` marker
    /// (with the new record), deletes the record's range in chunks, lets `insert` add the
    /// data, then records `applied_index` and the size inserted, clearing the marker.
    /// `insert`'s error, as any failure after the marker is set, stops the view: its range
    /// holds a part of the snapshot, which only a restart (applying it again) completes.
    ///
    /// The deletes are point tombstones (fjall has no range delete); compaction drops them
    /// with the values they cover.
    pub(super) fn apply_snapshot(
        &self,
        applied_index: u64,
        record: &RegionRecord,
        insert: impl FnOnce(&mut ChunkedInserts<'_>) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        self.check_failed()?;
        let mut held = self.meta.lock();
        let marked = Meta {
            applying: true,
            record: record.clone(),
            ..held.clone()
        };
        // The range's locks are the snapshot's from here on (read back at the end).
        self.commit_with(
            self.engine.db.batch(),
            &mut held,
            marked,
            LockMap::new(),
            "snapshot apply",
        )?;
        self.delete_range(applied_index, record)?;
        crash_point(points::SNAPSHOT_APPLY_AFTER_DELETE);
        let mut inserts = ChunkedInserts {
            view: self,
            batch: self.engine.db.batch(),
            size: 0,
            index: applied_index,
        };
        if let Err(e) = insert(&mut inserts) {
            self.fail(applied_index, format!("snapshot apply cut short: {e}"));
            return Err(e);
        }
        let size = inserts.finish()?;
        self.finish_apply(&mut held, applied_index, record, size)
    }

    /// Deletes every key of `record`'s range in every column family, committing every
    /// [`APPLY_CHUNK`] keys.
    fn delete_range(&self, applied_index: u64, record: &RegionRecord) -> Result<(), EngineError> {
        let (start, end) = bounds(record);
        let snap = self.engine.db.snapshot();
        for cf in Cf::ALL {
            let ks = self.engine.cf(cf);
            let mut out = self.engine.db.batch();
            for guard in snap.range::<&[u8], _>(ks, range_of(&start, end.as_deref())) {
                let key = guard
                    .key()
                    .map_err(|e| self.apply_failed(applied_index, &e))?;
                // A copy: the iterator's key shares the whole data block it was read from,
                // and the tombstone lives on in the memtable, so keeping it would pin one
                // block per deleted key until the memtable is flushed (hundreds of MiB for
                // a large region).
                out.remove(ks, key.to_vec());
                if out.len() >= APPLY_CHUNK {
                    std::mem::replace(&mut out, self.engine.db.batch())
                        .commit()
                        .map_err(|e| self.apply_failed(applied_index, &e))?;
                }
            }
            out.commit()
                .map_err(|e| self.apply_failed(applied_index, &e))?;
        }
        Ok(())
    }

    /// Records the applied snapshot: its index, record and size, the marker cleared.
    fn finish_apply(
        &self,
        held: &mut MutexGuard<'_, Meta>,
        applied_index: u64,
        record: &RegionRecord,
        size: u64,
    ) -> Result<(), EngineError> {
        let done = Meta {
            applied_index,
            size,
            applying: false,
            record: record.clone(),
        };
        // The snapshot's locks went to the lock keyspace with its other entries.
        let (start, end) = bounds(record);
        let map = read_locks(&self.engine, &start, end.as_deref()).inspect_err(|e| {
            self.fail(applied_index, format!("snapshot apply: {e}"));
        })?;
        // Read just now: the map is what the range holds, with nothing to diff.
        self.commit_record(
            self.engine.db.batch(),
            held,
            done,
            map.clone(),
            map,
            "snapshot apply",
        )
    }

    /// [`crate::Engine::import_stream`] for a fjall region: entries are inserted as the
    /// stream yields them, so memory holds one batch and one record, never the region.
    pub(super) fn apply_stream(
        &self,
        stream: &mut SnapshotStreamReader<'_>,
        applied_index: u64,
    ) -> Result<(), EngineError> {
        let record = stream.header().record.clone();
        self.apply_snapshot(applied_index, &record, |inserts| {
            while let Some(entry) = stream.next_entry()? {
                inserts.insert(entry.cf, entry.key, entry.value)?;
            }
            Ok(())
        })
    }

    /// [`crate::Engine::entries_view`] for a fjall region: a fjall snapshot taken now (a
    /// sequence number), iterated range by range per column family when called.
    pub(super) fn stream_view(&self) -> EntriesView {
        let (snap, locks, _, (start, end)) = self.view();
        let engine = self.engine.clone();
        Box::new(move |visit| {
            for cf in Cf::ALL {
                if cf == Cf::Lock {
                    for (key, value) in locks_in(&locks, &start, end.as_deref()) {
                        visit(cf, key, value)?;
                    }
                    continue;
                }
                for guard in snap.range::<&[u8], _>(engine.cf(cf), range_of(&start, end.as_deref()))
                {
                    let (key, value) = guard
                        .into_inner()
                        .map_err(|e| io("snapshot stream read", &e))?;
                    visit(cf, &key, &value)?;
                }
            }
            Ok(())
        })
    }
}
