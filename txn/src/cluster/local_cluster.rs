//! [`LocalCluster`]: N nodes in one process with durable WALs and an in-memory network.

use std::sync::Arc;
use std::time::{Duration, Instant};

use surge_raft_lite::{
    MemNetwork, NetFaults, Node as RaftNode, NodeId, NodeOptions, Wal, WalOptions,
};

use super::config::{ClusterConfig, EngineKind};
use super::router::LocalRouter;
use crate::placement::{META_REGION_ID, initial_regions};
use crate::region::{LockMode, RegionInfo};
use crate::service::{KvNode, KvNodeConfig, KvRequest, KvResponse, NodeRouter};
use crate::{EngineIdentity, FjallEngine};

/// Why a local cluster could not do what was asked.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A node's WAL or raft driver failed to start.
    #[error("node {node}: {detail}")]
    Node {
        /// The node.
        node: NodeId,
        /// What failed.
        detail: String,
    },
    /// No leader was elected in time.
    #[error("no leader for group {group} within {waited_ms} ms")]
    NoLeader {
        /// The Raft group.
        group: u64,
        /// How long we waited.
        waited_ms: u64,
    },
    /// An admin request (split, merge) failed.
    #[error("{what}: {detail}")]
    Admin {
        /// The request.
        what: &'static str,
        /// Why.
        detail: String,
    },
    /// The node id is not part of the cluster.
    #[error("no node {node} in the cluster")]
    UnknownNode {
        /// The node.
        node: NodeId,
    },
    /// A setting of the [`ClusterConfig`] is unusable.
    #[error("cluster config: {field} {reason}")]
    InvalidConfig {
        /// The setting.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// N nodes in one process: each with its WAL under `dir/node-<id>`, all talking over one
/// [`MemNetwork`] (with its faults: partition, drop, delay). A node can be stopped (its
/// memory, and with it every in-memory lock, is lost) and restarted from its directory.
pub struct LocalCluster {
    config: ClusterConfig,
    /// The lock mode set last (a restarted node comes back in it).
    lock_mode: parking_lot::Mutex<LockMode>,
    net: Arc<MemNetwork>,
    router: Arc<LocalRouter>,
    regions: Vec<RegionInfo>,
    peers: Vec<NodeId>,
    /// Each node's disk engine while any part of the node may still hold it: a node
    /// restarted before its old threads let go reuses it (fjall locks its directory).
    engines: parking_lot::Mutex<std::collections::HashMap<NodeId, std::sync::Weak<FjallEngine>>>,
}

impl std::fmt::Debug for LocalCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCluster")
            .field("nodes", &self.peers)
            .field("regions", &self.regions.len())
            .finish()
    }
}

impl LocalCluster {
    /// Starts (or restarts, when `config.dir` holds the WALs of an earlier run) the cluster
    /// and waits until every group has a leader.
    ///
    /// # Errors
    /// [`ClusterError::InvalidConfig`] without a directory (as [`ClusterConfig::default`])
    /// or nodes, [`ClusterError::Node`] if a node cannot start, [`ClusterError::NoLeader`]
    /// if the groups do not elect leaders within 30 s.
    pub fn start(config: ClusterConfig) -> Result<LocalCluster, ClusterError> {
        if config.dir.as_os_str().is_empty() {
            return Err(ClusterError::InvalidConfig {
                field: "dir",
                reason: "is empty: set it with ClusterConfig::with_dir",
            });
        }
        if config.nodes == 0 {
            return Err(ClusterError::InvalidConfig {
                field: "nodes",
                reason: "must be at least 1",
            });
        }
        let peers: Vec<NodeId> = (1..=config.nodes).collect();
        let regions = initial_regions(&config.split_keys, &peers);
        let cluster = LocalCluster {
            lock_mode: parking_lot::Mutex::new(config.lock_mode),
            net: MemNetwork::new(config.seed),
            router: Arc::new(LocalRouter::default()),
            regions,
            peers: peers.clone(),
            config,
            engines: parking_lot::Mutex::new(std::collections::HashMap::new()),
        };
        for id in &peers {
            cluster.router.set(*id, None);
        }
        for id in &peers {
            cluster.start_node(*id)?;
        }
        cluster.wait_for_leaders(Duration::from_secs(30))?;
        Ok(cluster)
    }

    fn start_node(&self, id: NodeId) -> Result<(), ClusterError> {
        let err = |detail: String| ClusterError::Node { node: id, detail };
        let dir = self.config.dir.join(format!("node-{id}"));
        std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        let wal = Wal::open(&dir, WalOptions::default()).map_err(|e| err(e.to_string()))?;
        let recovered_groups = surge_raft_lite::LogStore::groups(&wal);
        let mut opts = NodeOptions::new(id);
        opts.tick = self.config.tick;
        opts.snapshot_every = self.config.snapshot_every;
        opts.raft.election_tick = self.config.election_tick;
        opts.raft.heartbeat_tick = (self.config.election_tick / 10).max(1);
        opts.raft.seed = self.config.seed.wrapping_mul(31).wrapping_add(id);
        let raft = RaftNode::start(opts, Box::new(wal), self.net.clone())
            .map_err(|e| err(e.to_string()))?;
        self.net.register(id, raft.mailbox());
        let mut cfg = KvNodeConfig::new(id);
        cfg.disk_engine = self.disk_engine(id, &dir)?;
        cfg.lock_mode = *self.lock_mode.lock();
        cfg.budget = self.config.budget;
        cfg.transfer_timeout = self.config.transfer_timeout;
        cfg.merge_max_lock_bytes = self.config.merge_max_lock_bytes;
        cfg.split_size = self.config.split_size;
        cfg.gc_life_time = self.config.gc_life_time;
        // Half the smallest election timeout: see `KvNodeConfig::read_lease`.
        cfg.read_lease = self.config.tick * self.config.election_tick / 2;
        let node = KvNode::start(
            cfg,
            raft,
            self.regions.clone(),
            self.peers.clone(),
            recovered_groups,
            self.router.clone(),
        )
        .map_err(|e| err(e.to_string()))?;
        self.router.set(id, Some(node));
        Ok(())
    }

    /// Node `id`'s disk engine (none with [`EngineKind::Memory`]): the one still held by
    /// the node's previous run, if any part of it lives on, else opened from `dir/engine`
    /// (waiting up to 5 s for the previous run to let go of it).
    fn disk_engine(
        &self,
        id: NodeId,
        dir: &std::path::Path,
    ) -> Result<Option<Arc<FjallEngine>>, ClusterError> {
        let EngineKind::Disk(options) = self.config.engine else {
            return Ok(None);
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(e) = self
                .engines
                .lock()
                .get(&id)
                .and_then(std::sync::Weak::upgrade)
            {
                return Ok(Some(e));
            }
            match FjallEngine::open(
                dir.join("engine"),
                &EngineIdentity::new("local", id),
                options,
            ) {
                Ok(e) => {
                    self.engines.lock().insert(id, Arc::downgrade(&e));
                    return Ok(Some(e));
                }
                Err(e) if Instant::now() < deadline && e.to_string().contains("locked") => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(ClusterError::Node {
                        node: id,
                        detail: e.to_string(),
                    });
                }
            }
        }
    }

    /// Waits until the meta group and every region has a leader that finished its first
    /// apply.
    ///
    /// # Errors
    /// [`ClusterError::NoLeader`] naming the first group without one.
    pub fn wait_for_leaders(&self, timeout: Duration) -> Result<(), ClusterError> {
        let start = Instant::now();
        let mut groups: Vec<u64> = std::iter::once(META_REGION_ID)
            .chain(self.regions.iter().map(|r| r.id))
            .collect();
        if let Some(KvResponse::Regions { regions }) = self.peers.iter().find_map(|id| {
            self.node(*id).map(|n| {
                n.handle(KvRequest::ScanRegions {
                    start: Vec::new(),
                    limit: 0,
                })
            })
        }) {
            // The regions as they are now, splits and merges included (when the meta group
            // answers already).
            groups = std::iter::once(META_REGION_ID)
                .chain(regions.iter().map(|(r, _)| r.id))
                .collect();
        }
        for g in groups {
            loop {
                if self.leader_of_group(g).is_some() {
                    break;
                }
                if start.elapsed() > timeout {
                    return Err(ClusterError::NoLeader {
                        group: g,
                        waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    });
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(())
    }

    /// The node that leads `group` and has applied its term's first entry, if any.
    pub fn leader_of_group(&self, group: u64) -> Option<NodeId> {
        self.peers.iter().copied().find(|id| {
            self.node(*id).is_some_and(|n| {
                if group == META_REGION_ID {
                    n.is_meta_leader()
                } else {
                    n.is_region_leader(group)
                }
            })
        })
    }

    /// The region holding `key`, as the meta group knows it now (splits and merges
    /// included).
    pub fn region_of(&self, key: &[u8]) -> Option<RegionInfo> {
        match self.call_meta(KvRequest::GetRegion { key: key.to_vec() }) {
            Some(KvResponse::Regions { mut regions }) if !regions.is_empty() => {
                Some(regions.remove(0).0)
            }
            _ => None,
        }
    }

    /// The node leading the region that holds `key`.
    pub fn leader_of(&self, key: &[u8]) -> Option<NodeId> {
        self.region_of(key).and_then(|r| self.leader_of_group(r.id))
    }

    /// Every region, in key order, as the meta group knows it now.
    pub fn regions(&self) -> Vec<RegionInfo> {
        match self.call_meta(KvRequest::ScanRegions {
            start: Vec::new(),
            limit: 0,
        }) {
            Some(KvResponse::Regions { regions }) => regions.into_iter().map(|(r, _)| r).collect(),
            _ => Vec::new(),
        }
    }

    /// Asks the meta leader (retrying through elections for up to 10 s).
    fn call_meta(&self, req: KvRequest) -> Option<KvResponse> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(n) = self
                .leader_of_group(META_REGION_ID)
                .and_then(|l| self.node(l))
            {
                match n.handle(req.clone()) {
                    KvResponse::RegionError(_) => {}
                    r => return Some(r),
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    }

    /// Sends an admin request to the leader of `region_id`, following leadership for up to
    /// `timeout`.
    fn call_leader(
        &self,
        region_id: u64,
        req: KvRequest,
        timeout: Duration,
    ) -> Result<KvResponse, ClusterError> {
        let deadline = Instant::now() + timeout;
        let mut last = String::from("no leader");
        while Instant::now() < deadline {
            if let Some(n) = self.leader_of_group(region_id).and_then(|l| self.node(l)) {
                match n.handle(req.clone()) {
                    KvResponse::RegionError(
                        e @ (crate::RegionError::NotLeader { .. }
                        | crate::RegionError::StaleCommand { .. }),
                    ) => last = e.to_string(),
                    KvResponse::RegionError(e) => {
                        return Err(ClusterError::Admin {
                            what: req.name(),
                            detail: e.to_string(),
                        });
                    }
                    r => return Ok(r),
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Err(ClusterError::Admin {
            what: req.name(),
            detail: last,
        })
    }

    /// Splits the region holding `split_key` at it (`None` key: region `region_id` at the
    /// middle of its data). Returns the two regions.
    ///
    /// # Errors
    /// [`ClusterError::Admin`] when the leader refuses or cannot be found.
    pub fn split_region(
        &self,
        region_id: u64,
        split_key: Option<Vec<u8>>,
    ) -> Result<Vec<RegionInfo>, ClusterError> {
        match self.call_leader(
            region_id,
            KvRequest::SplitRegion {
                region_id,
                split_key,
            },
            Duration::from_secs(10),
        )? {
            KvResponse::RegionsChanged { regions, .. } => Ok(regions),
            other => Err(ClusterError::Admin {
                what: "split_region",
                detail: format!("unexpected reply {other:?}"),
            }),
        }
    }

    /// Merges region `source` into the adjacent region `target`; returns the merged region.
    ///
    /// # Errors
    /// [`ClusterError::Admin`] when the merge is refused (too many in-memory locks, the target
    /// does not border the source or moved on before absorbing it) or a leader cannot be
    /// found; the source is then back to normal. The call waits while the target's answer is
    /// unknown (the source refusing commands), however long that takes.
    pub fn merge_regions(&self, source: u64, target: u64) -> Result<RegionInfo, ClusterError> {
        match self.call_leader(
            source,
            KvRequest::MergeRegions { source, target },
            Duration::from_secs(10),
        )? {
            KvResponse::RegionsChanged { mut regions, .. } if !regions.is_empty() => {
                Ok(regions.remove(0))
            }
            other => Err(ClusterError::Admin {
                what: "merge_regions",
                detail: format!("unexpected reply {other:?}"),
            }),
        }
    }

    /// The node ids.
    pub fn node_ids(&self) -> &[NodeId] {
        &self.peers
    }

    /// The running node `id`.
    pub fn node(&self, id: NodeId) -> Option<Arc<KvNode>> {
        self.router.get(id).filter(|n| !n.is_stopped())
    }

    /// The router clients use to reach the nodes.
    pub fn router(&self) -> Arc<dyn NodeRouter> {
        self.router.clone()
    }

    /// The in-memory network (faults, partitions, statistics).
    pub fn network(&self) -> &Arc<MemNetwork> {
        &self.net
    }

    /// Sets the network's random faults.
    pub fn set_faults(&self, faults: NetFaults) {
        self.net.set_faults(faults);
    }

    /// A fault of the request layer (the network only carries Raft messages): from now on
    /// requests of kind `kind` ([`KvRequest::name`], e.g. `"commit_merge"`) sent through the
    /// router, by clients or by one node to another, are kept undelivered and their callers
    /// get [`crate::ServiceError::Timeout`], as over TCP when a reply never comes. A node's
    /// calls to itself are not held. [`LocalCluster::deliver_held_requests`] ends it.
    pub fn hold_requests(&self, kind: &'static str) {
        self.router.hold(kind);
    }

    /// How many requests [`LocalCluster::hold_requests`] is holding now.
    pub fn held_requests(&self) -> usize {
        self.router.held()
    }

    /// Stops holding requests and delivers the held ones, late, in the order they were sent
    /// (to nodes still running; their replies are dropped). Returns how many were delivered.
    pub fn deliver_held_requests(&self) -> usize {
        self.router.deliver_held()
    }

    /// Stops node `id` as a crash would: its raft driver stops, its memory (regions' data,
    /// in-memory locks, waiters) is dropped; its WAL stays on disk.
    ///
    /// # Errors
    /// [`ClusterError::UnknownNode`].
    pub fn stop_node(&self, id: NodeId) -> Result<(), ClusterError> {
        let node = self
            .router
            .get(id)
            .ok_or(ClusterError::UnknownNode { node: id })?;
        node.stop();
        self.net.unregister(id);
        self.router.set(id, None);
        node.shutdown();
        Ok(())
    }

    /// Restarts a stopped node from its directory.
    ///
    /// # Errors
    /// [`ClusterError::Node`] if it cannot start.
    pub fn restart_node(&self, id: NodeId) -> Result<(), ClusterError> {
        if !self.peers.contains(&id) {
            return Err(ClusterError::UnknownNode { node: id });
        }
        if self.router.get(id).is_some() {
            return Ok(());
        }
        self.start_node(id)
    }

    /// Sets the lock mode on every running node (and on nodes restarted later).
    pub fn set_lock_mode(&self, mode: LockMode) {
        *self.lock_mode.lock() = mode;
        for id in &self.peers {
            if let Some(n) = self.node(*id) {
                n.set_lock_mode(mode);
            }
        }
    }

    /// Moves the leadership of `group` to `to` voluntarily and waits until it took over. A
    /// data region goes through TiKV's protocol (its in-memory locks are proposed first, so
    /// none is lost); the meta group is transferred directly.
    ///
    /// # Errors
    /// [`ClusterError::NoLeader`] if `to` does not lead within `timeout`.
    pub fn transfer_leader(
        &self,
        group: u64,
        to: NodeId,
        timeout: Duration,
    ) -> Result<(), ClusterError> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.leader_of_group(group) == Some(to) {
                return Ok(());
            }
            if let Some(from) = self.leader_of_group(group).and_then(|l| self.node(l)) {
                if group == META_REGION_ID {
                    let _ = from.transfer_leader(group, to);
                } else {
                    let _ = from.handle(KvRequest::TransferLeader {
                        region_id: group,
                        to,
                    });
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(ClusterError::NoLeader {
            group,
            waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Sum of every running node's counters.
    pub fn counters(&self) -> crate::region::NodeCounters {
        let mut total = crate::region::NodeCounters::default();
        for id in &self.peers {
            if let Some(n) = self.node(*id) {
                total = total.add(&n.counters());
            }
        }
        total
    }

    /// A request to node `id`.
    ///
    /// # Errors
    /// As [`crate::KvService::call`].
    pub fn call(&self, id: NodeId, req: KvRequest) -> Result<KvResponse, crate::ServiceError> {
        self.router.service(id)?.call(req)
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for id in self.peers.clone() {
            let _ = self.stop_node(id);
        }
    }
}
