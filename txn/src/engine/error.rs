//! [`EngineError`]: why an engine refused a write or an import.

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
}
