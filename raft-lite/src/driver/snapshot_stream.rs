//! Streamed snapshots for followers: the leader's sender and the follower's spool.

/// The size of one [`crate::MessageKind::SnapshotChunk`]'s data (the last may be smaller).
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;
