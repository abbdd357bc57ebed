//! [`KvNode`]: one node of a cluster: its data regions and meta replica on one `raft-lite`
//! node, lock waiting, and (while it leads the meta group) the oracle and the detector.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use surge_lock_table::{BudgetConfig, DeadlockDetector, LockWaitManager, MemoryBudget, WaitConfig};
use surge_raft_lite::{ConfState, GroupStatus, Node as RaftNode, NodeId, Snapshot, SnapshotMeta};

use super::kv_service::{KvService, NodeRouter, ServiceError};
use super::request::KvRequest;
use super::response::{KvResponse, NodeStatusReport, RegionStatus};
use crate::placement::{META_REGION_ID, MetaPeer, MetaStateMachine};
use crate::region::{
    Counters, LockMode, PausePoints, RegionError, RegionHost, RegionInfo, RegionPeer,
    RegionStateMachine, SPLIT_CHILD_INIT_INDEX,
};
use crate::{Engine, FjallEngine, MemEngine};

/// How long the cluster's deadlock detector (on the meta leader) keeps a wait-for edge that
/// was not announced again. TiKV keeps edges for its server-side `wait-for-lock-timeout`;
/// here the length of a wait is the client's setting, carried by each request, so the
/// lifetime is fixed and a waiting lock request announces its edge again every half of it.
/// Edges of waits that ended are removed at once; this only bounds how long a lost clean-up
/// (a node that died while waiting) leaves one behind.
pub(super) const DETECTOR_EDGE_TTL: Duration = Duration::from_secs(3);

/// [`KvNodeConfig::split_size`]'s default: 96 MiB, TiKV's `region-split-size`.
pub const DEFAULT_SPLIT_SIZE: u64 = 96 << 20;

/// Settings of a [`KvNode`].
///
/// A node has no lock-wait timeout of its own: how long a lock request waits for a
/// conflicting lock is the client's [`crate::ClientConfig::wait_for_lock_timeout`], carried
/// by every request.
///
/// Build it with [`KvNodeConfig::new`] (or [`KvNodeConfig::default`] and
/// [`KvNodeConfig::with_id`]) and the `with_*` methods, or assign the public fields of such
/// a value: the struct is `#[non_exhaustive]`, so later settings can be added without
/// breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct KvNodeConfig {
    /// The node's id (as in Raft; [`KvNode::start`] refuses a raft node with another id).
    pub id: NodeId,
    /// The cluster's pessimistic lock mode at start.
    pub lock_mode: LockMode,
    /// Delay before waking the other waiters of a released key (TiKV's
    /// `wake-up-delay-duration`, 20 ms).
    pub wake_up_delay: Duration,
    /// In-memory lock budgets (512 KiB per region, 100 MiB per node by default).
    pub budget: BudgetConfig,
    /// Longest a command waits for its Raft proposal.
    pub proposal_timeout: Duration,
    /// How far ahead the oracle's durable limit is pushed at once, in milliseconds.
    pub tso_window_ms: u64,
    /// A voluntary leader transfer that has not happened after this long is abandoned and
    /// the lock table is writable again (TiKV: 10 s). The leader's read lease is suspended
    /// for as long (`Lease::suspend`), so this must stay well above Raft's own give-up
    /// (one election timeout) plus the lease: below it, a lease could be granted while
    /// the transferee still campaigns.
    pub transfer_timeout: Duration,
    /// A merge whose source holds more bytes of in-memory locks than this is refused (the
    /// locks must fit one Raft entry; TiKV: 90% of `raft-entry-max-size`).
    pub merge_max_lock_bytes: usize,
    /// A region this node leads is split in two once its data passes this many bytes
    /// (`None`: only on request). TiKV splits at 96 MiB.
    pub split_size: Option<u64>,
    /// How long after a quorum confirmed its leadership a leader serves reads and
    /// timestamps without asking again (a leader lease). Must be below the smallest Raft
    /// election timeout; zero asks a quorum (ReadIndex) every time.
    pub read_lease: Duration,
    /// The node's disk engine, shared by its regions (`None`: each region keeps its data
    /// in a [`MemEngine`], rebuilt from the Raft log at a restart).
    pub disk_engine: Option<Arc<FjallEngine>>,
    /// How long a transaction may run: reads at, and locks of transactions started at,
    /// timestamps older than this (by the node's clock) are refused with
    /// [`KeyError::TooOld`](crate::KeyError::TooOld), and the node accepts MVCC garbage
    /// collection ([`KvRequest::Gc`]) only below that bound. `None` (the default for the
    /// library, where tests use small made-up timestamps): no bound, and GC requests are
    /// refused. `surgedb node` sets 10 minutes (TiDB's `tidb_gc_life_time`). Every node of
    /// a cluster must have the same value.
    pub gc_life_time: Option<Duration>,
}

impl KvNodeConfig {
    /// Defaults for node `id`.
    pub fn new(id: NodeId) -> KvNodeConfig {
        KvNodeConfig::default().with_id(id)
    }

    /// Sets [`KvNodeConfig::id`].
    #[must_use]
    pub fn with_id(mut self, id: NodeId) -> Self {
        self.id = id;
        self
    }

    /// Sets [`KvNodeConfig::lock_mode`].
    #[must_use]
    pub fn with_lock_mode(mut self, mode: LockMode) -> Self {
        self.lock_mode = mode;
        self
    }

    /// Sets [`KvNodeConfig::wake_up_delay`].
    #[must_use]
    pub fn with_wake_up_delay(mut self, delay: Duration) -> Self {
        self.wake_up_delay = delay;
        self
    }

    /// Sets [`KvNodeConfig::budget`].
    #[must_use]
    pub fn with_budget(mut self, budget: BudgetConfig) -> Self {
        self.budget = budget;
        self
    }

    /// Sets [`KvNodeConfig::proposal_timeout`].
    #[must_use]
    pub fn with_proposal_timeout(mut self, timeout: Duration) -> Self {
        self.proposal_timeout = timeout;
        self
    }

    /// Sets [`KvNodeConfig::tso_window_ms`].
    #[must_use]
    pub fn with_tso_window_ms(mut self, ms: u64) -> Self {
        self.tso_window_ms = ms;
        self
    }

    /// Sets [`KvNodeConfig::transfer_timeout`].
    #[must_use]
    pub fn with_transfer_timeout(mut self, timeout: Duration) -> Self {
        self.transfer_timeout = timeout;
        self
    }

    /// Sets [`KvNodeConfig::merge_max_lock_bytes`].
    #[must_use]
    pub fn with_merge_max_lock_bytes(mut self, bytes: usize) -> Self {
        self.merge_max_lock_bytes = bytes;
        self
    }

    /// Sets [`KvNodeConfig::split_size`].
    #[must_use]
    pub fn with_split_size(mut self, bytes: Option<u64>) -> Self {
        self.split_size = bytes;
        self
    }

    /// Sets [`KvNodeConfig::disk_engine`].
    #[must_use]
    pub fn with_disk_engine(mut self, engine: Option<Arc<FjallEngine>>) -> Self {
        self.disk_engine = engine;
        self
    }

    /// Sets [`KvNodeConfig::gc_life_time`].
    #[must_use]
    pub fn with_gc_life_time(mut self, life_time: Option<Duration>) -> Self {
        self.gc_life_time = life_time;
        self
    }

    /// Sets [`KvNodeConfig::read_lease`].
    #[must_use]
    pub fn with_read_lease(mut self, lease: Duration) -> Self {
        self.read_lease = lease;
        self
    }
}

impl Default for KvNodeConfig {
    /// The defaults with node id 0, which no raft node has: set the id with
    /// [`KvNodeConfig::with_id`] (or use [`KvNodeConfig::new`]).
    fn default() -> KvNodeConfig {
        KvNodeConfig {
            id: 0,
            lock_mode: LockMode::InMemory,
            wake_up_delay: Duration::from_millis(20),
            budget: BudgetConfig::default(),
            proposal_timeout: Duration::from_secs(5),
            tso_window_ms: 3000,
            transfer_timeout: Duration::from_secs(10),
            merge_max_lock_bytes: 7 << 20,
            split_size: Some(DEFAULT_SPLIT_SIZE),
            // raft-lite's default election timeout is 10 ticks of 10 ms at the least.
            read_lease: Duration::from_millis(40),
            disk_engine: None,
            gc_life_time: None,
        }
    }
}

fn mode_to_u8(m: LockMode) -> u8 {
    match m {
        LockMode::Sync => 0,
        LockMode::Pipelined => 1,
        LockMode::InMemory => 2,
    }
}

fn mode_from_u8(v: u8) -> LockMode {
    match v {
        0 => LockMode::Sync,
        1 => LockMode::Pipelined,
        _ => LockMode::InMemory,
    }
}

/// One node: the data regions and the meta replica it hosts on one `raft-lite` node (one
/// WAL, group fsync), serving [`KvRequest`]s through [`KvService`].
pub struct KvNode {
    pub(super) config: KvNodeConfig,
    /// `None` once stopped; handlers hold the read guard while they use it.
    pub(super) raft: RwLock<Option<RaftNode>>,
    pub(super) regions: RwLock<BTreeMap<u64, Arc<RegionPeer>>>,
    pub(super) meta: Arc<MetaPeer>,
    pub(super) router: Arc<dyn NodeRouter>,
    pub(super) waiters: LockWaitManager,
    pub(super) detector: Mutex<DeadlockDetector>,
    pub(super) budget: MemoryBudget,
    pub(super) counters: Arc<Counters>,
    pub(super) pause: Arc<PausePoints>,
    lock_mode: AtomicU8,
    stopped: AtomicBool,
    /// This node, for work handed to a thread of its own (a split child's campaign).
    pub(super) me: Weak<KvNode>,
    /// Region ids reserved from the meta group for this node's splits and not used yet
    /// (`admin_handlers::REGION_ID_BATCH` at a time); ids left at a restart are skipped,
    /// never reused.
    pub(super) region_ids: Mutex<std::ops::Range<u64>>,
    /// Source regions whose merge a thread of this node drives (the merge checker leaves
    /// them alone).
    pub(super) merges_driven: Mutex<std::collections::HashSet<u64>>,
    /// The highest GC safe point this node collected below (as a region's leader): no
    /// read or lock below it, whatever hold a request claims (a claim may be stale).
    pub(super) gc_safe_point: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for KvNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvNode")
            .field("id", &self.config.id)
            .finish()
    }
}

impl KvNode {
    /// Hosts the meta group (with `regions` as its founding region map) and every region of
    /// `regions` that lists this node as a peer on `raft`, recovering their state from the
    /// raft node's log, plus `recovered_groups`: the ids of groups the node's log holds
    /// beyond those (regions made by splits; their state comes from their own snapshots).
    /// `router` reaches the other nodes (for the oracle and the detector).
    ///
    /// # Errors
    /// Raft errors adding the groups, and a `config` whose id is not `raft`'s (such as
    /// [`KvNodeConfig::default`]'s 0), as [`ServiceError::Unavailable`].
    pub fn start(
        config: KvNodeConfig,
        raft: RaftNode,
        regions: Vec<RegionInfo>,
        meta_peers: Vec<NodeId>,
        recovered_groups: Vec<u64>,
        router: Arc<dyn NodeRouter>,
    ) -> Result<Arc<KvNode>, ServiceError> {
        let id = config.id;
        if id != raft.id() {
            return Err(ServiceError::Unavailable {
                node: id,
                detail: format!("configured as node {id} on raft node {}", raft.id()),
            });
        }
        // Every wait passes its own timeout; the default only sets the edge lifetime of
        // this node's own detector (three times it), which waits refresh as they go.
        let waiters =
            LockWaitManager::new(WaitConfig::default().with_wake_up_delay(config.wake_up_delay));
        let budget = MemoryBudget::new(config.budget);
        let counters = Arc::new(Counters::default());
        let meta = MetaPeer::new(regions.clone(), config.tso_window_ms, config.read_lease);
        let host = Arc::new(NodeHost::default());
        let pause = Arc::new(PausePoints::default());
        let mut peers = BTreeMap::new();
        let mut hosted: Vec<RegionInfo> = regions
            .iter()
            .filter(|r| r.peers.contains(&id))
            .cloned()
            .collect();
        for g in recovered_groups {
            if g != META_REGION_ID && !hosted.iter().any(|r| r.id == g) {
                // Its range and epoch come from its snapshot when the group is added.
                hosted.push(RegionInfo {
                    id: g,
                    start: Vec::new(),
                    end: Vec::new(),
                    epoch: crate::region::RegionEpoch::default(),
                    peers: meta_peers.clone(),
                });
            }
        }
        for r in &hosted {
            let engine: Arc<dyn Engine> = match &config.disk_engine {
                Some(disk) => {
                    disk.region(r.id, &r.start, &r.end)
                        .map_err(|e| ServiceError::Unavailable {
                            node: id,
                            detail: e.to_string(),
                        })?
                }
                None => Arc::new(MemEngine::new()),
            };
            peers.insert(
                r.id,
                RegionPeer::new(
                    id,
                    r.clone(),
                    engine,
                    &budget,
                    waiters.clone(),
                    counters.clone(),
                    host.clone(),
                    pause.clone(),
                    config.read_lease,
                ),
            );
        }
        let unavailable = |e: surge_raft_lite::Error| ServiceError::Unavailable {
            node: id,
            detail: e.to_string(),
        };
        raft.add_group(
            META_REGION_ID,
            ConfState::with_voters(meta_peers.clone()),
            Box::new(MetaStateMachine::new(meta.clone())),
        )
        .map_err(unavailable)?;
        for (rid, peer) in &peers {
            let conf = ConfState::with_voters(
                hosted
                    .iter()
                    .find(|r| r.id == *rid)
                    .map(|r| r.peers.clone())
                    .unwrap_or_default(),
            );
            raft.add_group(*rid, conf, Box::new(RegionStateMachine::new(peer.clone())))
                .map_err(unavailable)?;
        }
        let lock_mode = AtomicU8::new(mode_to_u8(config.lock_mode));
        let detector = Mutex::new(DeadlockDetector::new(DETECTOR_EDGE_TTL));
        let node = Arc::new_cyclic(|me| KvNode {
            me: me.clone(),
            region_ids: Mutex::new(0..0),
            merges_driven: Mutex::new(Default::default()),
            gc_safe_point: std::sync::atomic::AtomicU64::new(0),
            config,
            raft: RwLock::new(Some(raft)),
            regions: RwLock::new(peers),
            meta,
            router,
            waiters,
            detector,
            budget,
            counters,
            pause,
            lock_mode,
            stopped: AtomicBool::new(false),
        });
        let _ = host.node.set(node.me.clone());
        if let Some(size) = node.config.split_size {
            super::split_checker::spawn(Arc::downgrade(&node), size);
        }
        super::region_heartbeat::spawn(Arc::downgrade(&node));
        super::node_loop::spawn_every(
            "surge-txn-merge-check",
            super::merge_driver::MERGE_CHECK_EVERY,
            Arc::downgrade(&node),
            "resumes merges left without a driver",
            |node| node.resume_merges(),
        );
        Ok(node)
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.config.id
    }

    /// The lock mode in force.
    pub fn lock_mode(&self) -> LockMode {
        mode_from_u8(self.lock_mode.load(Ordering::Relaxed))
    }

    /// Changes the lock mode (takes effect for the next lock request).
    pub fn set_lock_mode(&self, mode: LockMode) {
        self.lock_mode.store(mode_to_u8(mode), Ordering::Relaxed);
    }

    /// The node's counters (with the lock tables' split moves). A transfer's and a merge's
    /// migrated locks are counted where they are proposed, not where the lock tables hand
    /// them out: the leader copies them again before proposing and drops those released
    /// meanwhile.
    pub fn counters(&self) -> crate::region::NodeCounters {
        let mut c = self.counters.snapshot();
        c.locks_migrated_on_split = self.budget.counters().migrated_on_split;
        c
    }

    /// Test support: the points in this node's region code where a test may park a thread
    /// (see [`PausePoints`]); inert unless armed.
    #[doc(hidden)]
    pub fn pause_points(&self) -> &PausePoints {
        &self.pause
    }

    /// The raft status of `group` on this node.
    pub fn raft_status(&self, group: u64) -> Option<GroupStatus> {
        self.raft
            .read_recursive()
            .as_ref()
            .and_then(|r| r.status(group).ok())
    }

    /// The counters of this node's raft driver (entries applied, snapshots taken); `None`
    /// once stopped.
    pub fn raft_stats(&self) -> Option<surge_raft_lite::NodeStatsSnapshot> {
        self.raft.read_recursive().as_ref().map(RaftNode::stats)
    }

    /// Asks this node (the leader of `group`) to hand leadership to `to`.
    ///
    /// # Errors
    /// As `raft-lite`'s `Node::transfer_leader`, as text.
    pub fn transfer_leader(&self, group: u64, to: NodeId) -> Result<(), String> {
        let send = || match self.raft.read_recursive().as_ref() {
            Some(r) => r.transfer_leader(group, to).map_err(|e| e.to_string()),
            None => Err("node stopped".into()),
        };
        // No lease while the transferee may campaign (`Lease::around_transfer`). Not a
        // region of this node: no lease to suspend, and Raft refuses the transfer.
        if group == META_REGION_ID {
            self.meta
                .lease()
                .around_transfer(self.config.transfer_timeout, send)
        } else {
            match self.peer(group) {
                Ok(p) => p.lease.around_transfer(self.config.transfer_timeout, send),
                Err(_) => send(),
            }
        }
    }

    /// Whether this node leads data region `region_id` (its term's first entry applied).
    pub fn is_region_leader(&self, region_id: u64) -> bool {
        self.regions
            .read()
            .get(&region_id)
            .is_some_and(|p| p.leader_term() != 0)
    }

    /// The range and epoch of every data region this node leads.
    pub(super) fn led_regions(&self) -> Vec<RegionInfo> {
        self.hosted_peers()
            .into_iter()
            .filter(|p| p.leader_term() != 0)
            .map(|p| p.info())
            .collect()
    }

    /// The regions this node leads whose data passed `size` bytes.
    pub(super) fn regions_over(&self, size: u64) -> Vec<u64> {
        self.hosted_peers()
            .into_iter()
            .filter(|p| p.leader_term() != 0 && p.data_size() > size)
            .map(|p| p.id())
            .collect()
    }

    /// The region replicas this node hosts now, taken out of the region map.
    ///
    /// The map's lock must never be held across a call to the Raft driver or any other
    /// wait: the driver takes its write lock while it applies a split (the child joins the
    /// map) or a merge (the source leaves it), so a reader that asks the driver while it
    /// holds the map waits for a thread that waits for it, and the node hangs for good.
    /// Callers that do more than read a field use this list, with the lock already let go.
    fn hosted_peers(&self) -> Vec<Arc<RegionPeer>> {
        self.regions.read().values().cloned().collect()
    }

    /// Whether this node leads the meta group.
    pub fn is_meta_leader(&self) -> bool {
        self.meta.is_leader()
    }

    /// Ends lock waiting on this node for good, the first step of its shutdown: every
    /// parked lock wait is woken and its request answered
    /// [`RegionError::NodeStopping`] (retryable; it does not take the lock), and a later
    /// lock request that would have to wait is answered so at once. Everything else is
    /// still served, so that sessions can finish (roll back) before the node stops. Returns
    /// how many waits it ended.
    ///
    /// Without it a request waiting with a long, client-chosen wait would hold a shutdown
    /// that waits for its requests for the whole wait.
    pub fn stop_lock_waits(&self) -> usize {
        let ended = self.waiters.close();
        tracing::debug!(node = self.id(), ended, "lock waits stopped");
        ended
    }

    /// Stops serving: later calls answer `Unavailable`, and lock waits end as with
    /// [`KvNode::stop_lock_waits`].
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.waiters.close();
    }

    /// Stops serving and stops the raft driver (waiting for requests in flight to let go
    /// of it). The node's memory, and so its in-memory locks, is gone; its WAL stays.
    pub fn shutdown(&self) {
        self.stop();
        let raft = self.raft.write().take();
        drop(raft);
    }

    /// Whether [`KvNode::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Why this node's Raft driver stopped on its own, if it did
    /// ([`surge_raft_lite::Node::failure`]: a storage failure such as a full disk, or a
    /// panic): the node then serves nothing, and its process should stop.
    pub fn raft_failure(&self) -> Option<String> {
        self.raft.read().as_ref().and_then(RaftNode::failure)
    }

    pub(super) fn peer(&self, region_id: u64) -> Result<Arc<RegionPeer>, RegionError> {
        self.regions
            .read()
            .get(&region_id)
            .cloned()
            .ok_or(RegionError::RegionNotFound { region_id })
    }

    /// The leader of `group` as this node's raft knows it.
    pub(super) fn leader_hint(&self, group: u64) -> Option<NodeId> {
        self.raft_status(group).and_then(|s| s.leader)
    }

    /// Fills in the leader hint of a `NotLeader` error.
    pub(super) fn with_hint(&self, e: RegionError) -> RegionError {
        match e {
            RegionError::NotLeader {
                region_id,
                leader: None,
            } => RegionError::NotLeader {
                region_id,
                leader: self.leader_hint(region_id).filter(|l| *l != self.id()),
            },
            other => other,
        }
    }

    /// Sends `req` to the meta leader (this node if it leads), following hints.
    pub(super) fn call_meta(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        if self.meta.is_leader() {
            return Ok(self.handle(req));
        }
        let mut candidates: Vec<NodeId> = self.leader_hint(META_REGION_ID).into_iter().collect();
        candidates.extend(self.router.nodes());
        let mut last = ServiceError::Unavailable {
            node: 0,
            detail: "no meta leader".into(),
        };
        for node in candidates.into_iter().filter(|n| *n != self.id()) {
            match self.router.service(node).and_then(|s| s.call(req.clone())) {
                Ok(KvResponse::RegionError(RegionError::NotLeader { .. })) => continue,
                Ok(r) => return Ok(r),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// A fresh timestamp from the oracle.
    pub(super) fn fresh_ts(&self) -> Option<u64> {
        match self.call_meta(KvRequest::GetTimestamp { count: 1 }) {
            Ok(KvResponse::Timestamp { ts }) => Some(ts),
            _ => None,
        }
    }

    fn status(&self) -> NodeStatusReport {
        // Not under the region map's lock: each region's status is a call to the Raft
        // driver (see `hosted_peers`).
        let regions = self
            .hosted_peers()
            .iter()
            .map(|p| {
                let st = self.raft_status(p.id());
                let (locks, bytes, lock_status) = p.memory_locks();
                RegionStatus {
                    region: p.info(),
                    is_leader: p.leader_term() != 0,
                    leader: st.as_ref().and_then(|s| s.leader),
                    term: st.as_ref().map_or(0, |s| s.term),
                    applied: st.as_ref().map_or(0, |s| s.applied),
                    memory_locks: locks,
                    memory_lock_bytes: bytes,
                    lock_status,
                }
            })
            .collect();
        NodeStatusReport {
            node: self.id(),
            lock_mode: self.lock_mode(),
            regions,
            counters: self.counters(),
            memory_lock_bytes: self.budget.used(),
        }
    }

    /// Handles one request (what [`KvService::call`] does on a running node).
    pub fn handle(&self, req: KvRequest) -> KvResponse {
        let _span = tracing::trace_span!("kv", node = self.id(), req = req.name()).entered();
        match req {
            KvRequest::SetLockMode { mode } => {
                self.set_lock_mode(mode);
                KvResponse::Done
            }
            KvRequest::NodeStatus => KvResponse::Status(Box::new(self.status())),
            KvRequest::GetTimestamp { .. }
            | KvRequest::GetRegion { .. }
            | KvRequest::ScanRegions { .. }
            | KvRequest::DetectDeadlock { .. }
            | KvRequest::CleanUpWaitFor { .. }
            | KvRequest::CleanUpTxn { .. }
            | KvRequest::AllocRegionId
            | KvRequest::AllocRegionIds { .. }
            | KvRequest::ReportRegions { .. }
            | KvRequest::SetGcHold { .. }
            | KvRequest::GcHolds
            | KvRequest::RaiseGcSafePoint { .. } => self.handle_meta(req),
            KvRequest::TransferLeader { .. }
            | KvRequest::SplitRegion { .. }
            | KvRequest::MergeRegions { .. }
            | KvRequest::CommitMerge { .. } => self.handle_admin(req),
            other => self.handle_region(other),
        }
    }
}

impl KvService for KvNode {
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        if self.is_stopped() {
            return Err(ServiceError::Unavailable {
                node: self.id(),
                detail: "node stopped".into(),
            });
        }
        Ok(self.handle(req))
    }
}

/// The node side of a region replica's splits and merges (see [`RegionHost`]).
#[derive(Default)]
struct NodeHost {
    node: OnceLock<Weak<KvNode>>,
}

impl NodeHost {
    fn node(&self) -> Option<Arc<KvNode>> {
        self.node.get().and_then(Weak::upgrade)
    }
}

impl RegionHost for NodeHost {
    fn spawn_split_child(&self, child: Arc<RegionPeer>, seed: bytes::Bytes) {
        let Some(node) = self.node() else { return };
        let info = child.info();
        node.pause
            .reach(crate::region::region_pause_points::SPLIT_CHILD_BEFORE_HOST);
        node.regions.write().insert(info.id, child.clone());
        // The driver thread calls this while applying: never wait for it, and skip when the
        // node is shutting down (its raft node is being taken).
        let Some(raft) = node.raft.try_read_recursive() else {
            return;
        };
        if let Some(raft) = raft.as_ref() {
            let conf = ConfState::with_voters(info.peers.clone());
            let initial = Snapshot {
                meta: SnapshotMeta {
                    index: SPLIT_CHILD_INIT_INDEX,
                    term: SPLIT_CHILD_INIT_INDEX,
                    conf: conf.clone(),
                },
                data: seed,
            };
            raft.add_group_nowait(
                info.id,
                conf,
                Box::new(RegionStateMachine::new(child)),
                Some(initial),
            );
        }
    }

    fn hosts(&self, id: u64) -> bool {
        self.node()
            .is_some_and(|n| n.regions.read().contains_key(&id))
    }

    fn region_merged(&self, source: u64, target: u64) {
        let Some(node) = self.node() else { return };
        let gone = node.regions.write().remove(&source);
        if let Some(peer) = gone {
            peer.mark_merged(target);
        }
        if let Some(raft) = node.raft.try_read_recursive()
            && let Some(raft) = raft.as_ref()
        {
            raft.remove_group_nowait(source);
        }
    }
}
