//! [`TxnFailure`]: why a coordinator operation failed, as a value that crosses the wire and
//! turns back into the txn crate's [`TxnError`] on the client, so that a caller over TCP acts
//! on the same kinds (conflicts, `PessimisticLockNotFound`, deadlock, retries that ran out)
//! as one in process.

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;
use surge_txn::{HotReject, KeyError, RegionError, ServiceError, TxnError, WaitForEdge};

/// Why a [`super::TxnOp`] failed.
///
/// The first group mirrors [`TxnError`] variant by variant ([`TxnFailure::into_txn_error`]
/// gives it back); the last three are the session's own: the coordinator is not serving yet,
/// the handle is unknown, or the session holds too many transactions.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum TxnFailure {
    /// [`TxnError::WriteConflict`].
    #[error("write conflict (txn {start_ts} vs txn {conflict_start_ts})")]
    WriteConflict {
        /// This transaction.
        start_ts: u64,
        /// The writer.
        conflict_start_ts: u64,
        /// Its commit timestamp.
        conflict_commit_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// [`TxnError::LockWaitTimeout`].
    #[error("lock wait timeout (held by txn {lock_ts})")]
    LockWaitTimeout {
        /// The key.
        key: Vec<u8>,
        /// The holder.
        lock_ts: u64,
    },
    /// [`TxnError::Deadlock`].
    #[error("deadlock")]
    Deadlock {
        /// The cycle.
        chain: Vec<WaitForEdge>,
    },
    /// [`TxnError::KeyIsLocked`].
    #[error("key locked by txn {lock_ts}")]
    KeyIsLocked {
        /// The key.
        key: Vec<u8>,
        /// The holder.
        lock_ts: u64,
    },
    /// [`TxnError::PessimisticLockNotFound`].
    #[error("pessimistic lock of txn {start_ts} not found")]
    PessimisticLockNotFound {
        /// This transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// [`TxnError::PessimisticLockRolledBack`].
    #[error("txn {start_ts} rolled back")]
    PessimisticLockRolledBack {
        /// This transaction.
        start_ts: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// [`TxnError::TxnLockNotFound`].
    #[error("txn {start_ts} lock not found at commit")]
    TxnLockNotFound {
        /// This transaction.
        start_ts: u64,
        /// The primary.
        key: Vec<u8>,
    },
    /// [`TxnError::CommitTsExpired`].
    #[error("commit_ts {commit_ts} of txn {start_ts} expired")]
    CommitTsExpired {
        /// This transaction.
        start_ts: u64,
        /// The commit timestamp tried.
        commit_ts: u64,
        /// The primary's `min_commit_ts`.
        min_commit_ts: u64,
    },
    /// [`TxnError::AlreadyExist`].
    #[error("key already exists")]
    AlreadyExist {
        /// The key.
        key: Vec<u8>,
    },
    /// [`TxnError::Undetermined`].
    #[error("txn {start_ts}: outcome undetermined: {detail}")]
    Undetermined {
        /// This transaction.
        start_ts: u64,
        /// What was lost.
        detail: String,
    },
    /// [`TxnError::Region`].
    #[error("region error: {0}")]
    Region(RegionError),
    /// [`TxnError::Unavailable`].
    #[error("unavailable: {0}")]
    Unavailable(ServiceFailure),
    /// [`TxnError::Protocol`].
    #[error("protocol error: {detail}")]
    Protocol {
        /// What was unexpected.
        detail: String,
    },
    /// [`TxnError::Key`].
    #[error("key error: {0}")]
    Key(KeyError),
    /// [`TxnError::TxnFinished`].
    #[error("transaction already finished")]
    TxnFinished,
    /// [`TxnError::Binlog`].
    #[error("binlog: {detail}")]
    Binlog {
        /// What failed.
        detail: String,
    },
    /// [`TxnError::HotUpdateRejected`].
    #[error("hot update refused")]
    HotUpdateRejected {
        /// The key.
        key: Vec<u8>,
        /// Why.
        reason: HotRefusal,
        /// `rollback_on_fail` was set.
        rollback: bool,
    },
    /// [`TxnError::TargetAffectRow`].
    #[error("target_affect_row({expected}) not met: {actual}")]
    TargetAffectRow {
        /// The key.
        key: Vec<u8>,
        /// Expected rows.
        expected: u64,
        /// Affected rows.
        actual: u64,
        /// `rollback_on_fail` was set.
        rollback: bool,
    },
    /// A [`TxnError`] kind this protocol version does not name (the txn crate added one):
    /// its message.
    #[error("{detail}")]
    Other {
        /// The error's message.
        detail: String,
    },
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

/// [`ServiceError`] on the wire.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ServiceFailure {
    /// [`ServiceError::Unavailable`].
    #[error("node {node} unavailable: {detail}")]
    Unavailable {
        /// The node.
        node: NodeId,
        /// Why.
        detail: String,
    },
    /// [`ServiceError::Timeout`].
    #[error("node {node}: no answer within {timeout_ms} ms")]
    Timeout {
        /// The node.
        node: NodeId,
        /// The deadline.
        timeout_ms: u64,
    },
    /// [`ServiceError::Protocol`], or a kind this version does not name.
    #[error("node {node}: protocol error: {detail}")]
    Protocol {
        /// The node.
        node: NodeId,
        /// What was wrong.
        detail: String,
    },
}

/// [`HotReject`] on the wire.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum HotRefusal {
    /// [`HotReject::BelowMin`].
    #[error("new value {value} is below {min}")]
    BelowMin {
        /// The value.
        value: i64,
        /// The bound.
        min: i64,
    },
    /// [`HotReject::AboveMax`].
    #[error("new value {value} is above {max}")]
    AboveMax {
        /// The value.
        value: i64,
        /// The bound.
        max: i64,
    },
    /// [`HotReject::Overflow`].
    #[error("{current} + {delta} overflows")]
    Overflow {
        /// The value before.
        current: i64,
        /// The delta.
        delta: i64,
    },
    /// [`HotReject::NotAnInteger`].
    #[error("stored value is not an integer")]
    NotAnInteger {
        /// The value's first bytes.
        prefix: Vec<u8>,
    },
}

impl From<&ServiceError> for ServiceFailure {
    fn from(e: &ServiceError) -> ServiceFailure {
        match e {
            ServiceError::Unavailable { node, detail } => ServiceFailure::Unavailable {
                node: *node,
                detail: detail.clone(),
            },
            ServiceError::Timeout { node, timeout_ms } => ServiceFailure::Timeout {
                node: *node,
                timeout_ms: *timeout_ms,
            },
            ServiceError::Protocol { node, detail } => ServiceFailure::Protocol {
                node: *node,
                detail: detail.clone(),
            },
            other => ServiceFailure::Protocol {
                node: 0,
                detail: other.to_string(),
            },
        }
    }
}

impl From<ServiceFailure> for ServiceError {
    fn from(f: ServiceFailure) -> ServiceError {
        match f {
            ServiceFailure::Unavailable { node, detail } => {
                ServiceError::Unavailable { node, detail }
            }
            ServiceFailure::Timeout { node, timeout_ms } => {
                ServiceError::Timeout { node, timeout_ms }
            }
            ServiceFailure::Protocol { node, detail } => ServiceError::Protocol { node, detail },
        }
    }
}

impl From<&HotReject> for HotRefusal {
    fn from(r: &HotReject) -> HotRefusal {
        match r {
            HotReject::BelowMin { value, min } => HotRefusal::BelowMin {
                value: *value,
                min: *min,
            },
            HotReject::AboveMax { value, max } => HotRefusal::AboveMax {
                value: *value,
                max: *max,
            },
            HotReject::Overflow { current, delta } => HotRefusal::Overflow {
                current: *current,
                delta: *delta,
            },
            HotReject::NotAnInteger { prefix } => HotRefusal::NotAnInteger {
                prefix: prefix.clone(),
            },
            // A refusal kind this version does not name: its closest wire form keeps the
            // message's meaning (the member was refused) without inventing bounds.
            other => HotRefusal::NotAnInteger {
                prefix: other.to_string().into_bytes(),
            },
        }
    }
}

impl From<HotRefusal> for HotReject {
    fn from(r: HotRefusal) -> HotReject {
        match r {
            HotRefusal::BelowMin { value, min } => HotReject::BelowMin { value, min },
            HotRefusal::AboveMax { value, max } => HotReject::AboveMax { value, max },
            HotRefusal::Overflow { current, delta } => HotReject::Overflow { current, delta },
            HotRefusal::NotAnInteger { prefix } => HotReject::NotAnInteger { prefix },
        }
    }
}

impl From<&TxnError> for TxnFailure {
    fn from(e: &TxnError) -> TxnFailure {
        match e.clone() {
            TxnError::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
            } => TxnFailure::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
            },
            TxnError::LockWaitTimeout { key, lock_ts } => {
                TxnFailure::LockWaitTimeout { key, lock_ts }
            }
            TxnError::Deadlock { chain } => TxnFailure::Deadlock { chain },
            TxnError::KeyIsLocked { key, lock_ts } => TxnFailure::KeyIsLocked { key, lock_ts },
            TxnError::PessimisticLockNotFound { start_ts, key } => {
                TxnFailure::PessimisticLockNotFound { start_ts, key }
            }
            TxnError::PessimisticLockRolledBack { start_ts, key } => {
                TxnFailure::PessimisticLockRolledBack { start_ts, key }
            }
            TxnError::TxnLockNotFound { start_ts, key } => {
                TxnFailure::TxnLockNotFound { start_ts, key }
            }
            TxnError::CommitTsExpired {
                start_ts,
                commit_ts,
                min_commit_ts,
            } => TxnFailure::CommitTsExpired {
                start_ts,
                commit_ts,
                min_commit_ts,
            },
            TxnError::AlreadyExist { key } => TxnFailure::AlreadyExist { key },
            TxnError::Undetermined { start_ts, detail } => {
                TxnFailure::Undetermined { start_ts, detail }
            }
            TxnError::Region(r) => TxnFailure::Region(r),
            TxnError::Unavailable(s) => TxnFailure::Unavailable(ServiceFailure::from(&s)),
            TxnError::Protocol { detail } => TxnFailure::Protocol { detail },
            TxnError::Key(k) => TxnFailure::Key(k),
            TxnError::TxnFinished => TxnFailure::TxnFinished,
            TxnError::Binlog { detail } => TxnFailure::Binlog { detail },
            TxnError::HotUpdateRejected {
                key,
                reason,
                rollback,
            } => TxnFailure::HotUpdateRejected {
                key,
                reason: HotRefusal::from(&reason),
                rollback,
            },
            TxnError::TargetAffectRow {
                key,
                expected,
                actual,
                rollback,
            } => TxnFailure::TargetAffectRow {
                key,
                expected,
                actual,
                rollback,
            },
            other => TxnFailure::Other {
                detail: other.to_string(),
            },
        }
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
        Ok(match self {
            TxnFailure::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
            } => TxnError::WriteConflict {
                start_ts,
                conflict_start_ts,
                conflict_commit_ts,
                key,
            },
            TxnFailure::LockWaitTimeout { key, lock_ts } => {
                TxnError::LockWaitTimeout { key, lock_ts }
            }
            TxnFailure::Deadlock { chain } => TxnError::Deadlock { chain },
            TxnFailure::KeyIsLocked { key, lock_ts } => TxnError::KeyIsLocked { key, lock_ts },
            TxnFailure::PessimisticLockNotFound { start_ts, key } => {
                TxnError::PessimisticLockNotFound { start_ts, key }
            }
            TxnFailure::PessimisticLockRolledBack { start_ts, key } => {
                TxnError::PessimisticLockRolledBack { start_ts, key }
            }
            TxnFailure::TxnLockNotFound { start_ts, key } => {
                TxnError::TxnLockNotFound { start_ts, key }
            }
            TxnFailure::CommitTsExpired {
                start_ts,
                commit_ts,
                min_commit_ts,
            } => TxnError::CommitTsExpired {
                start_ts,
                commit_ts,
                min_commit_ts,
            },
            TxnFailure::AlreadyExist { key } => TxnError::AlreadyExist { key },
            TxnFailure::Undetermined { start_ts, detail } => {
                TxnError::Undetermined { start_ts, detail }
            }
            TxnFailure::Region(r) => TxnError::Region(r),
            TxnFailure::Unavailable(s) => TxnError::Unavailable(s.into()),
            TxnFailure::Protocol { detail } | TxnFailure::Other { detail } => {
                TxnError::Protocol { detail }
            }
            TxnFailure::Key(k) => TxnError::Key(k),
            TxnFailure::TxnFinished => TxnError::TxnFinished,
            TxnFailure::Binlog { detail } => TxnError::Binlog { detail },
            TxnFailure::HotUpdateRejected {
                key,
                reason,
                rollback,
            } => TxnError::HotUpdateRejected {
                key,
                reason: reason.into(),
                rollback,
            },
            TxnFailure::TargetAffectRow {
                key,
                expected,
                actual,
                rollback,
            } => TxnError::TargetAffectRow {
                key,
                expected,
                actual,
                rollback,
            },
            session @ (TxnFailure::NotReady { .. }
            | TxnFailure::NoSuchTxn { .. }
            | TxnFailure::SessionFull { .. }) => return Err(session),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
