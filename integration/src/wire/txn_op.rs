//! [`TxnOp`]: one step of a transaction run by a node's coordinator, and [`SessionMode`].

use serde::{Deserialize, Serialize};
use surge_txn::TxnMode;

use super::hot_request::{WireHints, WireHotOp};

/// A transaction's mode on the wire (the txn crate's [`TxnMode`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionMode {
    /// [`TxnMode::Optimistic`].
    Optimistic,
    /// [`TxnMode::Pessimistic`].
    Pessimistic,
}

impl TryFrom<TxnMode> for SessionMode {
    /// A mode the wire has no name for (`TxnMode` is `#[non_exhaustive]`: a mode added to
    /// the txn crate needs one here too), handed back.
    type Error = TxnMode;

    fn try_from(mode: TxnMode) -> Result<SessionMode, TxnMode> {
        match mode {
            TxnMode::Optimistic => Ok(SessionMode::Optimistic),
            TxnMode::Pessimistic => Ok(SessionMode::Pessimistic),
            other => Err(other),
        }
    }
}

impl From<SessionMode> for TxnMode {
    fn from(mode: SessionMode) -> TxnMode {
        match mode {
            SessionMode::Optimistic => TxnMode::Optimistic,
            SessionMode::Pessimistic => TxnMode::Pessimistic,
        }
    }
}

/// One operation on a node's transaction coordinator. `txn` is the handle
/// [`TxnOp::Begin`] returned on the same connection: transactions live in the connection's
/// session, and a connection that closes rolls back those still open.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnOp {
    /// Begins a transaction; answered with [`super::TxnReply::Begun`].
    Begin {
        /// Optimistic or pessimistic.
        mode: SessionMode,
    },
    /// `Transaction::get`; answered with [`super::TxnReply::Value`].
    Get {
        /// The transaction.
        txn: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// `Transaction::batch_get`; answered with [`super::TxnReply::Pairs`].
    BatchGet {
        /// The transaction.
        txn: u64,
        /// The keys.
        keys: Vec<Vec<u8>>,
    },
    /// `Transaction::scan` of `[start, end)`; answered with [`super::TxnReply::Pairs`].
    Scan {
        /// The transaction.
        txn: u64,
        /// First key.
        start: Vec<u8>,
        /// End key (exclusive); `None`: the end of the key space.
        end: Option<Vec<u8>>,
        /// At most this many pairs.
        limit: u64,
    },
    /// `Transaction::get_for_update`; answered with [`super::TxnReply::Value`].
    GetForUpdate {
        /// The transaction.
        txn: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// `Transaction::put`; answered with [`super::TxnReply::Done`].
    Put {
        /// The transaction.
        txn: u64,
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `Transaction::insert` (fails if the key has a value); answered with
    /// [`super::TxnReply::Done`].
    Insert {
        /// The transaction.
        txn: u64,
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `Transaction::delete`; answered with [`super::TxnReply::Done`].
    Delete {
        /// The transaction.
        txn: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// `Transaction::commit`; answered with [`super::TxnReply::Committed`]. The
    /// transaction leaves the session whatever the outcome.
    Commit {
        /// The transaction.
        txn: u64,
    },
    /// `Transaction::rollback`; answered with [`super::TxnReply::Done`]. The transaction
    /// leaves the session.
    Rollback {
        /// The transaction.
        txn: u64,
    },
    /// `TxnClient::hot_update` (AliSQL hot-row group commit, no session transaction);
    /// answered with [`super::TxnReply::Hot`].
    HotUpdate {
        /// The row.
        key: Vec<u8>,
        /// What to do to its integer value.
        op: WireHotOp,
        /// The statement's hints.
        hints: WireHints,
    },
    /// The coordinator's state (ready, recovering, off); answered with
    /// [`super::TxnReply::State`]. Needs no ready coordinator.
    State,
}
