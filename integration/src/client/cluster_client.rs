//! [`Client`]: a cluster reached over TCP, with the txn crate's [`TxnClient`] on top.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use surge_raft_lite::NodeId;
use surge_txn::{
    ClientConfig, KvRequest, KvResponse, KvService, LockMode, NodeRouter, NodeStatusReport,
    RegionError, ServiceError, TxnClient, TxnError,
};

use super::remote_service::{RemoteConfig, RemoteService};
use super::tcp_router::TcpRouter;

/// How a [`Client`] talks to the cluster.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Connection timeouts and pool size.
    pub remote: RemoteConfig,
    /// The transactional client's timeouts and retry budget.
    pub txn: ClientConfig,
}

/// Why a [`Client`] operation failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// None of the given addresses answered the handshake.
    #[error("no node answered at {tried:?}: {last}")]
    NoNodeReachable {
        /// The addresses tried.
        tried: Vec<String>,
        /// The last failure.
        last: ServiceError,
    },
    /// A node could not be asked.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A transactional operation failed.
    #[error(transparent)]
    Txn(#[from] TxnError),
    /// A node answered with something that does not fit the request.
    #[error("node {node}: unexpected answer to {request}: {answer}")]
    Unexpected {
        /// The node.
        node: NodeId,
        /// The request's name.
        request: &'static str,
        /// The answer, debug-printed.
        answer: String,
    },
    /// The cluster did not become ready in time.
    #[error("cluster not ready after {waited_ms} ms: {detail}")]
    NotReady {
        /// How long we waited.
        waited_ms: u64,
        /// What was still missing.
        detail: String,
    },
}

/// A SurgeDB cluster reached over TCP from any of its nodes' addresses.
///
/// The transactional API is the txn crate's: [`Client::txn`] is a [`TxnClient`] whose
/// router is this client's [`TcpRouter`], so it follows region leaders, retries with
/// backoff and resolves locks as it does in process. `Client` is also a [`NodeRouter`] and a
/// [`KvService`] (a request goes to the nodes in turn, following leader hints), for tools
/// that speak [`KvRequest`] directly.
#[derive(Debug, Clone)]
pub struct Client {
    router: Arc<TcpRouter>,
    txn: TxnClient,
    cluster_id: String,
}

impl Client {
    /// Connects to the cluster of the first of `addrs` that answers: learns the cluster's
    /// id and every node's address from its handshake.
    ///
    /// # Errors
    /// [`ClientError::NoNodeReachable`] if none answers.
    pub fn connect(addrs: &[String], options: ClientOptions) -> Result<Client, ClientError> {
        let mut last = ServiceError::Unavailable {
            node: 0,
            detail: "no address given".into(),
        };
        for addr in addrs {
            let welcome = RemoteService::resolve(0, addr)
                .and_then(|sock| RemoteService::new(0, sock, options.remote.clone()).welcome());
            match welcome {
                Ok(w) => {
                    let mut remote = options.remote.clone();
                    remote.cluster_id = Some(w.cluster_id.clone());
                    let router = Arc::new(TcpRouter::new(w.peers, &remote)?);
                    let txn = TxnClient::new(router.clone(), options.txn.clone());
                    return Ok(Client {
                        router,
                        txn,
                        cluster_id: w.cluster_id,
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(ClientError::NoNodeReachable {
            tried: addrs.to_vec(),
            last,
        })
    }

    /// The transactional client (begin, get, scan, ...).
    pub fn txn(&self) -> &TxnClient {
        &self.txn
    }

    /// The router to every node.
    pub fn router(&self) -> Arc<TcpRouter> {
        self.router.clone()
    }

    /// The cluster's id.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// Node `node`'s status: regions, roles, epochs, lock tables, counters.
    ///
    /// # Errors
    /// [`ClientError::Service`] if it cannot be asked.
    pub fn node_status(&self, node: NodeId) -> Result<NodeStatusReport, ClientError> {
        match self.router.service(node)?.call(KvRequest::NodeStatus)? {
            KvResponse::Status(report) => Ok(*report),
            other => Err(ClientError::Unexpected {
                node,
                request: "node_status",
                answer: format!("{other:?}"),
            }),
        }
    }

    /// Sets the pessimistic lock mode on every node.
    ///
    /// # Errors
    /// The first node that could not be told.
    pub fn set_lock_mode(&self, mode: LockMode) -> Result<(), ClientError> {
        for node in self.router.nodes() {
            match self
                .router
                .service(node)?
                .call(KvRequest::SetLockMode { mode })?
            {
                KvResponse::Done => {}
                other => {
                    return Err(ClientError::Unexpected {
                        node,
                        request: "set_lock_mode",
                        answer: format!("{other:?}"),
                    });
                }
            }
        }
        Ok(())
    }

    /// The node that leads `region` and has applied its term's first entry, as the nodes
    /// report it (`None` if no reachable node leads it now).
    pub fn leader_of_region(&self, region: u64) -> Option<NodeId> {
        self.router.nodes().into_iter().find(|n| {
            self.node_status(*n).is_ok_and(|s| {
                s.regions
                    .iter()
                    .any(|r| r.region.id == region && r.is_leader)
            })
        })
    }

    /// Moves the leadership of data region `region_id` to node `to` over TCP with
    /// `KvRequest::TransferLeader` (the leader proposes its in-memory locks through Raft
    /// first, so none is lost), and waits until `to` leads it. Asking again is harmless, so
    /// a request that fails (a leader change in between) is simply sent again.
    ///
    /// # Errors
    /// [`ClientError::NotReady`] if `to` does not lead the region within `timeout`.
    pub fn transfer_leader(
        &self,
        region_id: u64,
        to: NodeId,
        timeout: Duration,
    ) -> Result<(), ClientError> {
        let start = Instant::now();
        let mut last = String::from("not asked yet");
        loop {
            if self.leader_of_region(region_id) == Some(to) {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(ClientError::NotReady {
                    waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    detail: format!("node {to} does not lead region {region_id}: {last}"),
                });
            }
            last = match self.call(KvRequest::TransferLeader { region_id, to }) {
                Ok(KvResponse::RegionsChanged { .. }) => "transfer answered".into(),
                Ok(other) => format!("{other:?}"),
                Err(e) => e.to_string(),
            };
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the oracle answers and every region of every reachable node's map has
    /// a leader.
    ///
    /// # Errors
    /// [`ClientError::NotReady`] naming what was missing at the deadline.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), ClientError> {
        let start = Instant::now();
        loop {
            let missing = self.what_is_missing();
            let Some(detail) = missing else {
                return Ok(());
            };
            if start.elapsed() > timeout {
                return Err(ClientError::NotReady {
                    waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    detail,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn what_is_missing(&self) -> Option<String> {
        let mut regions = BTreeSet::new();
        let mut led = BTreeSet::new();
        for node in self.router.nodes() {
            match self.node_status(node) {
                Ok(s) => {
                    for r in &s.regions {
                        regions.insert(r.region.id);
                        if r.is_leader {
                            led.insert(r.region.id);
                        }
                    }
                }
                Err(e) => return Some(format!("node {node}: {e}")),
            }
        }
        if regions.is_empty() {
            return Some("no regions reported".into());
        }
        let without: Vec<u64> = regions.difference(&led).copied().collect();
        if !without.is_empty() {
            return Some(format!("regions without a leader: {without:?}"));
        }
        match self.call(KvRequest::GetTimestamp { count: 1 }) {
            Ok(KvResponse::Timestamp { .. }) => None,
            Ok(other) => Some(format!("timestamp oracle answered {other:?}")),
            Err(e) => Some(format!("timestamp oracle: {e}")),
        }
    }
}

impl NodeRouter for Client {
    fn nodes(&self) -> Vec<NodeId> {
        self.router.nodes()
    }

    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError> {
        self.router.service(node)
    }
}

impl KvService for Client {
    /// Sends `req` to the nodes in turn, starting with a `NotLeader` hint when one names a
    /// node, until one answers with something other than `NotLeader`.
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        let mut order = self.router.nodes();
        let mut last = ServiceError::Unavailable {
            node: 0,
            detail: "no nodes".into(),
        };
        let mut tried = BTreeSet::new();
        let mut not_leader = None;
        while let Some(node) = order.iter().copied().find(|n| !tried.contains(n)) {
            tried.insert(node);
            match self.router.service(node).and_then(|s| s.call(req.clone())) {
                Ok(KvResponse::RegionError(e @ RegionError::NotLeader { leader, .. })) => {
                    if let Some(hint) = leader.filter(|h| !tried.contains(h)) {
                        order.retain(|n| *n != hint);
                        order.insert(0, hint);
                    }
                    not_leader = Some(KvResponse::RegionError(e));
                }
                Ok(resp) => return Ok(resp),
                Err(e) => last = e,
            }
        }
        not_leader.ok_or(last)
    }
}
