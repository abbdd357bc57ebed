//! [`EngineError`]: why an engine refused a write or an import.

use super::snapshot_stream::SnapshotStreamError;

/// Why an engine operation failed.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The bytes given to [`crate::Engine::import`] are not an export.
    #[error("engine import: not an engine export ({detail})")]
    BadExport {
        /// The decoder's message.
        detail: String,
    },
    /// Bytes that should be an encoded key are not one (see [`crate::decode_key`]).
    #[error("malformed engine key at byte {offset}: {reason}")]
    BadKey {
        /// Where in the bytes the problem was found.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The engine cannot store more.
    #[error("engine {what}: {detail}")]
    Io {
        /// The operation.
        what: &'static str,
        /// The cause.
        detail: String,
    },
    /// The disk engine's directory could not be opened: damaged or unreadable files.
    #[error("engine at {path}: {detail}")]
    Open {
        /// The engine directory or the file found damaged.
        path: String,
        /// The cause.
        detail: String,
    },
    /// The engine directory belongs to another cluster or node.
    #[error("engine at {path} belongs to {found}, not to {expected}")]
    Identity {
        /// The engine directory.
        path: String,
        /// This node's identity (`cluster/node`).
        expected: String,
        /// The identity recorded in the directory.
        found: String,
    },
    /// A write of this region failed earlier (at `index`); the region accepts no write
    /// until the node restarts and replays its log from the engine's durable index, so a
    /// failed batch never leaves a hole under later ones.
    #[error("engine stopped for region {region} after a failed write at index {index}: {detail}")]
    Stopped {
        /// The region.
        region: u64,
        /// The Raft index of the failed batch.
        index: u64,
        /// The first failure.
        detail: String,
    },
    /// A streamed snapshot could not be written or read: the sink refused it, or the
    /// stream is truncated or damaged (the error names where).
    #[error(transparent)]
    SnapshotStream(#[from] SnapshotStreamError),
}
