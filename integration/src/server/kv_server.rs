//! [`KvServer`]: serves a node's [`KvService`] to TCP clients, one thread per connection.

use std::io::{BufReader, BufWriter};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use surge_raft_lite::NodeId;
use surge_txn::rpc::KvService;

use super::coordinator::NodeCoordinator;
use super::join_by::join_by;
use super::txn_session::TxnSession;
use crate::wire::{
    ClientFrame, FrameError, MAX_FRAME, ServerFrame, ServerStats, WireError, decode_hello,
    read_frame, write_frame,
};

/// How long [`KvServer::shutdown`] waits for its accept thread, after the connections.
const ACCEPT_WAIT: Duration = Duration::from_millis(500);

/// How long [`KvServer::shutdown`] leaves a connection open for writing, so that the request
/// its thread is running can still answer (a lock wait the node's stop ended, say), before
/// it closes the connection whole.
const ANSWER_WAIT: Duration = Duration::from_secs(1);

/// Settings of a [`KvServer`].
///
/// Build it with [`ServerConfig::new`] (or [`ServerConfig::default`] and
/// [`ServerConfig::with_node`] and [`ServerConfig::with_cluster_id`]) and the `with_*`
/// methods, or assign the public fields of such a value: the struct is `#[non_exhaustive]`,
/// so later settings can be added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// This node.
    pub node: NodeId,
    /// Its cluster; a hello naming another is refused.
    pub cluster_id: String,
    /// Every node with its client address (sent in the welcome).
    pub peers: Vec<(NodeId, String)>,
    /// Connections served at once; more are refused with [`WireError::Busy`].
    pub max_connections: usize,
    /// How long a new connection may take to send its hello.
    pub handshake_timeout: Duration,
}

impl Default for ServerConfig {
    /// No peers, 1024 connections, 10 s for a hello, and neither node nor cluster id:
    /// [`KvServer::bind`] refuses it until both are set.
    fn default() -> ServerConfig {
        ServerConfig {
            node: 0,
            cluster_id: String::new(),
            peers: Vec::new(),
            max_connections: 1024,
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

impl ServerConfig {
    /// Node `node` of cluster `cluster_id`, with the defaults otherwise.
    pub fn new(node: NodeId, cluster_id: impl Into<String>) -> ServerConfig {
        ServerConfig::default()
            .with_node(node)
            .with_cluster_id(cluster_id)
    }

    /// Sets [`ServerConfig::node`].
    #[must_use]
    pub fn with_node(mut self, node: NodeId) -> Self {
        self.node = node;
        self
    }

    /// Sets [`ServerConfig::cluster_id`].
    #[must_use]
    pub fn with_cluster_id(mut self, cluster_id: impl Into<String>) -> Self {
        self.cluster_id = cluster_id.into();
        self
    }

    /// Sets [`ServerConfig::peers`].
    #[must_use]
    pub fn with_peers(mut self, peers: Vec<(NodeId, String)>) -> Self {
        self.peers = peers;
        self
    }

    /// Sets [`ServerConfig::max_connections`].
    #[must_use]
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Sets [`ServerConfig::handshake_timeout`].
    #[must_use]
    pub fn with_handshake_timeout(mut self, handshake_timeout: Duration) -> Self {
        self.handshake_timeout = handshake_timeout;
        self
    }
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    open_connections: AtomicU64,
    refused_busy: AtomicU64,
    bad_handshakes: AtomicU64,
    bad_frames: AtomicU64,
    requests: AtomicU64,
    txn_ops: AtomicU64,
    txns_rolled_back_on_close: AtomicU64,
}

/// A node's client server. Bind with [`KvServer::bind`], then [`KvServer::serve`] a service.
///
/// Invariant: a malformed frame never ends the process nor another connection. A body that
/// does not decode is answered with [`WireError::BadFrame`] and the connection goes on
/// (the length prefix kept framing intact); a length over [`MAX_FRAME`] is answered with
/// [`WireError::FrameTooLarge`] and only that connection is closed.
pub struct KvServer {
    config: ServerConfig,
    listener: Mutex<Option<TcpListener>>,
    local: SocketAddr,
    counters: Counters,
    stopped: AtomicBool,
    /// Open connections, to close them at shutdown.
    conns: Mutex<Vec<(u64, TcpStream)>>,
    next_conn: AtomicU64,
    /// The node's transaction coordinator, set by [`KvServer::serve`].
    coordinator: std::sync::OnceLock<Option<Arc<NodeCoordinator>>>,
    /// The accept thread, joined by [`KvServer::shutdown`].
    accept_thread: Mutex<Option<JoinHandle<()>>>,
    /// Connection threads that may still run (finished ones are pruned as new ones start),
    /// awaited by [`KvServer::shutdown`].
    conn_threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for KvServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvServer")
            .field("node", &self.config.node)
            .field("local", &self.local)
            .finish()
    }
}

impl KvServer {
    /// Binds `addr` (before the node starts, so that a busy port fails early).
    ///
    /// # Errors
    /// The bind's I/O error; [`std::io::ErrorKind::InvalidInput`] for a config without a
    /// node or cluster id (such as [`ServerConfig::default`]).
    pub fn bind(addr: SocketAddr, config: ServerConfig) -> std::io::Result<Arc<KvServer>> {
        if config.node == 0 || config.cluster_id.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "server config without a node or cluster id",
            ));
        }
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        Ok(Arc::new(KvServer {
            config,
            listener: Mutex::new(Some(listener)),
            local,
            counters: Counters::default(),
            stopped: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
            next_conn: AtomicU64::new(0),
            coordinator: std::sync::OnceLock::new(),
            accept_thread: Mutex::new(None),
            conn_threads: Mutex::new(Vec::new()),
        }))
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Starts accepting connections for `service` (the node's `KvRequest`s) and
    /// `coordinator` (its transaction sessions; `None`: every session operation is refused).
    ///
    /// # Errors
    /// If the accept thread cannot be spawned, or `serve` was called before.
    pub fn serve(
        self: &Arc<Self>,
        service: Arc<dyn KvService>,
        coordinator: Option<Arc<NodeCoordinator>>,
    ) -> std::io::Result<()> {
        let listener = self
            .listener
            .lock()
            .take()
            .ok_or_else(|| std::io::Error::other("KvServer::serve called twice"))?;
        let _ = self.coordinator.set(coordinator);
        let me = self.clone();
        let handle = std::thread::Builder::new()
            .name("kv-accept".into())
            .spawn(move || me.accept_loop(listener, service))?;
        *self.accept_thread.lock() = Some(handle);
        Ok(())
    }

    /// The server's counters.
    pub fn stats(&self) -> ServerStats {
        let c = &self.counters;
        ServerStats {
            connections: c.connections.load(Ordering::Relaxed),
            open_connections: c.open_connections.load(Ordering::Relaxed),
            refused_busy: c.refused_busy.load(Ordering::Relaxed),
            bad_handshakes: c.bad_handshakes.load(Ordering::Relaxed),
            bad_frames: c.bad_frames.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            txn_ops: c.txn_ops.load(Ordering::Relaxed),
            txns_rolled_back_on_close: c.txns_rolled_back_on_close.load(Ordering::Relaxed),
        }
    }

    /// Stops accepting, closes every connection, and waits until `deadline` for the
    /// connection threads to end. Returns how many were still running then (0 when all
    /// ended).
    ///
    /// Connections are closed for reading first: a thread waiting for a request ends at
    /// once, and one running a request finishes it and can still write its answer for a
    /// second (each write bounded by that too), after which every connection is closed whole
    /// and a later answer is lost. A session's open transactions are rolled back by its
    /// thread. Waiting matters to the caller's shutdown order: once this returns 0, no
    /// session uses the node's coordinator or storage, so they can be closed without a
    /// commit running on behind them.
    pub fn shutdown(&self, deadline: Instant) -> usize {
        self.stopped.store(true, Ordering::SeqCst);
        // Every stream registered so far. One registered later cannot exist:
        // `serve_connection` registers under the `conns` lock only while the flag is unset.
        let conns = std::mem::take(&mut *self.conns.lock());
        for (_, c) in &conns {
            let _ = c.set_write_timeout(Some(ANSWER_WAIT));
            let _ = c.shutdown(Shutdown::Read);
        }
        // Wake the accept loop so that it sees the flag. A connection accepted after the flag
        // was set never gets a session, so only the threads started before matter below.
        let _ = TcpStream::connect_timeout(&self.local, Duration::from_millis(200));
        let threads = std::mem::take(&mut *self.conn_threads.lock());
        let answer_by = deadline.min(Instant::now() + ANSWER_WAIT);
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < answer_by {
            std::thread::sleep(Duration::from_millis(5));
        }
        for (_, c) in &conns {
            let _ = c.shutdown(Shutdown::Both);
        }
        let still_running = threads
            .into_iter()
            .map(|t| join_by(t, deadline))
            .filter(|ended| !ended)
            .count();
        // The accept thread gets a short wait of its own: when the wake-up connection could
        // not reach it, it ends at the next connection, which it closes unanswered.
        let accept = self.accept_thread.lock().take();
        if let Some(accept) = accept {
            join_by(accept, deadline.min(Instant::now() + ACCEPT_WAIT));
        }
        still_running
    }

    fn accept_loop(self: Arc<Self>, listener: TcpListener, service: Arc<dyn KvService>) {
        for conn in listener.incoming() {
            if self.stopped.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = conn else { continue };
            let open = self.counters.open_connections.load(Ordering::SeqCst);
            if open >= self.config.max_connections as u64 {
                self.counters.refused_busy.fetch_add(1, Ordering::Relaxed);
                let mut w = &stream;
                let _ = send(
                    &mut w,
                    &ServerFrame::Error(WireError::Busy {
                        max: self.config.max_connections as u64,
                    }),
                );
                continue;
            }
            self.counters
                .open_connections
                .fetch_add(1, Ordering::SeqCst);
            let me = self.clone();
            let svc = service.clone();
            let spawned = std::thread::Builder::new()
                .name("kv-conn".into())
                .spawn(move || {
                    me.serve_connection(stream, svc.as_ref());
                    me.counters.open_connections.fetch_sub(1, Ordering::SeqCst);
                });
            match spawned {
                Ok(handle) => {
                    let mut threads = self.conn_threads.lock();
                    threads.retain(|t| !t.is_finished());
                    threads.push(handle);
                }
                Err(_) => {
                    self.counters
                        .open_connections
                        .fetch_sub(1, Ordering::SeqCst);
                }
            }
        }
    }

    fn serve_connection(&self, stream: TcpStream, service: &dyn KvService) {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        // A stream that cannot be registered could not be closed by `shutdown`, which would
        // then wait for it in vain: refuse it.
        let Ok(c) = stream.try_clone() else {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        };
        {
            let mut conns = self.conns.lock();
            if self.stopped.load(Ordering::SeqCst) {
                return;
            }
            conns.push((conn_id, c));
        }
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(self.config.handshake_timeout));
        let mut reader = BufReader::new(&stream);
        let mut writer = BufWriter::new(&stream);
        if self.handshake(&mut reader, &mut writer) {
            let _ = stream.set_read_timeout(None);
            self.counters.connections.fetch_add(1, Ordering::Relaxed);
            let mut session = TxnSession::new(self.coordinator.get().cloned().flatten());
            self.request_loop(&mut reader, &mut writer, service, &mut session);
            // Dropping the session rolls back what the client left open.
            self.counters
                .txns_rolled_back_on_close
                .fetch_add(session.open_count() as u64, Ordering::Relaxed);
        }
        let _ = stream.shutdown(Shutdown::Both);
        self.conns.lock().retain(|(id, _)| *id != conn_id);
    }

    /// Reads and checks the hello; answers the welcome or the refusal.
    fn handshake(&self, r: &mut impl std::io::Read, w: &mut impl std::io::Write) -> bool {
        let mut buf = Vec::new();
        let refusal = match read_frame(r, &mut buf) {
            Ok(()) => match decode_hello(&buf) {
                Ok(hello) => match hello.cluster_id {
                    Some(theirs) if theirs != self.config.cluster_id => {
                        WireError::ClusterMismatch {
                            ours: self.config.cluster_id.clone(),
                            theirs,
                        }
                    }
                    _ => {
                        let welcome = ServerFrame::Welcome {
                            node: self.config.node,
                            cluster_id: self.config.cluster_id.clone(),
                            peers: self.config.peers.clone(),
                        };
                        return send(w, &welcome).is_ok();
                    }
                },
                Err(e) => e,
            },
            Err(FrameError::TooLarge { len, max }) => WireError::FrameTooLarge {
                len: len as u64,
                max: max as u64,
            },
            // Closed, timed out or failed before saying anything: nothing to answer.
            Err(_) => {
                self.counters.bad_handshakes.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        };
        self.counters.bad_handshakes.fetch_add(1, Ordering::Relaxed);
        let _ = send(w, &ServerFrame::Error(refusal));
        false
    }

    fn request_loop(
        &self,
        r: &mut impl std::io::Read,
        w: &mut impl std::io::Write,
        service: &dyn KvService,
        session: &mut TxnSession,
    ) {
        let mut buf = Vec::new();
        while !self.stopped.load(Ordering::SeqCst) {
            let reply = match read_frame(r, &mut buf) {
                Ok(()) => match postcard::from_bytes::<ClientFrame>(&buf) {
                    Ok(frame) => self.answer(frame, service, session),
                    Err(e) => {
                        self.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
                        ServerFrame::Error(WireError::BadFrame {
                            detail: e.to_string(),
                        })
                    }
                },
                Err(FrameError::TooLarge { len, .. }) => {
                    self.counters.bad_frames.fetch_add(1, Ordering::Relaxed);
                    let _ = send(
                        w,
                        &ServerFrame::Error(WireError::FrameTooLarge {
                            len: len as u64,
                            max: MAX_FRAME as u64,
                        }),
                    );
                    return;
                }
                Err(_) => return,
            };
            match send(w, &reply) {
                Ok(()) => {}
                // An answer over the frame limit (a huge scan): refuse it, keep serving.
                Err(FrameError::TooLarge { len, max }) => {
                    let refusal = ServerFrame::Error(WireError::FrameTooLarge {
                        len: len as u64,
                        max: max as u64,
                    });
                    if send(w, &refusal).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }

    fn answer(
        &self,
        frame: ClientFrame,
        service: &dyn KvService,
        session: &mut TxnSession,
    ) -> ServerFrame {
        match frame {
            ClientFrame::Request { id, req } => {
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                match service.call(req) {
                    Ok(resp) => ServerFrame::Response { id, resp },
                    Err(e) => ServerFrame::Unavailable {
                        id,
                        detail: e.to_string(),
                    },
                }
            }
            ClientFrame::ServerStats { id } => ServerFrame::Stats {
                id,
                stats: self.stats(),
            },
            ClientFrame::Txn { id, op } => {
                self.counters.txn_ops.fetch_add(1, Ordering::Relaxed);
                ServerFrame::Txn {
                    id,
                    result: session.apply(op),
                }
            }
        }
    }
}

/// Encodes and writes one server frame.
fn send(w: &mut impl std::io::Write, frame: &ServerFrame) -> Result<(), FrameError> {
    let body =
        postcard::to_allocvec(frame).map_err(|e| FrameError::Io(std::io::Error::other(e)))?;
    write_frame(w, &body)
}
