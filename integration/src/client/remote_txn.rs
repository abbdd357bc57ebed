//! [`RemoteTxn`]: a transaction run by a node's coordinator, driven over TCP.

use std::sync::Arc;

use surge_raft_lite::NodeId;
use surge_txn::{KvPair, TxnError, TxnMode};

use super::cluster_client::ClientError;
use super::remote_service::{Conn, RemoteService};
use crate::wire::{TxnOp, TxnReply};

/// A transaction that lives in a node's coordinator ([`crate::Client::begin`]): every
/// operation is one round trip on a connection held for the transaction, and the node does
/// the work (locks, two-phase commit, lock resolution, and the commit's record in that
/// node's binlog).
///
/// The methods mirror `surge_txn::Transaction`'s and fail with the same [`TxnError`] kinds
/// (inside [`ClientError::Txn`]). Losing the connection finishes the transaction: the node
/// rolls back a transaction whose connection closed, and a commit whose answer was lost is
/// reported as [`TxnError::Undetermined`] (it may have committed). Dropping a `RemoteTxn`
/// without commit or rollback closes its connection, so the node rolls it back.
pub struct RemoteTxn {
    remote: Arc<RemoteService>,
    /// `None` once finished (committed, rolled back, or the connection lost).
    conn: Option<Conn>,
    handle: u64,
    start_ts: u64,
    mode: TxnMode,
}

impl std::fmt::Debug for RemoteTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteTxn")
            .field("node", &self.remote.node())
            .field("start_ts", &self.start_ts)
            .field("mode", &self.mode)
            .field("finished", &self.conn.is_none())
            .finish()
    }
}

impl RemoteTxn {
    /// Begins a transaction on `remote`'s coordinator over `conn`.
    pub(crate) fn begin(
        remote: Arc<RemoteService>,
        mut conn: Conn,
        mode: TxnMode,
    ) -> Result<RemoteTxn, ClientError> {
        let op = TxnOp::Begin { mode };
        match remote.txn_call(&mut conn, op)? {
            Ok(TxnReply::Begun { txn, start_ts }) => Ok(RemoteTxn {
                remote,
                conn: Some(conn),
                handle: txn,
                start_ts,
                mode,
            }),
            Ok(other) => Err(unexpected(&remote, "begin", &other)),
            Err(failure) => {
                // Nothing is open on the connection: it can serve the pool again.
                remote.close_session(conn);
                Err(ClientError::from(failure))
            }
        }
    }

    /// The node whose coordinator runs the transaction.
    pub fn node(&self) -> NodeId {
        self.remote.node()
    }

    /// The transaction's snapshot timestamp.
    pub fn start_ts(&self) -> u64 {
        self.start_ts
    }

    /// The transaction's mode.
    pub fn mode(&self) -> TxnMode {
        self.mode
    }

    /// `Transaction::get`: the transaction's own write, else the value at `start_ts`.
    ///
    /// # Errors
    /// [`ClientError::Txn`] as `Transaction::get`; [`ClientError::Service`] if the
    /// connection failed (the transaction is then finished).
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        let txn = self.handle;
        self.value(
            "get",
            TxnOp::Get {
                txn,
                key: key.to_vec(),
            },
        )
    }

    /// `Transaction::batch_get`: the values of `keys`, in key order, absent keys omitted.
    ///
    /// # Errors
    /// As [`RemoteTxn::get`].
    pub fn batch_get(&mut self, keys: &[Vec<u8>]) -> Result<Vec<KvPair>, ClientError> {
        let txn = self.handle;
        self.pairs(
            "batch_get",
            TxnOp::BatchGet {
                txn,
                keys: keys.to_vec(),
            },
        )
    }

    /// `Transaction::scan`: at most `limit` pairs of `[start, end)`.
    ///
    /// # Errors
    /// As [`RemoteTxn::get`].
    pub fn scan(
        &mut self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>, ClientError> {
        let txn = self.handle;
        self.pairs(
            "scan",
            TxnOp::Scan {
                txn,
                start: start.to_vec(),
                end: end.map(<[u8]>::to_vec),
                limit: limit as u64,
            },
        )
    }

    /// `Transaction::get_for_update`: locks `key` (pessimistic) and reads its latest value.
    ///
    /// # Errors
    /// As [`RemoteTxn::get`]; lock waits, deadlocks and conflicts as `TxnError`.
    pub fn get_for_update(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        let txn = self.handle;
        self.value(
            "get_for_update",
            TxnOp::GetForUpdate {
                txn,
                key: key.to_vec(),
            },
        )
    }

    /// `Transaction::put`.
    ///
    /// # Errors
    /// As [`RemoteTxn::get_for_update`].
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), ClientError> {
        let txn = self.handle;
        self.done(
            "put",
            TxnOp::Put {
                txn,
                key: key.to_vec(),
                value: value.to_vec(),
            },
        )
    }

    /// `Transaction::insert`: as put, failing with `TxnError::AlreadyExist` if the key has
    /// a value.
    ///
    /// # Errors
    /// As [`RemoteTxn::get_for_update`].
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<(), ClientError> {
        let txn = self.handle;
        self.done(
            "insert",
            TxnOp::Insert {
                txn,
                key: key.to_vec(),
                value: value.to_vec(),
            },
        )
    }

    /// `Transaction::delete`.
    ///
    /// # Errors
    /// As [`RemoteTxn::get_for_update`].
    pub fn delete(&mut self, key: &[u8]) -> Result<(), ClientError> {
        let txn = self.handle;
        self.done(
            "delete",
            TxnOp::Delete {
                txn,
                key: key.to_vec(),
            },
        )
    }

    /// Commits on the node and returns the commit timestamp; with the node's binlog, the
    /// commit's binlog transaction is durable when this returns. Takes the transaction, as
    /// `Transaction::commit` does: it is finished whatever the outcome.
    ///
    /// # Errors
    /// As `Transaction::commit`; a connection lost before the answer is
    /// [`TxnError::Undetermined`] (inside [`ClientError::Txn`]): it may have committed.
    /// [`TxnError::TxnFinished`] if an earlier operation lost the connection (the node
    /// rolled the transaction back).
    pub fn commit(mut self) -> Result<u64, ClientError> {
        let txn = self.handle;
        let start_ts = self.start_ts;
        let reply = self.finish(TxnOp::Commit { txn }).map_err(|e| match e {
            ClientError::Service(s) => ClientError::Txn(TxnError::Undetermined {
                start_ts,
                detail: format!("the coordinator's answer was lost: {s}"),
            }),
            other => other,
        })?;
        match reply {
            TxnReply::Committed { commit_ts } => Ok(commit_ts),
            other => Err(unexpected(&self.remote, "commit", &other)),
        }
    }

    /// Rolls back on the node (releasing its locks) and takes the transaction.
    ///
    /// # Errors
    /// [`TxnError::TxnFinished`] if an earlier operation lost the connection;
    /// [`ClientError::Service`] if the connection failed now. Either way the node rolls the
    /// transaction back when it sees the connection close.
    pub fn rollback(mut self) -> Result<(), ClientError> {
        let txn = self.handle;
        match self.finish(TxnOp::Rollback { txn })? {
            TxnReply::Done => Ok(()),
            other => Err(unexpected(&self.remote, "rollback", &other)),
        }
    }

    /// Sends a commit or rollback: the transaction leaves the session whatever the answer,
    /// so the connection goes back to the pool once answered.
    fn finish(&mut self, op: TxnOp) -> Result<TxnReply, ClientError> {
        let Some(mut conn) = self.conn.take() else {
            return Err(ClientError::Txn(TxnError::TxnFinished));
        };
        let answer = self.remote.txn_call(&mut conn, op)?;
        self.remote.close_session(conn);
        answer.map_err(ClientError::from)
    }

    /// Sends an operation that leaves the transaction open.
    fn send(&mut self, op: TxnOp) -> Result<TxnReply, ClientError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(ClientError::Txn(TxnError::TxnFinished));
        };
        match self.remote.txn_call(conn, op) {
            Ok(answer) => answer.map_err(ClientError::from),
            Err(e) => {
                // The connection is unusable; its close makes the node roll back.
                self.conn = None;
                Err(e.into())
            }
        }
    }

    fn value(&mut self, what: &'static str, op: TxnOp) -> Result<Option<Vec<u8>>, ClientError> {
        match self.send(op)? {
            TxnReply::Value(v) => Ok(v),
            other => Err(unexpected(&self.remote, what, &other)),
        }
    }

    fn pairs(&mut self, what: &'static str, op: TxnOp) -> Result<Vec<KvPair>, ClientError> {
        match self.send(op)? {
            TxnReply::Pairs(p) => Ok(p),
            other => Err(unexpected(&self.remote, what, &other)),
        }
    }

    fn done(&mut self, what: &'static str, op: TxnOp) -> Result<(), ClientError> {
        match self.send(op)? {
            TxnReply::Done => Ok(()),
            other => Err(unexpected(&self.remote, what, &other)),
        }
    }
}

pub(crate) fn unexpected(
    remote: &RemoteService,
    request: &'static str,
    reply: &TxnReply,
) -> ClientError {
    ClientError::Unexpected {
        node: remote.node(),
        request,
        answer: format!("{reply:?}"),
    }
}
