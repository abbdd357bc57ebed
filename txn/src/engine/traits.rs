//! [`Engine`] and [`Snapshot`]: the seam between a region's data and everything above it.

use super::cf::Cf;
use super::error::EngineError;
use super::write_batch::WriteBatch;

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
}

/// A region's data: three column families, atomic batches, consistent snapshots.
///
/// Implementations: [`crate::MemEngine`] (ordered maps in memory). A disk engine implements
/// the same trait without the layers above changing.
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
    /// returns them as an export (for a region split: the new region's data).
    fn split_off(&self, at: &[u8]) -> Vec<u8>;

    /// Adds every entry of an export to the data, keeping what is there (for a merge: the
    /// source region's data joins the target's). The applied index is unchanged.
    ///
    /// # Errors
    /// [`EngineError::BadExport`] when `data` is not an export; the engine is then unchanged.
    fn ingest(&self, data: &[u8]) -> Result<(), EngineError>;

    /// A user key that splits the data into two halves of about equal size, if there are at
    /// least two distinct keys (the key of the write column family's middle record).
    fn middle_key(&self) -> Option<Vec<u8>>;
}
