//! [`RemoteService`]: one node's [`KvService`] over TCP, with pooled connections.

use std::io::{BufReader, BufWriter};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::deadline_read::DeadlineRead;
use surge_raft_lite::NodeId;
use surge_txn::{
    ServiceError,
    rpc::{KvRequest, KvResponse, KvService},
};

use crate::wire::{
    ClientFrame, FrameError, Hello, ServerFrame, ServerStats, TxnFailure, TxnOp, TxnReply,
    WireError, encode_hello, read_frame, write_frame,
};

/// Timeouts and pool size of a [`RemoteService`].
///
/// Build it with [`RemoteConfig::default`] and the `with_*` methods, or assign the public fields
/// of a default value: the struct is `#[non_exhaustive]`, so later settings can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// Longest wait for a TCP connection.
    pub connect_timeout: Duration,
    /// Longest wait for one answer. It must exceed the longest a node may legitimately
    /// take: a lock wait (1 s by default) or a Raft proposal (5 s).
    pub request_timeout: Duration,
    /// Longest wait for a node coordinator's answer (`Client::begin`, `Client::hot_update`):
    /// longer than a coordinator's own retry budget (20 s by default), so that its answer,
    /// not a client timeout, says how an operation ended.
    pub coordinator_timeout: Duration,
    /// Idle connections kept for reuse.
    pub max_idle: usize,
    /// The cluster to insist on (`None`: whichever the node belongs to).
    pub cluster_id: Option<String>,
    /// The calling node, when a node calls another.
    pub from_node: Option<NodeId>,
}

impl RemoteConfig {
    /// Sets [`RemoteConfig::connect_timeout`].
    #[must_use]
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Sets [`RemoteConfig::request_timeout`].
    #[must_use]
    pub fn with_request_timeout(mut self, request_timeout: Duration) -> Self {
        self.request_timeout = request_timeout;
        self
    }

    /// Sets [`RemoteConfig::coordinator_timeout`].
    #[must_use]
    pub fn with_coordinator_timeout(mut self, coordinator_timeout: Duration) -> Self {
        self.coordinator_timeout = coordinator_timeout;
        self
    }

    /// Sets [`RemoteConfig::max_idle`].
    #[must_use]
    pub fn with_max_idle(mut self, max_idle: usize) -> Self {
        self.max_idle = max_idle;
        self
    }

    /// Sets [`RemoteConfig::cluster_id`].
    #[must_use]
    pub fn with_cluster_id(mut self, cluster_id: Option<String>) -> Self {
        self.cluster_id = cluster_id;
        self
    }

    /// Sets [`RemoteConfig::from_node`].
    #[must_use]
    pub fn with_from_node(mut self, from_node: Option<NodeId>) -> Self {
        self.from_node = from_node;
        self
    }
}

impl Default for RemoteConfig {
    fn default() -> RemoteConfig {
        RemoteConfig {
            connect_timeout: Duration::from_secs(1),
            request_timeout: Duration::from_secs(10),
            coordinator_timeout: Duration::from_secs(30),
            max_idle: 16,
            cluster_id: None,
            from_node: None,
        }
    }
}

/// What the node said at the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome {
    /// The node.
    pub node: NodeId,
    /// Its cluster.
    pub cluster_id: String,
    /// Every node of the cluster with its client address.
    pub peers: Vec<(NodeId, String)>,
}

/// One handshaken connection to a node.
pub(crate) struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    /// How long one answer may take in all, from the moment its reading starts
    /// ([`DeadlineRead`]): the request timeout, longer for a lock wait or a session.
    answer_budget: Duration,
}

/// One node's [`KvService`] over TCP. Connections are opened on demand, handshaken, and
/// kept in a small pool; a connection that failed or timed out is dropped, never reused
/// (its late answer would be taken for the next request's).
///
/// Every failure is a [`ServiceError`]: `Unavailable` when the node cannot be reached (the
/// request was not sent, or the connection broke), `Timeout` when no answer came in time
/// (the request may have run), `Protocol` for a refused handshake or an answer that does
/// not decode.
///
/// Whatever its kind, a failure after the request was written to the connection (a
/// timeout, a connection reset, an answer that does not decode or does not fit, a
/// refusal such as an answer over the frame limit) leaves the request's outcome unknown:
/// the node may have run it. The txn crate's client takes every failure of a request
/// handed to [`KvService::call`] as outcome-unknown for a write, and [`crate::Client`]'s
/// own `call` does not try another node after one (see `call_reporting`).
pub struct RemoteService {
    /// The node expected at `addr` (0: not known yet, any node is accepted).
    node: NodeId,
    addr: SocketAddr,
    config: RemoteConfig,
    idle: Mutex<Vec<Conn>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for RemoteService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteService")
            .field("node", &self.node)
            .field("addr", &self.addr)
            .finish()
    }
}

impl RemoteService {
    /// A service for node `node` (0 if not known) at `addr`. Does no I/O.
    pub fn new(node: NodeId, addr: SocketAddr, config: RemoteConfig) -> RemoteService {
        RemoteService {
            node,
            addr,
            config,
            idle: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Resolves `addr` (`host:port`) to its first socket address.
    ///
    /// # Errors
    /// [`ServiceError::Unavailable`] if it does not resolve.
    pub fn resolve(node: NodeId, addr: &str) -> Result<SocketAddr, ServiceError> {
        addr.to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| ServiceError::Unavailable {
                node,
                detail: format!("address {addr:?} does not resolve"),
            })
    }

    /// The node's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connects and handshakes (not pooled): what the node says about itself.
    ///
    /// # Errors
    /// As [`KvService::call`].
    pub fn welcome(&self) -> Result<Welcome, ServiceError> {
        self.connect().map(|(_, w)| w)
    }

    /// The node's client-server counters.
    ///
    /// # Errors
    /// As [`KvService::call`].
    pub fn server_stats(&self) -> Result<ServerStats, ServiceError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        match self.round_trip(&ClientFrame::ServerStats { id })? {
            ServerFrame::Stats { id: got, stats } if got == id => Ok(stats),
            other => Err(self.protocol(format!("unexpected answer {other:?}"))),
        }
    }

    fn node_or_zero(&self) -> NodeId {
        self.node
    }

    fn unavailable(&self, detail: impl Into<String>) -> ServiceError {
        ServiceError::Unavailable {
            node: self.node_or_zero(),
            detail: format!("{}: {}", self.addr, detail.into()),
        }
    }

    fn protocol(&self, detail: impl Into<String>) -> ServiceError {
        ServiceError::Protocol {
            node: self.node_or_zero(),
            detail: format!("{}: {}", self.addr, detail.into()),
        }
    }

    fn timeout(&self) -> ServiceError {
        ServiceError::Timeout {
            node: self.node_or_zero(),
            timeout_ms: u64::try_from(self.config.request_timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn connect(&self) -> Result<(Conn, Welcome), ServiceError> {
        let stream = TcpStream::connect_timeout(&self.addr, self.config.connect_timeout)
            .map_err(|e| self.unavailable(format!("connect: {e}")))?;
        let _ = stream.set_nodelay(true);
        let setup = |e: std::io::Error| self.unavailable(format!("socket setup: {e}"));
        stream
            .set_read_timeout(Some(self.config.request_timeout))
            .map_err(setup)?;
        stream
            .set_write_timeout(Some(self.config.request_timeout))
            .map_err(setup)?;
        let mut conn = Conn {
            reader: BufReader::new(stream.try_clone().map_err(setup)?),
            writer: BufWriter::new(stream),
            answer_budget: self.config.request_timeout,
        };
        let hello = Hello {
            cluster_id: self.config.cluster_id.clone(),
            from_node: self.config.from_node,
        };
        write_frame(&mut conn.writer, &encode_hello(&hello)).map_err(|e| self.io_error(e))?;
        let welcome = match self.read_answer(&mut conn)? {
            ServerFrame::Welcome {
                node,
                cluster_id,
                peers,
            } => Welcome {
                node,
                cluster_id,
                peers,
            },
            ServerFrame::Error(e) => return Err(self.refused(e)),
            other => return Err(self.protocol(format!("expected a welcome, got {other:?}"))),
        };
        if self.node != 0 && welcome.node != self.node {
            return Err(self.protocol(format!(
                "expected node {} there, found node {}",
                self.node, welcome.node
            )));
        }
        Ok((conn, welcome))
    }

    fn refused(&self, e: WireError) -> ServiceError {
        match e {
            WireError::Busy { .. } => self.unavailable(e.to_string()),
            other => self.protocol(format!("refused: {other}")),
        }
    }

    fn io_error(&self, e: FrameError) -> ServiceError {
        if e.is_timeout() {
            self.timeout()
        } else {
            self.unavailable(e.to_string())
        }
    }

    fn read_answer(&self, conn: &mut Conn) -> Result<ServerFrame, ServiceError> {
        let mut buf = Vec::new();
        let deadline = Instant::now() + conn.answer_budget;
        read_frame(&mut DeadlineRead::new(&mut conn.reader, deadline), &mut buf)
            .map_err(|e| self.io_error(e))?;
        postcard::from_bytes(&buf).map_err(|e| self.protocol(format!("undecodable answer: {e}")))
    }

    /// An idle pooled connection that still looks alive, or a new one.
    fn checkout(&self) -> Result<Conn, ServiceError> {
        while let Some(conn) = self.idle.lock().pop() {
            if looks_alive(conn.writer.get_ref()) {
                return Ok(conn);
            }
        }
        self.connect().map(|(c, _)| c)
    }

    fn checkin(&self, conn: Conn) {
        let mut idle = self.idle.lock();
        if idle.len() < self.config.max_idle {
            idle.push(conn);
        }
    }

    fn round_trip(&self, frame: &ClientFrame) -> Result<ServerFrame, ServiceError> {
        self.round_trip_reporting(frame).map_err(|f| f.error)
    }

    /// As `round_trip`, saying on failure whether the frame was (perhaps) sent.
    fn round_trip_reporting(&self, frame: &ClientFrame) -> Result<ServerFrame, CallFailure> {
        let mut conn = self.checkout().map_err(CallFailure::not_sent)?;
        // A lock request may wait on the node as long as its client asked: its answer gets
        // that long on top of the request timeout, or a long wait would end here as a
        // transport timeout, an unknown outcome, instead of the node's `LockWaitTimeout`.
        let wait = lock_wait(frame);
        conn.answer_budget = self.config.request_timeout.saturating_add(wait);
        let answer = self.exchange_reporting(&mut conn, frame)?;
        // Only a connection that delivered its answer goes back to the pool, with the
        // ordinary budget again.
        conn.answer_budget = self.config.request_timeout;
        self.checkin(conn);
        Ok(answer)
    }

    /// Sends `frame` on `conn` and reads the answer.
    fn exchange(&self, conn: &mut Conn, frame: &ClientFrame) -> Result<ServerFrame, ServiceError> {
        self.exchange_reporting(conn, frame).map_err(|f| f.error)
    }

    /// As `exchange`, saying on failure whether the frame was (perhaps) sent: a write that
    /// failed part way may have delivered the whole frame to the node's buffers.
    fn exchange_reporting(
        &self,
        conn: &mut Conn,
        frame: &ClientFrame,
    ) -> Result<ServerFrame, CallFailure> {
        let body = postcard::to_allocvec(frame).map_err(|e| {
            CallFailure::not_sent(self.protocol(format!("cannot encode request: {e}")))
        })?;
        write_frame(&mut conn.writer, &body).map_err(|e| match e {
            FrameError::TooLarge { len, max } => CallFailure::not_sent(
                self.protocol(format!("request of {len} bytes over the {max}-byte limit")),
            ),
            other => CallFailure::sent(self.io_error(other)),
        })?;
        self.read_answer(conn).map_err(CallFailure::sent)
    }

    /// [`KvService::call`], saying on failure whether the request was (perhaps) sent, so
    /// that a caller that would try another node can tell "not sent" from "may have run".
    pub(crate) fn call_reporting(&self, req: KvRequest) -> Result<KvResponse, CallFailure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        match self.round_trip_reporting(&ClientFrame::Request { id, req })? {
            ServerFrame::Response { id: got, resp } if got == id => Ok(resp),
            // Answered, but not with the request's result: it may have run all the same
            // (the node's service failed after starting it; its result was over the frame
            // limit; a refusal or a frame of another request).
            ServerFrame::Unavailable { detail, .. } => {
                Err(CallFailure::sent(self.unavailable(detail)))
            }
            ServerFrame::Error(e) => Err(CallFailure::sent(self.refused(e))),
            other => Err(CallFailure::sent(
                self.protocol(format!("unexpected answer {other:?}")),
            )),
        }
    }

    /// A connection of its own for a coordinator session (pooled or new), whose answers
    /// may take up to `timeout`. An error here means nothing was sent.
    ///
    /// # Errors
    /// [`ServiceError::Unavailable`] if the node cannot be reached.
    pub(crate) fn open_session(&self, timeout: Duration) -> Result<Conn, ServiceError> {
        let mut conn = self.checkout()?;
        conn.answer_budget = timeout;
        Ok(conn)
    }

    /// Hands a session's connection that holds no open transaction back to the pool (one
    /// that does is dropped instead, and the node rolls back what it held).
    pub(crate) fn close_session(&self, mut conn: Conn) {
        conn.answer_budget = self.config.request_timeout;
        self.checkin(conn);
    }

    /// One coordinator operation on a session's connection. The outer error is the
    /// transport's (the connection must then be dropped: a late answer would be taken for
    /// the next request's); the inner one the coordinator's.
    ///
    /// # Errors
    /// As [`KvService::call`].
    pub(crate) fn txn_call(
        &self,
        conn: &mut Conn,
        op: TxnOp,
    ) -> Result<Result<TxnReply, TxnFailure>, ServiceError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        match self.exchange(conn, &ClientFrame::Txn { id, op })? {
            ServerFrame::Txn { id: got, result } if got == id => Ok(result),
            ServerFrame::Error(e) => Err(self.refused(e)),
            other => Err(self.protocol(format!("unexpected answer {other:?}"))),
        }
    }

    /// The node this service reaches (0 if not known).
    pub fn node(&self) -> NodeId {
        self.node
    }
}

/// Whether a pooled connection's peer has not closed it: a node that restarted closed its
/// end, and a request written there would be lost (reported as `Unavailable` after the
/// write seemed to succeed).
fn looks_alive(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let alive = match stream.peek(&mut byte) {
        // Data nobody asked for, or end of stream: either way not reusable.
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    };
    stream.set_nonblocking(false).is_ok() && alive
}

/// A failed [`RemoteService::call_reporting`].
#[derive(Debug)]
pub(crate) struct CallFailure {
    /// What went wrong.
    pub(crate) error: ServiceError,
    /// Whether the request was written to the connection (at least in part): if so the node
    /// may have run it, whatever `error` says.
    pub(crate) sent: bool,
}

impl CallFailure {
    fn not_sent(error: ServiceError) -> CallFailure {
        CallFailure { error, sent: false }
    }

    fn sent(error: ServiceError) -> CallFailure {
        CallFailure { error, sent: true }
    }
}

impl KvService for RemoteService {
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        self.call_reporting(req).map_err(|f| f.error)
    }
}

/// How long the node may wait on a lock for `frame` before it answers (zero for every other
/// request).
fn lock_wait(frame: &ClientFrame) -> Duration {
    match frame {
        ClientFrame::Request {
            req:
                KvRequest::AcquirePessimisticLock {
                    wait_timeout_ms: Some(ms),
                    ..
                },
            ..
        } => Duration::from_millis(*ms),
        _ => Duration::ZERO,
    }
}
