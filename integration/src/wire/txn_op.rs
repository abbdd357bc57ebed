//! [`TxnOp`]: one step of a transaction run by a node's coordinator.

use serde::{Deserialize, Serialize};
use surge_txn::{HotHints, HotOp, TxnMode};

/// One operation on a node's transaction coordinator. `txn` is the handle
/// [`TxnOp::Begin`] returned on the same connection: transactions live in the connection's
/// session, and a connection that closes rolls back those still open.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnOp {
    /// Begins a transaction; answered with [`super::TxnReply::Begun`].
    Begin {
        /// Optimistic or pessimistic.
        mode: TxnMode,
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
        op: HotOp,
        /// The statement's hints.
        hints: HotHints,
    },
    /// The coordinator's state (ready, recovering, off); answered with
    /// [`super::TxnReply::State`]. Needs no ready coordinator.
    State,
}
