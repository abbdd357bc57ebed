//! [`TxnSession`]: the coordinator transactions one client connection has open.

use std::collections::HashMap;
use std::sync::Arc;

use surge_txn::{Transaction, TxnError};

use super::coordinator::NodeCoordinator;
use crate::wire::{TxnFailure, TxnOp, TxnReply};

/// Open transactions one connection may hold at once: bounds what a client can pin in the
/// node's memory (each holds its buffered writes and, pessimistic, its locks).
pub const MAX_OPEN_TXNS: usize = 256;

/// The transactions a connection began on the node's coordinator, by handle.
///
/// Invariant: a transaction leaves the session when it commits or rolls back, whatever the
/// outcome; when the session is dropped (the connection closed, cleanly or not) every
/// transaction still in it is rolled back, releasing its pessimistic locks at once rather
/// than after their TTL.
pub(crate) struct TxnSession {
    coordinator: Option<Arc<NodeCoordinator>>,
    open: HashMap<u64, Transaction>,
    next: u64,
}

impl TxnSession {
    /// An empty session on `coordinator` (`None`: a server without one refuses every
    /// operation).
    pub(crate) fn new(coordinator: Option<Arc<NodeCoordinator>>) -> TxnSession {
        TxnSession {
            coordinator,
            open: HashMap::new(),
            next: 1,
        }
    }

    /// How many transactions are open.
    pub(crate) fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Runs one operation.
    pub(crate) fn apply(&mut self, op: TxnOp) -> Result<TxnReply, TxnFailure> {
        let Some(coordinator) = &self.coordinator else {
            return Err(TxnFailure::NotReady {
                node: 0,
                detail: "this server runs no transaction coordinator".into(),
            });
        };
        match op {
            TxnOp::State => Ok(TxnReply::State(coordinator.state())),
            TxnOp::Begin { mode } => {
                if self.open.len() >= MAX_OPEN_TXNS {
                    return Err(TxnFailure::SessionFull {
                        max: MAX_OPEN_TXNS as u64,
                    });
                }
                let txn = coordinator.client()?.begin(mode).map_err(fail)?;
                let handle = self.next;
                self.next += 1;
                let start_ts = txn.start_ts();
                self.open.insert(handle, txn);
                Ok(TxnReply::Begun {
                    txn: handle,
                    start_ts,
                })
            }
            TxnOp::HotUpdate { key, op, hints } => coordinator
                .client()?
                .hot_update(&key, op, hints)
                .map(TxnReply::Hot)
                .map_err(fail),
            TxnOp::Get { txn, key } => self.txn(txn)?.get(&key).map(TxnReply::Value).map_err(fail),
            TxnOp::GetForUpdate { txn, key } => self
                .txn(txn)?
                .get_for_update(&key)
                .map(TxnReply::Value)
                .map_err(fail),
            TxnOp::BatchGet { txn, keys } => self
                .txn(txn)?
                .batch_get(&keys)
                .map(TxnReply::Pairs)
                .map_err(fail),
            TxnOp::Scan {
                txn,
                start,
                end,
                limit,
            } => self
                .txn(txn)?
                .scan(
                    &start,
                    end.as_deref(),
                    usize::try_from(limit).unwrap_or(usize::MAX),
                )
                .map(TxnReply::Pairs)
                .map_err(fail),
            TxnOp::Put { txn, key, value } => self
                .txn(txn)?
                .put(&key, &value)
                .map(|()| TxnReply::Done)
                .map_err(fail),
            TxnOp::Insert { txn, key, value } => self
                .txn(txn)?
                .insert(&key, &value)
                .map(|()| TxnReply::Done)
                .map_err(fail),
            TxnOp::Delete { txn, key } => self
                .txn(txn)?
                .delete(&key)
                .map(|()| TxnReply::Done)
                .map_err(fail),
            TxnOp::Commit { txn } => {
                let t = self.take(txn)?;
                t.commit()
                    .map(|commit_ts| TxnReply::Committed { commit_ts })
                    .map_err(fail)
            }
            TxnOp::Rollback { txn } => {
                self.take(txn)?.rollback();
                Ok(TxnReply::Done)
            }
        }
    }

    fn txn(&mut self, handle: u64) -> Result<&mut Transaction, TxnFailure> {
        self.open
            .get_mut(&handle)
            .ok_or(TxnFailure::NoSuchTxn { txn: handle })
    }

    fn take(&mut self, handle: u64) -> Result<Transaction, TxnFailure> {
        self.open
            .remove(&handle)
            .ok_or(TxnFailure::NoSuchTxn { txn: handle })
    }
}

impl Drop for TxnSession {
    fn drop(&mut self) {
        for (_, txn) in self.open.drain() {
            // A rollback that cannot reach a node is not an error: the lock expires and is
            // rolled back by whoever meets it.
            txn.rollback();
        }
    }
}

fn fail(e: TxnError) -> TxnFailure {
    TxnFailure::from(&e)
}
