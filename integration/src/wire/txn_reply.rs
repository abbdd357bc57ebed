//! [`TxnReply`]: a node coordinator's answer to a [`super::TxnOp`], and
//! [`CoordinatorState`].

use serde::{Deserialize, Serialize};
use surge_txn::HotOutcome;

/// A successful answer to a [`super::TxnOp`].
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TxnReply {
    /// A transaction began: its handle in this connection's session and its `start_ts`.
    Begun {
        /// The handle for later operations on this connection.
        txn: u64,
        /// The transaction's snapshot.
        start_ts: u64,
    },
    /// A value (`None`: the key has none).
    Value(Option<Vec<u8>>),
    /// Key-value pairs in key order.
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
    /// A write was buffered, or the transaction rolled back.
    Done,
    /// The transaction committed (and, with a binlog, its binlog group is durable).
    Committed {
        /// Its commit timestamp.
        commit_ts: u64,
    },
    /// A hot-row update's outcome.
    Hot(HotOutcome),
    /// The coordinator's state.
    State(CoordinatorState),
}

/// Where a node's transaction coordinator stands.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CoordinatorState {
    /// Serving transactions.
    Ready {
        /// Its binlog directory (`None`: the node runs without a binlog).
        binlog_dir: Option<String>,
        /// In-doubt transactions of a previous run found already in the binlog.
        recovered_already_logged: u64,
        /// In-doubt transactions whose primary had committed, logged by recovery.
        recovered_logged_now: u64,
        /// In-doubt transactions rolled back by recovery.
        recovered_rolled_back: u64,
    },
    /// Settling a previous run's in-doubt transactions (it needs the cluster); transactions
    /// are refused until it is done.
    Recovering {
        /// Attempts so far.
        attempts: u64,
        /// Why the last attempt failed (`None`: the first is running).
        last_error: Option<String>,
    },
}
