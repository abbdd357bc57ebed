//! The error of a demo scenario.

/// Why a scenario could not run to its end.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The in-process cluster did not start, or a node or region change failed.
    #[error("cluster: {0}")]
    Cluster(#[from] surge_txn::ClusterError),
    /// A transactional step that the scenario needs to succeed failed.
    #[error("transaction: {0}")]
    Txn(#[from] surge_txn::TxnError),
    /// The binlog failed.
    #[error("binlog: {0}")]
    Binlog(#[from] surge_binlog::Error),
    /// The hot-row coordinator refused its configuration.
    #[error("hotspot: {0}")]
    HotspotConfig(#[from] surge_hotspot::ConfigError),
    /// A file of the scenario could not be created, written or removed.
    #[error("scenario file: {0}")]
    Io(#[from] std::io::Error),
    /// What a scenario needs around the store (a port, a client connection) could not be
    /// set up.
    #[error("setup: {detail}")]
    Setup {
        /// What failed.
        detail: String,
    },
    /// A SQL statement the scenario needs to succeed failed.
    #[error("SQL `{statement}`: {detail}")]
    Sql {
        /// The statement.
        statement: String,
        /// The server's error.
        detail: String,
    },
    /// A component did not behave as the scenario expects; the message says what.
    #[error("scenario went wrong: {0}")]
    Unexpected(&'static str),
}
