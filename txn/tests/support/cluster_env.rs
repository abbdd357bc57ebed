//! [`TestCluster`]: a three-node [`LocalCluster`] in a temporary directory, and the raw
//! requests the tests use to look behind the client (timestamps, lock scans, node status,
//! reads at a chosen version).

use std::time::{Duration, Instant};

use super::raw_requests;
use surge_raft_lite::NetFaults;
use surge_txn::rpc::{Context, KvRequest, KvResponse, META_REGION_ID, NodeStatusReport};
use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, LockInfo, LockMode, RegionInfo, TxnClient,
};

/// A running cluster and the directory of its WALs, removed when dropped (after the
/// cluster, which is declared first so it stops first).
pub struct TestCluster {
    /// The cluster.
    pub cluster: LocalCluster,
    _dir: tempfile::TempDir,
}

/// How to lay a test cluster out.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Data regions, split evenly on the first key byte.
    pub regions: usize,
    /// Pessimistic lock mode at start.
    pub mode: LockMode,
    /// Seed of the network's fault randomness and of Raft's election timers.
    pub seed: u64,
}

impl Layout {
    /// `regions` regions in `mode`, seed 1. (How long lock requests wait is the client's
    /// setting, [`ClientConfig::wait_for_lock_timeout`].)
    pub fn new(regions: usize, mode: LockMode) -> Layout {
        Layout {
            regions,
            mode,
            seed: 1,
        }
    }
}

impl TestCluster {
    /// Three nodes laid out as `layout`, every group with a leader.
    pub fn start(layout: Layout) -> TestCluster {
        Self::start_with(layout, |_| {})
    }

    /// As [`TestCluster::start`], after `tweak` adjusted the configuration.
    pub fn start_with(layout: Layout, tweak: impl FnOnce(&mut ClusterConfig)) -> TestCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = ClusterConfig::new(dir.path())
            .with_regions(layout.regions)
            .with_lock_mode(layout.mode);
        config.seed = layout.seed;
        tweak(&mut config);
        let cluster = LocalCluster::start(config).expect("cluster starts");
        TestCluster { cluster, _dir: dir }
    }

    /// A client of the cluster with `config`.
    pub fn client(&self, config: ClientConfig) -> TxnClient {
        TxnClient::new(self.cluster.router(), config)
    }

    /// A fresh timestamp from whichever node answers (the meta leader), retrying across
    /// elections for up to 30 s.
    pub fn timestamp(&self) -> u64 {
        raw_requests::timestamp(&self.cluster)
    }

    /// The leader of the region of `key` and the context of a request to it, waiting up to
    /// 30 s for a leader.
    pub fn leader_ctx(&self, key: &[u8]) -> (u64, Context) {
        raw_requests::leader_and_ctx(&self.cluster, key)
    }

    /// Sends the request `make` builds for the region of `key` to its leader.
    pub fn call_leader(&self, key: &[u8], make: impl FnOnce(Context) -> KvRequest) -> KvResponse {
        let (leader, ctx) = self.leader_ctx(key);
        let req = make(ctx);
        let name = req.name();
        self.cluster
            .call(leader, req)
            .unwrap_or_else(|e| panic!("{name} to node {leader}: {e}"))
    }

    /// Every lock of the region holding `key` with `start_ts <= max_ts`, from its leader
    /// (memory and replicated, as the node merges them).
    pub fn scan_locks(&self, key: &[u8], max_ts: u64) -> Vec<LockInfo> {
        let reply = self.call_leader(key, |ctx| KvRequest::ScanLock {
            ctx,
            max_ts,
            start: Vec::new(),
            end: None,
            limit: usize::MAX,
        });
        match reply {
            KvResponse::Locks { locks } => locks,
            other => panic!("scan_lock: {other:?}"),
        }
    }

    /// The committed value of `key` at `version`, read from its region's leader.
    pub fn get_at(&self, key: &[u8], version: u64) -> Option<Vec<u8>> {
        raw_requests::get_at(&self.cluster, key, version)
    }

    /// The status of every running node.
    pub fn node_statuses(&self) -> Vec<NodeStatusReport> {
        let mut out = Vec::new();
        for id in self.cluster.node_ids() {
            if self.cluster.node(*id).is_none() {
                continue;
            }
            match self.cluster.call(*id, KvRequest::NodeStatus) {
                Ok(KvResponse::Status(report)) => out.push(*report),
                other => panic!("node {id} status: {other:?}"),
            }
        }
        out
    }

    /// Ends every fault: heals the network, restarts stopped nodes in `mode` and waits for
    /// the meta group and every region (as the meta group lists them now, after splits and
    /// merges) to have a leader.
    pub fn heal_all(&self, mode: LockMode) {
        let c = &self.cluster;
        c.network().heal();
        c.set_faults(NetFaults::default());
        for id in c.node_ids().to_vec() {
            c.restart_node(id).expect("restart");
        }
        c.set_lock_mode(mode);
        // Not `LocalCluster::wait_for_leaders`: it asks the first running node for the
        // regions, and falls back on the initial ones (some merged away since) when that
        // node does not lead the meta group. Nor the meta group's list: a split or merge
        // reports to it best effort, so it may be stale. The regions that two nodes or more
        // hold (a quorum of three could elect a leader); a replica left alone on one node
        // (its group merged away elsewhere before it caught up) is reported, not awaited.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut holders: std::collections::BTreeMap<u64, Vec<(u64, RegionInfo)>> =
            Default::default();
        for s in self.node_statuses() {
            for r in &s.regions {
                holders
                    .entry(r.region.id)
                    .or_default()
                    .push((s.node, r.region.clone()));
            }
        }
        let mut groups = vec![META_REGION_ID];
        for (g, replicas) in holders {
            if replicas.len() >= 2 {
                groups.push(g);
            } else {
                eprintln!("heal_all: region {g} has a replica on one node only: {replicas:?}");
            }
        }
        for g in groups {
            while c.leader_of_group(g).is_none() {
                if Instant::now() > deadline {
                    let regions = c.regions();
                    let statuses = self.node_statuses();
                    let peers: Vec<_> = statuses.iter().map(|s| (s.node, &s.regions)).collect();
                    panic!(
                        "group {g} has no leader 30 s after healing; the meta group's \
                         regions {regions:?}; the nodes' {peers:#?}"
                    );
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// A client configuration for workloads under faults: short lock TTLs with fast heartbeats
/// (a crashed holder's locks are taken over within a second or two) and a bounded retry
/// budget (an operation gives up after 5 s instead of 20).
pub fn fault_tolerant_client() -> ClientConfig {
    ClientConfig::default()
        .with_lock_ttl_ms(1500)
        .with_heartbeat_interval(Duration::from_millis(200))
        .with_max_backoff(Duration::from_secs(5))
}
