//! [`WorkloadError`]: why a benchmark point could not be measured.

use crate::LockMode;

/// Why a benchmark point could not be measured (a failing transaction is not one: it counts
/// as aborted).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The cluster did not take the lock mode a slice needs.
    #[error("setting lock mode {mode}: {detail}")]
    LockMode {
        /// The mode.
        mode: LockMode,
        /// The cluster's answer.
        detail: String,
    },
    /// A client thread panicked.
    #[error("a client thread panicked")]
    ClientPanicked,
}
