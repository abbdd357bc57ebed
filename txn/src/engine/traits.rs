//! [`Engine`] and [`Snapshot`]: the seam between a region's data and everything above it.

use std::sync::Arc;

use super::cf::Cf;
use super::error::EngineError;
use super::mem_engine::{decode_export, encode_pairs};
use super::region_record::RegionRecord;
use super::snapshot_stream::SnapshotStreamReader;
use super::write_batch::WriteBatch;

/// What [`Engine::entries_view`]'s closure calls with each entry (column family, engine key,
/// value); an error stops the visit, and the closure returns it.
pub type EntryVisitor<'a> = &'a mut dyn FnMut(Cf, &[u8], &[u8]) -> Result<(), EngineError>;

/// What [`Engine::entries_view`] returns: visits the entries of the view taken when it was
/// called, on whichever thread runs it.
pub type EntriesView = Box<dyn for<'a> FnOnce(EntryVisitor<'a>) -> Result<(), EngineError> + Send>;

/// A consistent, read-only view of an engine.
///
/// # Invariants
/// Every read through one snapshot sees the same state: the engine as of one applied batch.
pub trait Snapshot: Send {
    /// The value of `key` in `cf`.
    fn get(&self, cf: Cf, key: &[u8]) -> Option<Vec<u8>>;

    /// Visits the entries of `cf` with `start <= key < end` (no end: to the last key) in
    /// ascending key order until `visit` returns `false`.
    fn scan(
        &self,
        cf: Cf,
        start: &[u8],
        end: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    );

    /// The Raft index of the last batch this view includes.
    fn applied_index(&self) -> u64;

    /// An upper bound of the newest commit timestamp among the write records of
    /// `encoded_key` (a user key encoded as in the write column family, without a
    /// timestamp), never below the truth of this view; `u64::MAX` (the default) when the
    /// engine keeps none. A conflict check skips its seek when the bound is older than the
    /// transaction.
    fn newest_write_bound(&self, encoded_key: &[u8]) -> u64 {
        let _ = encoded_key;
        u64::MAX
    }
}

/// A region's data: three column families, atomic batches, consistent snapshots.
///
/// Implementations: [`crate::MemEngine`] (ordered maps in memory, one per region) and
/// [`crate::FjallRegion`] (a region's view of its node's [`crate::FjallEngine`] on disk).
/// The region methods at the end have defaults for an engine that keeps nothing across a
/// restart (as `MemEngine`).
pub trait Engine: Send + Sync + 'static {
    /// A consistent view of the data. Keep it short-lived: an engine may hold back writes
    /// while it lives.
    fn snapshot(&self) -> Box<dyn Snapshot + '_>;

    /// Applies `batch` atomically and records its applied index.
    ///
    /// # Errors
    /// [`EngineError`] when the engine cannot apply it; the engine is then unchanged.
    fn write(&self, batch: &WriteBatch) -> Result<(), EngineError>;

    /// The Raft index of the last applied batch.
    fn applied_index(&self) -> u64;

    /// Serializes all data (for a Raft snapshot).
    fn export(&self) -> Vec<u8>;

    /// A view of all data as of now, serialized when called: the closure returns exactly
    /// what [`Engine::export`] returns now, whatever is written meanwhile. A region's Raft
    /// snapshot takes the view on the node's Raft thread and runs it on another thread,
    /// so taking it must be cheap (an engine with immutable or refcounted data clones
    /// references, not data). The default exports now.
    fn export_view(&self) -> Box<dyn FnOnce() -> Vec<u8> + Send> {
        let data = self.export();
        Box::new(move || data)
    }

    /// Replaces all data by an export taken at `applied_index`.
    ///
    /// # Errors
    /// [`EngineError::BadExport`] when `data` is not an export; the engine is then unchanged.
    fn import(&self, data: &[u8], applied_index: u64) -> Result<(), EngineError>;

    /// Approximate bytes of keys and values held.
    fn size_bytes(&self) -> u64;

    /// Removes every entry whose engine key is at or after `at` (an encoded key, in every
    /// column family) and
    /// returns them as an export (for a region split: the new region's data). A disk
    /// engine shared by the node's regions only narrows the region's range (a checkpoint of
    /// the narrowed range) and returns an empty export: the entries stay under their keys,
    /// and the locks above `at` in its memory go (the other region's view holds its own).
    fn split_off(&self, at: &[u8]) -> Vec<u8>;

    /// Makes the engine's entries with `start <= key < end` (engine keys, no end: to the
    /// last key; in every column family) exactly the entries of the export `data`, keeping
    /// everything outside that range (for a merge: the source region's data joins the
    /// target's, `start..end` being the source's range). The applied index is unchanged.
    ///
    /// Replacing rather than adding matters on a disk engine shared by the node's regions:
    /// the node's own replica of the source already left its data under those keys, and a
    /// replica that lagged behind the source's leader (it never applied the source's last
    /// entries before the merge) left entries the export no longer has, such as the lock of
    /// a transaction that later committed. Added on top, that lock would stand beside its
    /// own commit record for good.
    ///
    /// # Errors
    /// [`EngineError::BadExport`] when `data` is not an export; the engine is then unchanged.
    fn ingest(&self, data: &[u8], start: &[u8], end: Option<&[u8]>) -> Result<(), EngineError>;

    /// A user key that splits the data into two halves of about equal size, if there are at
    /// least two distinct keys (the key of the write column family's middle record).
    fn middle_key(&self) -> Option<Vec<u8>>;

    /// Whether the engine keeps the region's data and record across a restart, in a store
    /// shared by the node's regions (a disk engine). `MemEngine`: no.
    fn is_durable(&self) -> bool {
        false
    }

    /// The applied index the engine holds durably (survives a crash of the process) and
    /// the region record written with it; `None` when the engine keeps nothing across a
    /// restart, or holds no complete state of the region (never written, or a snapshot's
    /// apply was cut short). A region replays its log after this index. A disk engine may
    /// record it only now and then (a `FjallRegion`'s checkpoints) and hold some data of
    /// later entries too; the replay must then be exact over them (blind writes).
    fn durable_region(&self) -> Option<(u64, RegionRecord)> {
        None
    }

    /// Records the region's range and state as of `applied_index`, atomically with that
    /// index (a split, merge or rollback that changed them).
    ///
    /// # Errors
    /// [`EngineError`] when the engine cannot write; it is then unchanged.
    fn set_region(&self, record: &RegionRecord, applied_index: u64) -> Result<(), EngineError> {
        let _ = (record, applied_index);
        Ok(())
    }

    /// Replaces the region's data by an export taken at `applied_index` and records
    /// `record` with it (a Raft snapshot's apply). The default imports.
    ///
    /// # Errors
    /// As [`Engine::import`].
    fn import_region(
        &self,
        data: &[u8],
        applied_index: u64,
        record: &RegionRecord,
    ) -> Result<(), EngineError> {
        let _ = record;
        self.import(data, applied_index)
    }

    /// A view of all data as of now, visited entry by entry when called (a streamed Raft
    /// snapshot: [`crate::SnapshotStreamWriter`] encodes each entry as it comes). As
    /// [`Engine::export_view`], taking the view must be cheap and the closure sees nothing
    /// written after it was taken; unlike it, the closure must not collect the data (a disk
    /// engine iterates its own snapshot), so memory stays bounded whatever the region's
    /// size. Entries come per column family ([`Cf::ALL`]'s order), in key order. The default
    /// decodes [`Engine::export_view`]'s export (fine for an engine held in memory anyway).
    ///
    /// The closure's errors: the visitor's, as it returned it, or the engine's when it
    /// cannot read its data.
    fn entries_view(&self) -> EntriesView {
        let export = self.export_view();
        Box::new(move |visit| {
            let body = decode_export(&export())?;
            for (cf, map) in body.by_cf() {
                for (key, value) in &map {
                    visit(cf, key, value)?;
                }
            }
            Ok(())
        })
    }

    /// Replaces the region's data by the entries of a streamed snapshot taken at
    /// `applied_index`, read from `stream` (opened: its header read), and records the
    /// header's region record with it. A disk engine applies the entries as they are read,
    /// marked so that an apply cut short (by a crash or a damaged stream) leaves no durable
    /// state of the region ([`Engine::durable_region`] is `None` until the stream's end was
    /// read and checked). The default collects the entries and calls
    /// [`Engine::import_region`]: the engine is unchanged when the stream is bad.
    ///
    /// # Errors
    /// [`EngineError::SnapshotStream`] when the stream is truncated, damaged or cannot be
    /// read; [`EngineError`] when the engine cannot write.
    fn import_stream(
        &self,
        stream: &mut SnapshotStreamReader<'_>,
        applied_index: u64,
    ) -> Result<(), EngineError> {
        let mut cfs: [Vec<(Vec<u8>, Vec<u8>)>; 3] = Default::default();
        while let Some(entry) = stream.next_entry()? {
            let slot = Cf::ALL.iter().position(|c| *c == entry.cf);
            // `Cf::ALL` holds every column family.
            if let Some(slot) = slot.and_then(|i| cfs.get_mut(i)) {
                slot.push((entry.key.to_vec(), entry.value.to_vec()));
            }
        }
        let [lock, write, default] = &cfs;
        let export = encode_pairs([lock, write, default], applied_index);
        self.import_region(&export, applied_index, &stream.header().record)
    }

    /// Splits the region at the encoded key `at`: this engine keeps what is below and
    /// becomes `parent`, and the returned engine holds what is at or after it, as region
    /// `child_id` described by `child` at applied index `child_index`. The default moves
    /// the upper data into a new [`crate::MemEngine`]; a disk engine changes metadata
    /// only, in one atomic batch.
    ///
    /// # Errors
    /// [`EngineError`] when the engine cannot record the split; it is then unchanged.
    fn split_region(
        &self,
        at: &[u8],
        parent: &RegionRecord,
        parent_index: u64,
        child_id: u64,
        child: &RegionRecord,
        child_index: u64,
    ) -> Result<Arc<dyn Engine>, EngineError> {
        let _ = (parent, parent_index, child_id, child);
        let moved = self.split_off(at);
        let engine = crate::MemEngine::new();
        engine.import(&moved, child_index)?;
        Ok(Arc::new(engine))
    }

    /// Flow control for a region's leader: waits (bounded) while the engine holds more
    /// unflushed writes than it allows, before a write is proposed. Called on request
    /// threads, never while applying: waiting there would stall every region of the node.
    /// The default never waits.
    fn throttle_writes(&self) {}

    /// A closure that writes the engine's state of now (taken on the apply thread, between
    /// two applied batches) so that a restart resumes from it: a disk engine that keeps
    /// part of the region in memory between checkpoints (the locks of a `FjallRegion`)
    /// writes that part and its applied index. Called before the log is compacted up to
    /// now; the closure runs on another thread, and [`Engine::persist`] follows it. The
    /// default has nothing to write.
    ///
    /// The closure's errors: [`EngineError`] when the engine cannot write (the log is
    /// then not compacted).
    fn checkpoint(&self) -> Box<dyn FnOnce() -> Result<(), EngineError> + Send> {
        Box::new(|| Ok(()))
    }

    /// Makes everything written so far survive a power loss (an fsync of the engine's
    /// journal). The default has nothing to persist.
    ///
    /// # Errors
    /// [`EngineError::Io`] when the sync fails.
    fn persist(&self) -> Result<(), EngineError> {
        Ok(())
    }
}
