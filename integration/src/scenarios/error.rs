//! The error of a demo scenario.

/// Why a scenario could not run to its end.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A lock-table operation failed.
    #[error("lock table: {0}")]
    Locks(#[from] surge_lock_table::LockError),
    /// The deadlock detector refused a wait that the scenario expected to be accepted.
    #[error("unexpected {0}")]
    Deadlock(#[from] surge_lock_table::Deadlock),
    /// A component did not behave as the seed describes; the message says what.
    #[error("scenario went wrong: {0}")]
    Unexpected(&'static str),
}
