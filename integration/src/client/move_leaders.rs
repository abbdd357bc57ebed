//! [`Client::move_leaders`]: hand the leadership of data regions to one node (PD's
//! `operator add transfer-leader`), with their in-memory pessimistic locks, by the
//! voluntary transfer each region's current leader runs.

use std::collections::BTreeMap;
use std::time::Duration;

use surge_raft_lite::NodeId;
use surge_txn::rpc::NodeRouter;

use super::cluster_client::{Client, ClientError};

/// How long one region's new leader is waited for: an election's worth and more.
const TAKE_OVER_WAIT: Duration = Duration::from_secs(10);

/// One region [`Client::move_leaders`] handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedRegion {
    /// The region.
    pub region_id: u64,
    /// The node that led it.
    pub from: NodeId,
    /// In-memory pessimistic locks proposed with it.
    pub locks: usize,
}

/// What [`Client::move_leaders`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderMoves {
    /// The regions handed over (the target leads each when the call returns).
    pub moved: Vec<MovedRegion>,
    /// Regions the target led already.
    pub already: usize,
    /// Regions that did not move, with why (each stays with its leader, or elects one).
    pub failed: Vec<(u64, String)>,
    /// Nodes whose status could not be had, with why: regions only they know of were
    /// not looked at.
    pub unasked: Vec<(NodeId, String)>,
}

impl LeaderMoves {
    /// Whether every region looked at is led by the target and every node was asked.
    pub fn complete(&self) -> bool {
        self.failed.is_empty() && self.unasked.is_empty()
    }
}

impl Client {
    /// Hands the leadership of every data region (or of `region` alone) to node `to`,
    /// each by [`Client::transfer_leader`] (a voluntary transfer run on its current leader,
    /// as TiKV's transfer-leader operator: the region's in-memory pessimistic locks are
    /// proposed first, so the new leader has them; it returns once `to` leads). The
    /// regions and their leaders are read from every node's status first. The meta group
    /// stays where it is.
    ///
    /// # Errors
    /// [`ClientError::Service`] when node `to` cannot be asked (not a node of the
    /// cluster, or down). A region that did not move, or a node that could not be asked,
    /// is reported in [`LeaderMoves`], not as an error.
    pub fn move_leaders(
        &self,
        to: NodeId,
        region: Option<u64>,
    ) -> Result<LeaderMoves, ClientError> {
        let nodes = self.nodes();
        if !nodes.contains(&to) {
            // Not a node of the cluster: its status call names why.
            self.node_status(to)?;
        }
        let mut out = LeaderMoves::default();
        // Region id -> its leader, if some node says it leads it.
        let mut leaders: BTreeMap<u64, Option<NodeId>> = BTreeMap::new();
        for node in nodes {
            match self.node_status(node) {
                Ok(report) => {
                    for r in &report.regions {
                        let entry = leaders.entry(r.region.id).or_default();
                        if r.is_leader {
                            *entry = Some(node);
                        }
                    }
                }
                Err(e) if node == to => return Err(e),
                Err(e) => out.unasked.push((node, e.to_string())),
            }
        }
        if let Some(only) = region {
            leaders.retain(|id, _| *id == only);
            if leaders.is_empty() {
                let why = "no node that answered has it (not a region of the cluster?)";
                out.failed.push((only, why.into()));
            }
        }
        for (region_id, leader) in leaders {
            match leader {
                Some(from) if from == to => out.already += 1,
                Some(from) => match self.transfer_leader(region_id, to, TAKE_OVER_WAIT) {
                    Ok(locks) => out.moved.push(MovedRegion {
                        region_id,
                        from,
                        locks,
                    }),
                    Err(e) => out.failed.push((region_id, e.to_string())),
                },
                None => out
                    .failed
                    .push((region_id, "no leader now (an election under way?)".into())),
            }
        }
        Ok(out)
    }
}
