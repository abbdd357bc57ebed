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
    /// The engine cannot store more.
    #[error("engine {what}: {detail}")]
    Io {
        /// The operation.
        what: &'static str,
        /// The cause.
        detail: String,
    },
}
