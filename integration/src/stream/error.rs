//! [`StreamError`]: what can go wrong keeping the cluster's replica stream.

use std::path::PathBuf;

/// An error of the replica stream's files or of its source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// A file operation failed.
    #[error("replica stream: cannot {action} {path}: {source}")]
    Io {
        /// What was being done (`"create"`, `"fsync"`, ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The cursor file is unreadable or contradicts the files beside it.
    #[error("replica stream: cursor {path} is unusable: {detail}")]
    BadCursor {
        /// The cursor file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A transaction came with a commit timestamp not above what the stream already holds.
    #[error(
        "replica stream: transaction with commit_ts {commit_ts} arrived after the stream passed {done_ts}"
    )]
    OutOfOrder {
        /// The late transaction's commit timestamp.
        commit_ts: u64,
        /// The watermark the stream had already consumed.
        done_ts: u64,
    },
    /// A group cannot be written as a binlog group.
    #[error("replica stream: transaction {start_ts} (commit_ts {commit_ts}): {detail}")]
    BadGroup {
        /// The transaction's start timestamp.
        start_ts: u64,
        /// Its commit timestamp.
        commit_ts: u64,
        /// Why.
        detail: String,
    },
    /// This node's stream settings differ from those the cluster's first node claimed:
    /// its copy would not be the same bytes, so it does not write one.
    #[error(
        "replica stream: this node's settings ({node}) differ from the cluster's ({cluster}); \
         start every node with the same --stream-file-size and --stream-large-group"
    )]
    SettingsDiffer {
        /// This node's settings.
        node: String,
        /// The cluster's (the first claimed).
        cluster: String,
    },
    /// The cluster collected stream records this node still needs: it was not counted when
    /// they went (down longer than the position TTL, a new data directory, or it had not
    /// published its position yet), so its copy can no longer be completed from the
    /// cluster's records. Its files up to the cursor stay valid and served.
    #[error(
        "replica stream: this node needs the cluster's records from record_ts {needed}, but \
         records below {collected} were collected while this node was not counted; its copy \
         stops here (see \"Retention\" in the surgedb README)"
    )]
    Collected {
        /// The smallest record timestamp this node's next read needs.
        needed: u64,
        /// The cluster's collected mark.
        collected: u64,
    },
    /// `PURGE BINARY LOGS TO` named a file the stream does not list.
    #[error("replica stream: target log {name:?} not found in the stream's files")]
    NoSuchFile {
        /// The name given.
        name: String,
    },
    /// The cluster's stream records were laid out by another build of `surge-txn`
    /// (`TxnError::StreamLayout`): they would read back wrong, so this node writes no copy.
    #[error("replica stream: {detail}; this node writes no copy")]
    Layout {
        /// The transaction layer's error.
        detail: String,
    },
    /// Reading the cluster's stream records failed (retried by the follower).
    #[error("replica stream: reading the cluster's records: {detail}")]
    Source {
        /// The transaction layer's error.
        detail: String,
    },
}

impl StreamError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        StreamError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
