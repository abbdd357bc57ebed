//! [`Client::move_leaders`]: hand the leadership of data regions to one node (PD's
//! `operator add transfer-leader`), with their in-memory pessimistic locks, by the
//! voluntary transfer each region's current leader runs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use surge_raft_lite::NodeId;
use surge_txn::rpc::{KvRequest, KvResponse, NodeRouter};

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
    /// each by a voluntary transfer run on its current leader, as TiKV's transfer-leader
    /// operator: the region's in-memory pessimistic locks are proposed first, so the new
    /// leader has them. The regions and their leaders are read from every node's status
    /// first; each moved region is waited for until `to` leads it. The meta group stays
    /// where it is.
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
        self.node_status(to)?;
        let mut out = LeaderMoves::default();
        // Region id -> its leader, if some node says it leads it.
        let mut leaders: BTreeMap<u64, Option<NodeId>> = BTreeMap::new();
        for node in self.nodes() {
            match self.node_status(node) {
                Ok(report) => {
                    for r in &report.regions {
                        let entry = leaders.entry(r.region.id).or_default();
                        if r.is_leader {
                            *entry = Some(node);
                        }
                    }
                }
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
                Some(from) => match self.hand_region(region_id, from, to) {
                    Ok(locks) => out.moved.push(MovedRegion {
                        region_id,
                        from,
                        locks,
                    }),
                    Err(why) => out.failed.push((region_id, why)),
                },
                None => out
                    .failed
                    .push((region_id, "no leader now (an election under way?)".into())),
            }
        }
        Ok(out)
    }

    /// Asks `from` to hand `region_id` to `to`, then waits until `to` leads it; the
    /// in-memory locks proposed.
    fn hand_region(&self, region_id: u64, from: NodeId, to: NodeId) -> Result<usize, String> {
        let req = KvRequest::TransferLeader { region_id, to };
        let locks = match self.service(from).map_err(|e| e.to_string())?.call(req) {
            Ok(KvResponse::RegionsChanged { locks, .. }) => locks,
            Ok(KvResponse::RegionError(e)) => return Err(e.to_string()),
            Ok(other) => return Err(format!("{other:?}")),
            Err(e) => return Err(e.to_string()),
        };
        let start = Instant::now();
        loop {
            let leads = self.node_status(to).is_ok_and(|s| {
                s.regions
                    .iter()
                    .any(|r| r.region.id == region_id && r.is_leader)
            });
            if leads {
                return Ok(locks);
            }
            if start.elapsed() > TAKE_OVER_WAIT {
                return Err(format!(
                    "node {from} handed it over, but node {to} did not lead it within {TAKE_OVER_WAIT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
