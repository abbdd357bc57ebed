//! [`NodeProcess`]: everything `surgedb node` runs: the locked data directory, a
//! `raft-lite` node over a WAL and TCP, the txn crate's `KvNode`, its transaction
//! coordinator with a binlog in `DIR/binlog`, and the client server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use surge_raft_lite::{Node as RaftNode, NodeId, NodeOptions, TcpTransport, Wal, WalOptions};
use surge_txn::{
    BinlogOptions, ClientConfig, EngineIdentity, EngineKind, FjallEngine, FjallOptions,
    GcHoldOptions, KvNode, KvNodeConfig, LockMode,
};

use super::coordinator::NodeCoordinator;
use super::data_dir::{DataDir, DataDirError};
use super::gc_worker::GcConfig;
use super::kv_server::{KvServer, ServerConfig};
use super::local_first_router::LocalFirstRouter;
use super::mysql_front::MysqlFront;
use super::peer_spec::{PeerSpecError, raft_addr_of, resolve};
use crate::client::{RemoteConfig, TcpRouter};

/// How many data regions a cluster of node processes is founded with: split evenly on the
/// first key byte, ids 2 to 17 (the meta group is 1), every node a replica of each.
pub const INITIAL_REGIONS: usize = 16;

/// How many MySQL connections a node serves at once (a thread each).
pub const MYSQL_MAX_CONNECTIONS: usize = 2048;

/// The coordinator's binlog directory inside a node's data directory.
pub const BINLOG_SUBDIR: &str = "binlog";
/// The replica stream's directory inside a node's data directory.
pub const STREAM_SUBDIR: &str = "stream";

/// How long [`NodeProcess::shutdown`] waits in all for the steps that can block: the
/// connection threads to end, then the coordinator's background opening to give up.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// A value of [`NodeProcess::run_until`]'s `stop`: stop, handing this node's leaders over
/// first ([`NodeConfig::evict_leaders_on_stop`]).
pub const STOP_WITH_HANDOVER: usize = 1;

/// A value of [`NodeProcess::run_until`]'s `stop`: stop without the leader handover.
pub const STOP_WITHOUT_HANDOVER: usize = 2;

/// [`NodeConfig::evict_leaders_on_stop`]'s default: enough for every group of a node to
/// move to a live peer (a few milliseconds each) and for one dead peer's wait.
pub const DEFAULT_EVICT_LEADERS_ON_STOP: Duration = Duration::from_secs(5);

/// How to run one node.
///
/// Build it with [`NodeConfig::new`] (or [`NodeConfig::default`] and the setters of its
/// id, peers and data directory) and the `with_*` methods, or assign the public fields of
/// such a value: the struct is `#[non_exhaustive]`, so later settings can be added without
/// breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// This node's id (a key of `peers`).
    pub id: NodeId,
    /// Every node (this one included) with its client address; Raft listens on the next
    /// port of each.
    pub peers: BTreeMap<NodeId, String>,
    /// The data directory (`DIR/raft` holds the WAL, `DIR/engine` the disk engine).
    pub data: PathBuf,
    /// The cluster id (`None`: the directory's, or one derived from `peers`).
    pub cluster_id: Option<String>,
    /// The pessimistic lock mode at start.
    pub lock_mode: LockMode,
    /// Raft tick length.
    pub tick: Duration,
    /// Raft election timeout in ticks.
    pub election_tick: u32,
    /// Raft heartbeat interval in ticks.
    pub heartbeat_tick: u32,
    /// Client connections served at once.
    pub max_connections: usize,
    /// Where to serve the MySQL protocol (`None`: not served).
    pub mysql_listen: Option<String>,
    /// The MySQL port's settings (users, packet size, version string).
    pub mysql: crate::mysql::MysqlConfig,
    /// The node's transaction coordinator (timeouts, retry budget). Its binlog is always
    /// `DATA/binlog` with server id and GTID domain = the node id; a `binlog` set here only
    /// contributes its size settings (rename threshold, rotation size).
    pub coordinator: ClientConfig,
    /// Where the regions' data lives: on disk in `DATA/engine` (the default) or in memory.
    pub engine: EngineKind,
    /// The replica stream this node keeps in `DATA/stream` and serves to MariaDB replicas
    /// on its MySQL port (`None`: neither; the directory set here is ignored). Every node
    /// of a cluster must have the same settings, so that their copies are byte-identical.
    pub stream: Option<crate::stream::StreamConfig>,
    /// The bound on transaction age and the MVCC garbage collection run by the node that
    /// leads the meta group (`None`, the default: no bound and no collection; every node of
    /// a cluster must agree).
    pub gc: Option<GcConfig>,
    /// Remove the coordinator's binlog files (`DATA/binlog`) last written longer ago than
    /// this (MariaDB's `binlog_expire_logs_seconds`; `None`, the default as MariaDB's:
    /// keep them all). Never the current file, nor one the binlog's recovery could still
    /// read.
    pub binlog_expire: Option<Duration>,
    /// A region led here splits once its data passes this many bytes (TiKV's
    /// `region-split-size`, 96 MiB by default as there); `None`: never by size.
    pub split_size: Option<u64>,
    /// At a clean stop ([`NodeProcess::shutdown`]), first hand every group this node
    /// leads to another node, for about this long at most ([`KvNode::evict_leaders`]): the
    /// regions then need no election, and their in-memory pessimistic locks go with them.
    /// `None`: stop without it (the regions elect new leaders after an election timeout,
    /// and their in-memory locks are lost, as at a crash). Default 5 s.
    pub evict_leaders_on_stop: Option<Duration>,
}

impl Default for NodeConfig {
    /// The defaults of [`NodeConfig::new`] without an id, peers or data directory:
    /// [`NodeProcess::start`] refuses it ([`NodeError::NotAPeer`]) until they are set.
    fn default() -> NodeConfig {
        NodeConfig {
            id: 0,
            peers: BTreeMap::new(),
            data: PathBuf::new(),
            cluster_id: None,
            lock_mode: LockMode::InMemory,
            tick: Duration::from_millis(20),
            election_tick: 25,
            heartbeat_tick: 3,
            max_connections: 1024,
            mysql_listen: None,
            // sysbench runs the write-ups at up to 512 threads, a connection each (MySQL's
            // own default, 151, refuses the rest with 1040).
            mysql: crate::mysql::MysqlConfig::default().with_max_connections(MYSQL_MAX_CONNECTIONS),
            coordinator: ClientConfig::default(),
            engine: EngineKind::Disk(FjallOptions::default()),
            stream: Some(crate::stream::StreamConfig::new(PathBuf::new())),
            gc: None,
            binlog_expire: None,
            split_size: Some(surge_txn::DEFAULT_SPLIT_SIZE),
            evict_leaders_on_stop: Some(DEFAULT_EVICT_LEADERS_ON_STOP),
        }
    }
}

impl NodeConfig {
    /// Defaults for node `id` of `peers` with data under `data`: in-memory locks, 20 ms
    /// ticks, elections after 500 ms (25 ticks: processes on a busy machine get scheduled
    /// late, and a shorter timeout makes leaders flap), heartbeats every 60 ms, 1024
    /// connections.
    pub fn new(id: NodeId, peers: BTreeMap<NodeId, String>, data: PathBuf) -> NodeConfig {
        NodeConfig::default()
            .with_id(id)
            .with_peers(peers)
            .with_data(data)
    }

    /// The coordinator's configuration: [`NodeConfig::coordinator`] with its binlog in
    /// `DATA/binlog`, server id and GTID domain = the node id, so that the files of
    /// different nodes never clash in one replica (each node is its own MariaDB primary),
    /// and, when [`NodeConfig::gc`] is set, a GC hold owned by the node id.
    ///
    /// # Errors
    /// [`NodeError::IdTooLarge`] when the node id does not fit a binlog server id.
    pub fn coordinator_config(&self) -> Result<ClientConfig, NodeError> {
        let id = u32::try_from(self.id).map_err(|_| NodeError::IdTooLarge { id: self.id })?;
        let dir = self.data.join(BINLOG_SUBDIR);
        let options = match &self.coordinator.binlog {
            Some(b) => b
                .clone()
                .with_dir(dir)
                .with_server_id(id)
                .with_gtid_domain(id),
            None => BinlogOptions::new(dir)
                .with_server_id(id)
                .with_gtid_domain(id),
        };
        // With garbage collection on, the coordinator keeps a GC hold, so that a crash
        // followed by a downtime longer than the life time keeps what its recovery needs.
        let hold = self.gc.map(|g| {
            GcHoldOptions::new(self.id, g.life_time + g.margin)
                .with_ttl(g.hold_ttl)
                .with_refresh(
                    g.interval
                        .clamp(Duration::from_secs(1), Duration::from_secs(30)),
                )
        });
        Ok(self
            .coordinator
            .clone()
            .with_binlog(Some(options))
            .with_gc_hold(hold))
    }

    /// Sets [`NodeConfig::id`].
    #[must_use]
    pub fn with_id(mut self, id: NodeId) -> Self {
        self.id = id;
        self
    }

    /// Sets [`NodeConfig::peers`].
    #[must_use]
    pub fn with_peers(mut self, peers: BTreeMap<NodeId, String>) -> Self {
        self.peers = peers;
        self
    }

    /// Sets [`NodeConfig::data`].
    #[must_use]
    pub fn with_data(mut self, data: PathBuf) -> Self {
        self.data = data;
        self
    }

    /// Sets [`NodeConfig::cluster_id`].
    #[must_use]
    pub fn with_cluster_id(mut self, cluster_id: Option<String>) -> Self {
        self.cluster_id = cluster_id;
        self
    }

    /// Sets [`NodeConfig::gc`].
    #[must_use]
    pub fn with_gc(mut self, gc: Option<GcConfig>) -> Self {
        self.gc = gc;
        self
    }

    /// Sets [`NodeConfig::binlog_expire`].
    #[must_use]
    pub fn with_binlog_expire(mut self, keep: Option<Duration>) -> Self {
        self.binlog_expire = keep;
        self
    }

    /// Sets [`NodeConfig::evict_leaders_on_stop`].
    #[must_use]
    pub fn with_evict_leaders_on_stop(mut self, budget: Option<Duration>) -> Self {
        self.evict_leaders_on_stop = budget;
        self
    }

    /// Sets [`NodeConfig::engine`].
    #[must_use]
    pub fn with_engine(mut self, engine: EngineKind) -> Self {
        self.engine = engine;
        self
    }

    /// Sets [`NodeConfig::lock_mode`].
    #[must_use]
    pub fn with_lock_mode(mut self, lock_mode: LockMode) -> Self {
        self.lock_mode = lock_mode;
        self
    }

    /// Sets [`NodeConfig::tick`].
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets [`NodeConfig::election_tick`].
    #[must_use]
    pub fn with_election_tick(mut self, election_tick: u32) -> Self {
        self.election_tick = election_tick;
        self
    }

    /// Sets [`NodeConfig::heartbeat_tick`].
    #[must_use]
    pub fn with_heartbeat_tick(mut self, heartbeat_tick: u32) -> Self {
        self.heartbeat_tick = heartbeat_tick;
        self
    }

    /// Sets [`NodeConfig::max_connections`].
    #[must_use]
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Sets [`NodeConfig::mysql_listen`].
    #[must_use]
    pub fn with_mysql_listen(mut self, addr: Option<String>) -> Self {
        self.mysql_listen = addr;
        self
    }

    /// Sets [`NodeConfig::coordinator`].
    #[must_use]
    pub fn with_coordinator(mut self, coordinator: ClientConfig) -> Self {
        self.coordinator = coordinator;
        self
    }
}

/// Why a node could not start.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The node is not one of its own peers.
    #[error("node {id} is not in --peers {peers:?}")]
    NotAPeer {
        /// The node.
        id: NodeId,
        /// The peers given.
        peers: Vec<NodeId>,
    },
    /// A peer address is unusable.
    #[error(transparent)]
    Peer(#[from] PeerSpecError),
    /// The data directory is held, foreign or unreadable.
    #[error(transparent)]
    DataDir(#[from] DataDirError),
    /// A listening socket could not be bound.
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Which listener.
        what: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// The WAL or the raft node failed.
    #[error("raft: {0}")]
    Raft(#[from] surge_raft_lite::Error),
    /// The transactional node failed to start.
    #[error("kv node: {0}")]
    Kv(#[from] surge_txn::ServiceError),
    /// The disk engine in `DATA/engine` cannot be opened (damaged, another node's).
    #[error("disk engine: {0}")]
    Engine(#[from] surge_txn::EngineError),
    /// A thread could not be spawned.
    #[error("cannot spawn a thread: {0}")]
    Thread(std::io::Error),
    /// The node id does not fit a binlog server id (32 bits).
    #[error("node id {id} does not fit a binlog server id (at most {max})", max = u32::MAX)]
    IdTooLarge {
        /// The node id.
        id: NodeId,
    },
}

/// A running node. Dropping it without [`NodeProcess::shutdown`] stops it too (less
/// politely: the raft driver stops when its handle drops).
#[derive(Debug)]
pub struct NodeProcess {
    server: Arc<KvServer>,
    node: Arc<KvNode>,
    coordinator: Arc<NodeCoordinator>,
    transport: Arc<TcpTransport>,
    mysql: Option<MysqlFront>,
    /// The GC thread and what stops it.
    gc: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    /// The binlog expiry thread and what stops it.
    binlog_expiry: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    /// [`NodeConfig::evict_leaders_on_stop`].
    evict_leaders_on_stop: Option<Duration>,
    dir: DataDir,
}

impl NodeProcess {
    /// Locks the data directory, opens the WAL, starts Raft over TCP, hosts the regions
    /// and serves clients.
    ///
    /// # Errors
    /// [`NodeError`] naming what failed; nothing is left running.
    pub fn start(config: &NodeConfig) -> Result<NodeProcess, NodeError> {
        let coordinator_config = config.coordinator_config()?;
        let listen = config
            .peers
            .get(&config.id)
            .ok_or_else(|| NodeError::NotAPeer {
                id: config.id,
                peers: config.peers.keys().copied().collect(),
            })?
            .clone();
        let dir = DataDir::open(
            &config.data,
            config.cluster_id.as_deref(),
            config.id,
            &config.peers,
        )?;
        let cluster_id = dir.identity().cluster_id.clone();
        let server = KvServer::bind(
            resolve(&listen)?,
            ServerConfig::new(config.id, cluster_id.clone())
                .with_peers(config.peers.iter().map(|(i, a)| (*i, a.clone())).collect())
                .with_max_connections(config.max_connections)
                .with_handshake_timeout(Duration::from_secs(10)),
        )
        .map_err(|source| NodeError::Bind {
            addr: listen.clone(),
            what: "clients",
            source,
        })?;
        // Bound before anything starts, so that a bad or taken address fails the start.
        let mysql_listener = match &config.mysql_listen {
            None => None,
            Some(addr) => Some(
                std::net::TcpListener::bind(resolve(addr)?).map_err(|source| NodeError::Bind {
                    addr: addr.clone(),
                    what: "MySQL clients",
                    source,
                })?,
            ),
        };
        let mut raft_peers = std::collections::HashMap::new();
        for (id, addr) in config.peers.iter().filter(|(id, _)| **id != config.id) {
            raft_peers.insert(*id, raft_addr_of(addr)?);
        }
        let raft_listen = raft_addr_of(&listen)?;
        let transport = TcpTransport::bind(config.id, raft_listen, raft_peers)?;
        let wal = Wal::open(config.data.join("raft"), WalOptions::default())?;
        // Groups the log holds beyond the founding map (regions made by splits).
        let recovered_groups = surge_raft_lite::LogStore::groups(&wal);
        let mut opts = NodeOptions::new(config.id);
        opts.tick = config.tick;
        opts.snapshot_every = 2000;
        // A region's snapshot encodes all its data: without a size bound, a large UPDATE
        // (thousands of entries) re-encoded a large region every 2000 entries, which made
        // its cost grow with the square of its size.
        opts.snapshot_log_percent = 75;
        opts.raft.election_tick = config.election_tick;
        opts.raft.heartbeat_tick = config.heartbeat_tick;
        opts.raft.seed = config.id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let raft = RaftNode::start(opts, Box::new(wal), transport.clone())?;
        transport.serve(raft.mailbox())?;
        let router = Arc::new(
            TcpRouter::new(
                config.peers.iter().map(|(i, a)| (*i, a.clone())),
                &RemoteConfig::default()
                    .with_cluster_id(Some(cluster_id))
                    .with_from_node(Some(config.id)),
            )
            .map_err(NodeError::Kv)?,
        );
        let peer_ids: Vec<NodeId> = config.peers.keys().copied().collect();
        let mut kv = KvNodeConfig::new(config.id);
        kv.lock_mode = config.lock_mode;
        kv.split_size = config.split_size;
        // Half the election timeout, as `LocalCluster` sets it (the library's default of
        // 40 ms suits 10 ms ticks): a follower ignores votes for at least
        // `(election_tick - 1)` ticks after it heard from its leader (480 ms here), and a
        // busy leader renews its lease in its second half, about 8 rounds a second per
        // group instead of one every 20 ms.
        kv.read_lease = config.tick * config.election_tick / 2;
        kv.gc_life_time = config.gc.map(|g| g.life_time);
        if let EngineKind::Disk(options) = config.engine {
            let identity = EngineIdentity::new(dir.identity().cluster_id.clone(), config.id);
            match FjallEngine::open(config.data.join("engine"), &identity, options) {
                Ok(engine) => kv.disk_engine = Some(engine),
                Err(e) => {
                    transport.shutdown();
                    return Err(e.into());
                }
            }
        }
        // Every node founds the same map from the same inputs (the sorted peer ids of a
        // BTreeMap and the same split keys); a map that differed between nodes would split
        // the cluster.
        let regions = surge_txn::rpc::initial_regions(
            &surge_txn::rpc::even_split_keys(INITIAL_REGIONS),
            &peer_ids,
        );
        let node = match KvNode::start(
            kv,
            raft,
            regions,
            peer_ids,
            recovered_groups,
            router.clone(),
        ) {
            Ok(n) => n,
            Err(e) => {
                transport.shutdown();
                return Err(e.into());
            }
        };
        // The coordinator opens in the background: its recovery may need peers that are
        // not up yet, and the node must serve them meanwhile (they may need it to elect).
        let coordinator_router = Arc::new(LocalFirstRouter::new(config.id, node.clone(), router));
        let started = NodeCoordinator::start(config.id, coordinator_router, coordinator_config)
            .and_then(|c| match server.serve(node.clone(), Some(c.clone())) {
                Ok(()) => Ok(c),
                Err(e) => {
                    // Its opener may have opened the binlog already: close it first.
                    let _ = c.shutdown(std::time::Instant::now() + SHUTDOWN_WAIT);
                    Err(e)
                }
            });
        let coordinator = match started {
            Ok(c) => c,
            Err(e) => {
                node.shutdown();
                transport.shutdown();
                return Err(NodeError::Thread(e));
            }
        };
        let mysql = match mysql_listener {
            None => None,
            Some(l) => {
                let stream = config.stream.clone().map(|mut s| {
                    s.dir = config.data.join(STREAM_SUBDIR);
                    s
                });
                match MysqlFront::start(
                    config.id,
                    l,
                    coordinator.clone(),
                    config.mysql.clone(),
                    stream,
                ) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        let _ = coordinator.shutdown(std::time::Instant::now() + SHUTDOWN_WAIT);
                        let _ = server.shutdown(std::time::Instant::now() + SHUTDOWN_WAIT);
                        node.shutdown();
                        transport.shutdown();
                        return Err(NodeError::Thread(e));
                    }
                }
            }
        };
        // A GC thread that cannot start leaves the data uncollected, not the node down.
        let gc = config.gc.and_then(|g| {
            let stop = Arc::new(AtomicBool::new(false));
            super::gc_worker::spawn(
                Arc::downgrade(&node),
                Arc::downgrade(&coordinator),
                g,
                stop.clone(),
            )
            .inspect_err(|e| eprintln!("surgedb node {}: no GC thread: {e}", config.id))
            .ok()
            .map(|handle| (stop, handle))
        });
        // Likewise: the files stay until a later start expires them.
        let binlog_expiry = config.binlog_expire.and_then(|keep| {
            let stop = Arc::new(AtomicBool::new(false));
            super::binlog_expiry::spawn(config.id, Arc::downgrade(&coordinator), keep, stop.clone())
                .inspect_err(|e| {
                    eprintln!("surgedb node {}: no binlog expiry thread: {e}", config.id)
                })
                .ok()
                .map(|handle| (stop, handle))
        });
        Ok(NodeProcess {
            server,
            node,
            coordinator,
            transport,
            mysql,
            gc,
            binlog_expiry,
            evict_leaders_on_stop: config.evict_leaders_on_stop,
            dir,
        })
    }

    /// The client server's address.
    pub fn client_addr(&self) -> std::net::SocketAddr {
        self.server.local_addr()
    }

    /// The Raft listener's address.
    pub fn raft_addr(&self) -> std::net::SocketAddr {
        self.transport.local_addr()
    }

    /// The cluster id in force.
    pub fn cluster_id(&self) -> &str {
        &self.dir.identity().cluster_id
    }

    /// The hosted node.
    pub fn node(&self) -> &Arc<KvNode> {
        &self.node
    }

    /// The node's transaction coordinator.
    pub fn coordinator(&self) -> &Arc<NodeCoordinator> {
        &self.coordinator
    }

    /// Runs until `stop` is set (by SIGTERM or SIGINT in `surgedb node`), or until the
    /// node's Raft driver stops on its own ([`KvNode::raft_failure`]: a full disk, say),
    /// then shuts down. Returns that failure, if that is why: the node would otherwise stay
    /// up serving nothing (its regions' leaders elsewhere, clients retrying it), while a
    /// process that ends can be restarted once the cause is fixed, and recovers from its
    /// WAL and engine as after a crash.
    ///
    /// `stop` is 0 while the node runs, [`STOP_WITH_HANDOVER`] (SIGTERM in `surgedb node`)
    /// or [`STOP_WITHOUT_HANDOVER`] (SIGINT, which `surgedb cluster stop` sends when it
    /// stops every node: no node would stay to take the leaders, and offering them would
    /// only delay the stop).
    pub fn run_until(mut self, stop: &AtomicUsize) -> Option<String> {
        let failure = loop {
            match stop.load(Ordering::SeqCst) {
                0 => {}
                STOP_WITHOUT_HANDOVER => {
                    self.evict_leaders_on_stop = None;
                    break None;
                }
                _ => break None,
            }
            if let Some(reason) = self.node.raft_failure() {
                break Some(reason);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.shutdown();
        failure
    }

    /// Stops cleanly, in this order: lock waits ended (every request parked on a lock is
    /// answered the retryable `RegionError::NodeStopping`, and one that would have to wait
    /// is answered so at once: a wait of the client's choosing, 60 s say, would otherwise
    /// hold the next step for the whole budget); the groups this node leads handed to
    /// other nodes, with their in-memory locks ([`NodeConfig::evict_leaders_on_stop`]);
    /// no new connections; connections closed
    /// and their threads awaited (a request in flight finishes and, briefly, can still
    /// answer; sessions' open transactions are rolled back); the coordinator's binlog
    /// closed; the raft driver stopped after its last write (everything acknowledged was
    /// fsynced before its answer); the Raft connections closed; then the data directory
    /// unlocked.
    ///
    /// The connection threads and the coordinator's background opening share one budget,
    /// [`SHUTDOWN_WAIT`], so that `surgedb cluster stop` (which kills a node still running
    /// after its `--timeout`, 30 s by default) rarely has to; what did not end in time is
    /// reported on stderr and left to the next start's recovery, as after a crash. The raft
    /// driver's stop is not bounded by it (it finishes the write in hand).
    ///
    /// A session's rollback needs the region leaders of its keys. When the whole cluster
    /// stops at once, those on other nodes may be stopping too: what such a rollback cannot
    /// reach is left to lock resolution (the locks' TTL), as after a crash.
    pub fn shutdown(self) {
        let ended = self.node.stop_lock_waits();
        if ended > 0 {
            eprintln!(
                "surgedb node {}: stopping: {ended} lock wait(s) ended",
                self.node.id()
            );
        }
        // While everything still serves (requests that reach a moved region are told its
        // new leader, and sessions' rollbacks below reach it); not after the Raft driver
        // failed, when no group can move.
        if let Some(budget) = self
            .evict_leaders_on_stop
            .filter(|_| self.node.raft_failure().is_none())
        {
            let out = self.node.evict_leaders(budget);
            if out.led > 0 {
                eprintln!(
                    "surgedb node {}: stopping: {} of {} leaders moved to other nodes ({} in-memory locks with them) in {} ms",
                    self.node.id(),
                    out.moved,
                    out.led,
                    out.locks_moved,
                    out.elapsed.as_millis()
                );
            }
        }
        let deadline = std::time::Instant::now() + SHUTDOWN_WAIT;
        // Not joined: a collection in progress may spend a request's backoff (20 s) on
        // regions that are stopping. Until it ends it keeps the node (and so its disk
        // engine) and the coordinator alive; the steps below stop both, and a process
        // exit ends the thread.
        if let Some((stop, _thread)) = self.gc {
            stop.store(true, Ordering::SeqCst);
        }
        if let Some((stop, thread)) = self.binlog_expiry {
            stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
        }
        // MySQL sessions first: their rollbacks need the coordinator and the regions.
        if let Some(m) = self.mysql {
            m.shutdown();
        }
        let still_running = self.server.shutdown(deadline);
        if still_running > 0 {
            eprintln!(
                "surgedb node: {still_running} connection(s) still running after {SHUTDOWN_WAIT:?}; stopping anyway"
            );
        }
        let opener_deadline = deadline.max(std::time::Instant::now() + Duration::from_millis(100));
        // A close failure is reported on stderr by the coordinator.
        let _ = self.coordinator.shutdown(opener_deadline);
        self.node.shutdown();
        self.transport.shutdown();
        drop(self.dir);
    }
}
