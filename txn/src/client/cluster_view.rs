//! What a SQL layer shows of the cluster through a [`TxnClient`]: the regions covering a
//! key range (TiDB's `SHOW TABLE t REGIONS`), the pessimistic lock mode of every node (set
//! and read, for `SET CONFIG` / `SHOW CONFIG`), and each node's status and counters (for
//! `SHOW GLOBAL STATUS`, beside [`TxnClient::hot_counters`] and [`TxnClient::counters`]).

use surge_raft_lite::NodeId;

use super::backoff::Backoff;
use super::error::TxnError;
use super::txn_client::TxnClient;
use crate::rpc::NodeStatusReport;
use crate::{KvRequest, KvResponse, LockMode, NodeCounters, RegionEpoch, ServiceError};

/// One region as the meta group describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionView {
    /// The region's id (its Raft group id).
    pub id: u64,
    /// First key (inclusive).
    pub start: Vec<u8>,
    /// End key (exclusive); empty: the end of the key space.
    pub end: Vec<u8>,
    /// The region's epoch (bumped by splits, merges and membership changes).
    pub epoch: RegionEpoch,
    /// The node the meta group (or, failing that, the client's cache) believes leads it.
    pub leader: Option<NodeId>,
    /// The nodes holding a replica.
    pub peers: Vec<NodeId>,
}

/// One node's answer to a status request: its report, or why it could not be asked.
pub type NodeStatusResult = Result<NodeStatusReport, TxnError>;

impl TxnClient {
    /// The regions overlapping `[start, end)` (`end` `None`: to the end of the key space),
    /// in key order, as the meta group knows them now, each with its leader and peers. The
    /// client's region cache is refreshed with them.
    ///
    /// # Errors
    /// When the meta group cannot be reached within the backoff budget.
    pub fn regions_in_range(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
    ) -> Result<Vec<RegionView>, TxnError> {
        let core = self.core();
        let mut bo = Backoff::new(&core.config);
        let req = KvRequest::ScanRegions {
            start: start.to_vec(),
            limit: 0,
        };
        let regions = match core.meta_call(&req, &mut bo)? {
            KvResponse::Regions { regions } => regions,
            other => return Err(TxnError::unexpected(req.name(), &other)),
        };
        let mut cache = core.cache.write();
        let mut out = Vec::new();
        for (info, hint) in regions {
            let before_end = end.is_none_or(|e| info.start.as_slice() < e);
            let after_start = info.end.is_empty() || info.end.as_slice() > start;
            if !(before_end && after_start) {
                continue;
            }
            let leader = hint.or_else(|| {
                cache
                    .locate(&info.start)
                    .filter(|c| c.info.id == info.id)
                    .and_then(|c| c.leader)
            });
            cache.insert(info.clone(), leader);
            out.push(RegionView {
                id: info.id,
                start: info.start,
                end: info.end,
                epoch: info.epoch,
                leader,
                peers: info.peers,
            });
        }
        out.sort_by(|a, b| a.start.cmp(&b.start));
        Ok(out)
    }

    /// Sets the pessimistic lock mode on every node of the cluster (TiKV's
    /// `pessimistic-txn.pipelined` / `in-memory` switches; [`LockMode::InMemory`] keeps
    /// locks in each leader's memory). Every node is asked, even after one fails.
    ///
    /// # Errors
    /// [`TxnError::Unavailable`] naming the first node that could not be told (the others
    /// were); [`TxnError::Protocol`] for a node that answered something else.
    pub fn set_lock_mode(&self, mode: LockMode) -> Result<(), TxnError> {
        let mut first_error = None;
        for node in self.core().router.nodes() {
            let answer = self
                .core()
                .router
                .service(node)
                .and_then(|s| s.call(KvRequest::SetLockMode { mode }));
            let error = match answer {
                Ok(KvResponse::Done) => continue,
                Ok(other) => TxnError::Protocol {
                    detail: format!("node {node}: set_lock_mode answered {other:?}"),
                },
                Err(e) => TxnError::Unavailable(e),
            };
            tracing::warn!(node, error = %error, "lock mode not set");
            first_error.get_or_insert(error);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The pessimistic lock mode in force on each node, in node order; a node that could
    /// not be asked is left out (see [`TxnClient::node_statuses`] for why).
    pub fn lock_modes(&self) -> Vec<(NodeId, LockMode)> {
        self.node_statuses()
            .into_iter()
            .filter_map(|(node, s)| s.ok().map(|s| (node, s.lock_mode)))
            .collect()
    }

    /// Every node's status (its regions and roles, lock mode, lock tables and counters), in
    /// node order, or why it could not be asked.
    pub fn node_statuses(&self) -> Vec<(NodeId, NodeStatusResult)> {
        let router = &self.core().router;
        router
            .nodes()
            .into_iter()
            .map(|node| {
                let answer = router
                    .service(node)
                    .and_then(|s| s.call(KvRequest::NodeStatus));
                let status = match answer {
                    Ok(KvResponse::Status(report)) => Ok(*report),
                    Ok(other) => Err(TxnError::unexpected("node_status", &other)),
                    Err(e) => Err(TxnError::Unavailable(e)),
                };
                (node, status)
            })
            .collect()
    }

    /// The node-wide counters (in-memory lock successes and fallbacks, Raft proposals,
    /// lock waits, deadlocks, one-phase commits, lock migrations and losses) summed over the
    /// nodes that answered, and how many answered.
    ///
    /// # Errors
    /// [`TxnError::Unavailable`] when no node answered.
    pub fn cluster_counters(&self) -> Result<(NodeCounters, usize), TxnError> {
        let mut sum = NodeCounters::default();
        let mut answered = 0;
        let mut last = None;
        for (_, status) in self.node_statuses() {
            match status {
                Ok(s) => {
                    sum = sum.add(&s.counters);
                    answered += 1;
                }
                Err(e) => last = Some(e),
            }
        }
        if answered == 0 {
            return Err(
                last.unwrap_or(TxnError::Unavailable(ServiceError::Unavailable {
                    node: 0,
                    detail: "the router knows no nodes".to_string(),
                })),
            );
        }
        Ok((sum, answered))
    }
}
