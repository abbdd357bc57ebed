//! The crate's error type.

use std::path::PathBuf;

use crate::NodeId;

/// Everything that can go wrong in raft-lite.
///
/// Retryable outcomes ([`Error::NotLeader`], [`Error::ProposalDropped`],
/// [`Error::TransferInProgress`], [`Error::ConfChangePending`], [`Error::LeaderNotReady`])
/// are ordinary values the caller acts on. Storage errors ([`Error::Io`], [`Error::Corrupt`])
/// are fatal for the component that returned them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// This node is not the leader; `leader` is the last known leader, if any.
    #[error("raft: not leader (last known leader {leader:?})")]
    NotLeader {
        /// The last known leader of the group.
        leader: Option<NodeId>,
    },
    /// The proposal was not committed: leadership changed and its entry was overwritten,
    /// or the node stopped.
    #[error("raft: proposal dropped")]
    ProposalDropped,
    /// Proposals are refused while leadership is being transferred.
    #[error("raft: leader transfer to {to} in progress")]
    TransferInProgress {
        /// The transfer target.
        to: NodeId,
    },
    /// Only one configuration change may be pending at a time.
    #[error("raft: configuration change pending at index {index}")]
    ConfChangePending {
        /// Index of the pending (uncommitted) change.
        index: u64,
    },
    /// A new leader must commit an entry of its own term before it may change the
    /// configuration or serve reads.
    #[error("raft: leader has not yet committed an entry of its term {term}")]
    LeaderNotReady {
        /// The leader's current term.
        term: u64,
    },
    /// The configuration change is not allowed.
    #[error("raft: invalid configuration change for node {node}: {reason}")]
    InvalidConfChange {
        /// The node the change names.
        node: NodeId,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The leader transfer target is not allowed.
    #[error("raft: cannot transfer leadership to {to}: {reason}")]
    InvalidTransfer {
        /// The requested target.
        to: NodeId,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A configuration value is out of range.
    #[error("raft: invalid config field {field}: {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `step`, `tick` or `propose` was called between `ready()` and `advance()`.
    #[error("raft: a Ready is outstanding; call advance() first")]
    ReadyOutstanding,
    /// The proposal may or may not have been committed (its node installed a snapshot
    /// covering it, or lost leadership before the entry committed); the application must
    /// find out from its state.
    #[error("raft: proposal outcome unknown")]
    OutcomeUnknown,
    /// The proposal is larger than the configured limit.
    #[error("raft: proposal of {size} bytes exceeds the limit of {limit} bytes")]
    ProposalTooLarge {
        /// Size of the proposal.
        size: usize,
        /// Configured limit.
        limit: usize,
    },
    /// A write the log could not read back (a log entry, snapshot data or record above its
    /// limit): refused before anything of it was written; the log stays usable.
    #[error("raft: {what} of {size} bytes exceeds the log's limit of {limit} bytes")]
    WriteTooLarge {
        /// What was too large.
        what: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// Bytes could not be decoded.
    #[error("raft: cannot decode {what} at byte {offset}: {reason}")]
    Decode {
        /// What was being decoded.
        what: &'static str,
        /// Offset of the problem within the input.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// An I/O operation failed.
    #[error("raft: i/o error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A log file is corrupt somewhere other than a torn tail of the last segment.
    #[error("raft: corrupt log file {path} at offset {offset}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset of the bad record.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// The data directory is locked by another process.
    #[error("raft: data directory {path} is locked by another process")]
    Locked {
        /// The data directory.
        path: PathBuf,
    },
    /// The group is not hosted on this node.
    #[error("raft: unknown group {group}")]
    UnknownGroup {
        /// The group id.
        group: u64,
    },
    /// The group is already hosted on this node.
    #[error("raft: group {group} already exists")]
    GroupExists {
        /// The group id.
        group: u64,
    },
    /// The node (driver) has stopped.
    #[error("raft: node stopped")]
    Stopped,
    /// A wait timed out.
    #[error("raft: timed out")]
    Timeout,
    /// The state machine failed; the message is the state machine's.
    #[error("raft: state machine error: {message}")]
    StateMachine {
        /// The state machine's description of the failure.
        message: String,
    },
}

impl Error {
    /// True for outcomes a caller may retry (possibly on another node).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::NotLeader { .. }
                | Error::ProposalDropped
                | Error::TransferInProgress { .. }
                | Error::ConfChangePending { .. }
                | Error::LeaderNotReady { .. }
                | Error::Timeout
        )
    }

    /// A copy of this error for a second waiter (`std::io::Error` is not `Clone`: its kind
    /// and message are kept).
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::NotLeader { leader } => Error::NotLeader { leader: *leader },
            Error::ProposalDropped => Error::ProposalDropped,
            Error::TransferInProgress { to } => Error::TransferInProgress { to: *to },
            Error::ConfChangePending { index } => Error::ConfChangePending { index: *index },
            Error::LeaderNotReady { term } => Error::LeaderNotReady { term: *term },
            Error::InvalidConfChange { node, reason } => Error::InvalidConfChange {
                node: *node,
                reason,
            },
            Error::InvalidTransfer { to, reason } => Error::InvalidTransfer { to: *to, reason },
            Error::ReadyOutstanding => Error::ReadyOutstanding,
            Error::InvalidConfig { field, reason } => Error::InvalidConfig { field, reason },
            Error::OutcomeUnknown => Error::OutcomeUnknown,
            Error::ProposalTooLarge { size, limit } => Error::ProposalTooLarge {
                size: *size,
                limit: *limit,
            },
            Error::WriteTooLarge { what, size, limit } => Error::WriteTooLarge {
                what,
                size: *size,
                limit: *limit,
            },
            Error::Decode {
                what,
                offset,
                reason,
            } => Error::Decode {
                what,
                offset: *offset,
                reason,
            },
            Error::Io { path, source } => Error::Io {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corrupt {
                path,
                offset,
                reason,
            } => Error::Corrupt {
                path: path.clone(),
                offset: *offset,
                reason,
            },
            Error::Locked { path } => Error::Locked { path: path.clone() },
            Error::UnknownGroup { group } => Error::UnknownGroup { group: *group },
            Error::GroupExists { group } => Error::GroupExists { group: *group },
            Error::Stopped => Error::Stopped,
            Error::Timeout => Error::Timeout,
            Error::StateMachine { message } => Error::StateMachine {
                message: message.clone(),
            },
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
