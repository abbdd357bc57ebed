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
    /// A Raft node failed or a proposal did not complete.
    #[error("raft: {0}")]
    Raft(#[from] surge_raft_lite::Error),
    /// The binlog failed.
    #[error("binlog: {0}")]
    Binlog(#[from] surge_binlog::Error),
    /// The hot-row coordinator refused its configuration.
    #[error("hotspot: {0}")]
    HotspotConfig(#[from] surge_hotspot::ConfigError),
    /// A file of the scenario could not be created, written or removed.
    #[error("scenario file: {0}")]
    Io(#[from] std::io::Error),
    /// A component did not behave as the seed describes; the message says what.
    #[error("scenario went wrong: {0}")]
    Unexpected(&'static str),
}
