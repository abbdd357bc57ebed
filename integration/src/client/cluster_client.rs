//! [`Client`]: a cluster reached over TCP: transactions run by the nodes' coordinators
//! ([`Client::begin`], [`Client::hot_update`]), or by the txn crate's [`TxnClient`] in
//! this process ([`Client::txn`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use surge_raft_lite::NodeId;
use surge_txn::{
    ClientConfig, HotHints, HotOp, HotOutcome, LockMode, RegionError, ServiceError, TxnClient,
    TxnError, TxnMode,
    rpc::{KvRequest, KvResponse, KvService, NodeRouter, NodeStatusReport},
};

use super::remote_service::{RemoteConfig, RemoteService};
use super::remote_txn::{RemoteTxn, unexpected};
use super::tcp_router::TcpRouter;
use super::unreached::Unreached;
use crate::wire::{CoordinatorState, TxnFailure, TxnOp, TxnReply};

/// How a [`Client`] talks to the cluster.
///
/// Build it with [`ClientOptions::default`] and the `with_*` methods, or assign the public fields
/// of a default value: the struct is `#[non_exhaustive]`, so later settings can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Connection timeouts (the coordinator's included) and pool size.
    pub remote: RemoteConfig,
    /// The in-process transactional client's ([`Client::txn`]) timeouts and retry budget.
    pub txn: ClientConfig,
}

impl ClientOptions {
    /// Sets [`ClientOptions::remote`].
    #[must_use]
    pub fn with_remote(mut self, remote: RemoteConfig) -> Self {
        self.remote = remote;
        self
    }

    /// Sets [`ClientOptions::txn`].
    #[must_use]
    pub fn with_txn(mut self, txn: ClientConfig) -> Self {
        self.txn = txn;
        self
    }
}

/// Why a [`Client`] operation failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// None of the given addresses answered the handshake.
    #[error("no node answered ({})", list(tried))]
    NoNodeReachable {
        /// Every address tried, in order, with its failure.
        tried: Vec<Unreached>,
    },
    /// A node could not be asked.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A transactional operation failed.
    #[error(transparent)]
    Txn(#[from] TxnError),
    /// A node's coordinator refused the operation for a reason of its own (not ready yet:
    /// recovering a previous run; an unknown transaction handle; too many open
    /// transactions on one connection). Nothing ran.
    #[error(transparent)]
    Coordinator(TxnFailure),
    /// A request was sent to a node but its answer did not come back (connection lost,
    /// timeout): it may have run.
    #[error("node {node}: the answer was lost, the request may have run: {source}")]
    AnswerLost {
        /// The node.
        node: NodeId,
        /// The transport's error.
        source: ServiceError,
    },
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

/// `tried` as `ADDR: reason; ADDR: reason`, or `no address given`.
fn list(tried: &[Unreached]) -> String {
    if tried.is_empty() {
        return "no address given".into();
    }
    tried
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl From<TxnFailure> for ClientError {
    fn from(failure: TxnFailure) -> ClientError {
        match failure.into_txn_error() {
            Ok(e) => ClientError::Txn(e),
            Err(own) => ClientError::Coordinator(own),
        }
    }
}

/// A SurgeDB cluster reached over TCP from any of its nodes' addresses.
///
/// Two ways to run transactions:
///
/// - **On a node's coordinator** ([`Client::begin`], [`Client::hot_update`]): the node
///   runs the transaction (locks, two-phase commit, lock resolution) and records each commit
///   in its own binlog (`DIR/binlog` of that node) before answering. The client holds one
///   connection per open transaction and does no transactional work itself; nodes are
///   chosen round-robin ([`Client::begin_on`] names one). This is what `surgedb kv put`
///   and `surgedb txn FILE` use.
/// - **In this process** ([`Client::txn`]): the txn crate's [`TxnClient`] over this
///   client's [`TcpRouter`] is the coordinator; it sends storage requests to region
///   leaders itself, and writes no binlog (its [`ClientConfig::binlog`] would be a binlog
///   of this process, not of the cluster). For tools and tests that want the coordinator
///   in hand (the benches, the fault tests).
///
/// `Client` is also a [`NodeRouter`] and a [`KvService`] (a request goes to the nodes in
/// turn, following leader hints), for tools that speak [`KvRequest`] directly.
#[derive(Debug, Clone)]
pub struct Client {
    router: Arc<TcpRouter>,
    txn: TxnClient,
    cluster_id: String,
    coordinator_timeout: Duration,
    /// Round-robin position for coordinator operations, shared by clones.
    next_node: Arc<AtomicUsize>,
}

impl Client {
    /// Connects to the cluster of the first of `addrs` that answers: learns the cluster's
    /// id and every node's address from its handshake.
    ///
    /// # Errors
    /// [`ClientError::NoNodeReachable`] if none answers.
    pub fn connect(addrs: &[String], options: ClientOptions) -> Result<Client, ClientError> {
        let mut tried = Vec::new();
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
                        coordinator_timeout: options.remote.coordinator_timeout,
                        next_node: Arc::new(AtomicUsize::new(round_robin_seed())),
                    });
                }
                Err(error) => tried.push(Unreached {
                    addr: addr.clone(),
                    error,
                }),
            }
        }
        Err(ClientError::NoNodeReachable { tried })
    }

    /// The in-process transactional client (begin, get, scan, ...): this process is the
    /// coordinator, and no binlog is written (see the type's documentation).
    pub fn txn(&self) -> &TxnClient {
        &self.txn
    }

    /// Begins a transaction on a node's coordinator, trying the nodes round-robin: a node
    /// that cannot be reached or whose coordinator is not ready yet (recovering) is
    /// skipped.
    ///
    /// # Errors
    /// The last node's error when none could begin: [`ClientError::Coordinator`] (not
    /// ready), [`ClientError::Service`] (unreachable) or [`ClientError::Txn`] (the oracle
    /// could not be reached).
    pub fn begin(&self, mode: TxnMode) -> Result<RemoteTxn, ClientError> {
        self.round_robin(|node| self.begin_on(node, mode))
    }

    /// Begins a transaction on node `node`'s coordinator.
    ///
    /// # Errors
    /// As [`Client::begin`], for that node alone.
    pub fn begin_on(&self, node: NodeId, mode: TxnMode) -> Result<RemoteTxn, ClientError> {
        let remote = self.remote(node)?;
        let conn = remote.open_session(self.coordinator_timeout)?;
        RemoteTxn::begin(remote, conn, mode)
    }

    /// A hot-row update (AliSQL hot-row group commit) by a node's coordinator, nodes tried
    /// round-robin: concurrent updates of one row sent to one node are grouped there. Only
    /// a node that could not be reached, or whose coordinator is not ready, is skipped: an
    /// update whose answer was lost is not sent again (it may have been applied).
    ///
    /// # Errors
    /// As `TxnClient::hot_update` inside [`ClientError::Txn`]; [`ClientError::AnswerLost`]
    /// when the answer was lost (the update may have been applied).
    pub fn hot_update(
        &self,
        key: &[u8],
        op: HotOp,
        hints: HotHints,
    ) -> Result<HotOutcome, ClientError> {
        self.round_robin(|node| self.hot_update_on(node, key, op, hints))
    }

    /// [`Client::hot_update`] on node `node`'s coordinator.
    ///
    /// # Errors
    /// As [`Client::hot_update`].
    pub fn hot_update_on(
        &self,
        node: NodeId,
        key: &[u8],
        op: HotOp,
        hints: HotHints,
    ) -> Result<HotOutcome, ClientError> {
        let op = TxnOp::HotUpdate {
            key: key.to_vec(),
            op,
            hints,
        };
        match self.coordinator_call(node, op)? {
            TxnReply::Hot(outcome) => Ok(outcome),
            other => Err(unexpected(&*self.remote(node)?, "hot_update", &other)),
        }
    }

    /// Where node `node`'s coordinator stands (ready with its recovery's counts, or
    /// recovering).
    ///
    /// # Errors
    /// [`ClientError::Service`] if the node cannot be asked.
    pub fn coordinator_state(&self, node: NodeId) -> Result<CoordinatorState, ClientError> {
        match self.coordinator_call(node, TxnOp::State)? {
            TxnReply::State(state) => Ok(state),
            other => Err(unexpected(
                &*self.remote(node)?,
                "coordinator_state",
                &other,
            )),
        }
    }

    /// One session-less coordinator operation on a connection of its own. A failure to
    /// connect is [`ClientError::Service`] (nothing sent); a failure after sending is
    /// [`ClientError::AnswerLost`] (it may have run).
    fn coordinator_call(&self, node: NodeId, op: TxnOp) -> Result<TxnReply, ClientError> {
        let remote = self.remote(node)?;
        let mut conn = remote.open_session(self.coordinator_timeout)?;
        let answer = remote
            .txn_call(&mut conn, op)
            .map_err(|source| ClientError::AnswerLost { node, source })?;
        remote.close_session(conn);
        answer.map_err(ClientError::from)
    }

    fn remote(&self, node: NodeId) -> Result<Arc<RemoteService>, ClientError> {
        self.router.remote(node).ok_or_else(|| {
            ClientError::Service(ServiceError::Unavailable {
                node,
                detail: "no such node in the cluster".into(),
            })
        })
    }

    /// Runs `f` on the nodes in round-robin order until one does not refuse with an error
    /// that says nothing ran there (unreachable before sending, or not ready).
    fn round_robin<T>(
        &self,
        mut f: impl FnMut(NodeId) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let nodes = self.router.nodes();
        let first = self.next_node.fetch_add(1, Ordering::Relaxed);
        let mut last = ClientError::Service(ServiceError::Unavailable {
            node: 0,
            detail: "no nodes".into(),
        });
        for i in 0..nodes.len() {
            let node = nodes[(first + i) % nodes.len()];
            match f(node) {
                Err(e @ ClientError::Coordinator(TxnFailure::NotReady { .. })) => last = e,
                Err(e @ ClientError::Service(ServiceError::Unavailable { .. })) => last = e,
                other => return other,
            }
        }
        Err(last)
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
    /// a request that fails (a leader change in between) is simply sent again. Returns
    /// how many in-memory locks the transfers that answered proposed (0 if `to` led it
    /// already).
    ///
    /// # Errors
    /// [`ClientError::NotReady`] if `to` does not lead the region within `timeout`.
    pub fn transfer_leader(
        &self,
        region_id: u64,
        to: NodeId,
        timeout: Duration,
    ) -> Result<usize, ClientError> {
        let start = Instant::now();
        let mut last = String::from("not asked yet");
        let mut locks = 0;
        loop {
            if self.leader_of_region(region_id) == Some(to) {
                return Ok(locks);
            }
            if start.elapsed() > timeout {
                return Err(ClientError::NotReady {
                    waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    detail: format!("node {to} does not lead region {region_id}: {last}"),
                });
            }
            last = match self.call(KvRequest::TransferLeader { region_id, to }) {
                Ok(KvResponse::RegionsChanged { locks: n, .. }) => {
                    locks += n;
                    "transfer answered".into()
                }
                Ok(other) => format!("{other:?}"),
                Err(e) => e.to_string(),
            };
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the oracle answers, every region of every reachable node's map has a
    /// leader, and every node's transaction coordinator is ready (its recovery done).
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
            Ok(KvResponse::Timestamp { .. }) => {}
            Ok(other) => return Some(format!("timestamp oracle answered {other:?}")),
            Err(e) => return Some(format!("timestamp oracle: {e}")),
        }
        for node in self.router.nodes() {
            match self.coordinator_state(node) {
                Ok(CoordinatorState::Ready { .. }) => {}
                Ok(other) => return Some(format!("node {node}'s coordinator: {other:?}")),
                Err(e) => return Some(format!("node {node}'s coordinator: {e}")),
            }
        }
        None
    }
}

/// Where a new client's round-robin starts: varied between processes, so that one-shot
/// command-line clients do not all pick the first node.
fn round_robin_seed() -> usize {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (nanos as usize) ^ (std::process::id() as usize)
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
    /// node, until one answers with something other than `NotLeader`. Only a node the
    /// request did not reach is passed over: a failure after it was sent (a timeout, a
    /// broken connection, an answer that does not decode) is returned at once, since the
    /// node may have run it and another node's `NotLeader` would read as "did not run".
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
            let Some(remote) = self.router.remote(node) else {
                last = ServiceError::Unavailable {
                    node,
                    detail: "no such node in the cluster".into(),
                };
                continue;
            };
            match remote.call_reporting(req.clone()) {
                Ok(KvResponse::RegionError(e @ RegionError::NotLeader { leader, .. })) => {
                    if let Some(hint) = leader.filter(|h| !tried.contains(h)) {
                        order.retain(|n| *n != hint);
                        order.insert(0, hint);
                    }
                    not_leader = Some(KvResponse::RegionError(e));
                }
                Ok(resp) => return Ok(resp),
                Err(failure) if failure.sent => return Err(failure.error),
                Err(failure) => last = failure.error,
            }
        }
        not_leader.ok_or(last)
    }
}
