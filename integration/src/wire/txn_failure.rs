//! [`TxnFailure`]: why a coordinator operation failed, as a value that crosses the wire and
//! turns back into the txn crate's [`TxnError`] on the client, so that a caller over TCP acts
//! on the same kinds (conflicts, `PessimisticLockNotFound`, deadlock, retries that ran out)
//! as one in process.

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;
use surge_txn::TxnError;

/// Why a [`super::TxnOp`] failed: the coordinator's [`TxnError`] as it is (it is
/// serde-encodable; [`TxnFailure::into_txn_error`] gives it back), or one of the session's
/// own kinds: the coordinator is not serving yet, the handle is unknown, or the session holds
/// too many transactions.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum TxnFailure {
    /// The transaction operation failed in the coordinator.
    #[error(transparent)]
    Txn(TxnError),
    /// The node's coordinator is not serving transactions yet: its recovery of a previous
    /// run's in-doubt transactions has not finished (it needs the rest of the cluster).
    /// Nothing ran; another node, or this one later, may take the operation.
    #[error("node {node}: transaction coordinator not ready: {detail}")]
    NotReady {
        /// The node.
        node: NodeId,
        /// What it is waiting for.
        detail: String,
    },
    /// No open transaction with this handle on this connection (never begun here, or
    /// already committed or rolled back).
    #[error("no open transaction {txn} on this connection")]
    NoSuchTxn {
        /// The handle.
        txn: u64,
    },
    /// The connection already holds its maximum of open transactions.
    #[error("this connection already holds {max} open transactions")]
    SessionFull {
        /// The limit.
        max: u64,
    },
}

impl From<&TxnError> for TxnFailure {
    fn from(e: &TxnError) -> TxnFailure {
        TxnFailure::Txn(e.clone())
    }
}

impl TxnFailure {
    /// The txn crate's error this failure stands for; `Err(self)` for the session's own
    /// kinds ([`TxnFailure::NotReady`], [`TxnFailure::NoSuchTxn`],
    /// [`TxnFailure::SessionFull`]), which have no [`TxnError`] counterpart.
    ///
    /// # Errors
    /// `self`, for the session's own kinds.
    pub fn into_txn_error(self) -> Result<TxnError, TxnFailure> {
        match self {
            TxnFailure::Txn(e) => Ok(e),
            other => Err(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_txn::{HotReject, ServiceError};

    /// Every kind a caller acts on survives the trip through postcard and back into a
    /// `TxnError` unchanged.
    #[test]
    fn txn_errors_survive_the_wire() {
        let errors = [
            TxnError::WriteConflict {
                start_ts: 1,
                conflict_start_ts: 2,
                conflict_commit_ts: 3,
                key: b"k".to_vec(),
            },
            TxnError::PessimisticLockNotFound {
                start_ts: 9,
                key: b"stock".to_vec(),
            },
            TxnError::Deadlock { chain: Vec::new() },
            TxnError::LockWaitTimeout {
                key: b"a".to_vec(),
                lock_ts: 4,
            },
            TxnError::Undetermined {
                start_ts: 5,
                detail: "lost".into(),
            },
            TxnError::Unavailable(ServiceError::Timeout {
                node: 2,
                timeout_ms: 10,
            }),
            TxnError::HotUpdateRejected {
                key: b"h".to_vec(),
                reason: HotReject::BelowMin { value: -1, min: 0 },
                rollback: true,
            },
            TxnError::TxnFinished,
        ];
        for e in errors {
            let wire = postcard::to_allocvec(&TxnFailure::from(&e)).unwrap();
            let back: TxnFailure = postcard::from_bytes(&wire).unwrap();
            assert_eq!(back.into_txn_error().unwrap(), e);
        }
        let own = TxnFailure::NoSuchTxn { txn: 3 };
        assert_eq!(own.clone().into_txn_error(), Err(own));
    }
}
