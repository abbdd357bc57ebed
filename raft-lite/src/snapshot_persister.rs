//! Persisting a group's own snapshots off the driver thread.

use crate::{Result, Snapshot};

/// A snapshot file made durable by a [`SnapshotPersister`], as a log record refers to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    /// File name inside the store's snapshot directory.
    pub name: String,
    /// Length of the file's body (metadata and data), checked at replay.
    pub len: u64,
    /// CRC-32 of the file's body, checked at replay.
    pub crc: u32,
}

/// Writes snapshot files for a [`crate::LogStore`] from another thread.
///
/// A [`crate::Node`] whose store offers one ([`crate::LogStore::snapshot_persister`])
/// hands the snapshots its groups take themselves to a background thread that calls
/// [`SnapshotPersister::persist`]; once the file is durable, the driver thread records it
/// with [`crate::LogStore::write_snapshot_ref`] and compacts the group's log. So the file
/// write and its fsync never stall the node's other groups, as TiKV generates snapshots
/// on a region worker instead of its raftstore thread.
pub trait SnapshotPersister: Send + Sync + std::fmt::Debug {
    /// Writes `snapshot` of `group` to a new file, durably (file and directory synced).
    /// Nothing refers to the file until [`crate::LogStore::write_snapshot_ref`].
    ///
    /// # Errors
    /// I/O errors, or a snapshot too large to be read back; nothing was referenced, so
    /// the log is intact and the snapshot may be retried later.
    fn persist(&self, group: u64, snapshot: &Snapshot) -> Result<SnapshotFile>;

    /// Deletes a file that will never be referenced (its group is gone, or already has a
    /// newer snapshot). Best effort: a file left behind is deleted at the next open.
    fn discard(&self, file: &SnapshotFile);
}
