//! [`Client::move_leaders`]: hand the leadership of data regions to one node (PD's
//! `operator add transfer-leader`), with their in-memory pessimistic locks, by the
//! voluntary transfer each region's current leader runs.

use surge_raft_lite::NodeId;
use surge_txn::rpc::{KvRequest, KvResponse, NodeRouter};

use super::cluster_client::{Client, ClientError};

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
    /// The regions handed over.
    pub moved: Vec<MovedRegion>,
    /// Regions the target led already.
    pub already: usize,
    /// Regions whose transfer failed, with why (the region stays with its leader).
    pub failed: Vec<(u64, String)>,
}

impl Client {
    /// Hands the leadership of every data region (or of `region` alone) to node `to`,
    /// each by a voluntary transfer run on its current leader, as TiKV's transfer-leader
    /// operator: the region's in-memory pessimistic locks are proposed first, so the new
    /// leader has them. Regions are found in each node's status; a node that cannot be
    /// asked is skipped (its regions elect on their own). The meta group stays where it is.
    ///
    /// # Errors
    /// [`ClientError::Service`] when node `to` is not a node of the cluster; a region that
    /// did not move is reported in [`LeaderMoves::failed`], not as an error.
    pub fn move_leaders(
        &self,
        to: NodeId,
        region: Option<u64>,
    ) -> Result<LeaderMoves, ClientError> {
        self.node_status(to)?;
        let mut out = LeaderMoves::default();
        for node in self.nodes() {
            let Ok(report) = self.node_status(node) else {
                continue;
            };
            for r in report.regions.iter().filter(|r| r.is_leader) {
                let region_id = r.region.id;
                if region.is_some_and(|only| only != region_id) {
                    continue;
                }
                if node == to {
                    out.already += 1;
                    continue;
                }
                let req = KvRequest::TransferLeader { region_id, to };
                match self.service(node).map(|s| s.call(req)) {
                    Ok(Ok(KvResponse::RegionsChanged { locks, .. })) => {
                        out.moved.push(MovedRegion {
                            region_id,
                            from: node,
                            locks,
                        });
                    }
                    Ok(Ok(KvResponse::RegionError(e))) => {
                        out.failed.push((region_id, e.to_string()))
                    }
                    Ok(Ok(other)) => out.failed.push((region_id, format!("{other:?}"))),
                    Ok(Err(e)) | Err(e) => out.failed.push((region_id, e.to_string())),
                }
            }
        }
        if let Some(only) = region
            && out.moved.is_empty()
            && out.already == 0
            && out.failed.is_empty()
        {
            let why = "no node leads it (not a region of the cluster, or an election is under way)";
            out.failed.push((only, why.into()));
        }
        Ok(out)
    }
}
