//! The meta leader's requests: timestamps, the region map and the cluster's deadlock detector.

use super::node::KvNode;
use super::request::KvRequest;
use super::response::{KvResponse, WaitForEdge};
use crate::placement::{META_REGION_ID, MetaCommand};
use crate::region::RegionError;

impl KvNode {
    pub(super) fn handle_meta(&self, req: KvRequest) -> KvResponse {
        if !self.meta.is_leader() {
            return KvResponse::RegionError(self.with_hint(RegionError::NotLeader {
                region_id: META_REGION_ID,
                leader: None,
            }));
        }
        match req {
            KvRequest::GetTimestamp { count } => {
                let raft = self.raft.read_recursive();
                let Some(raft) = raft.as_ref() else {
                    return KvResponse::RegionError(RegionError::NotLeader {
                        region_id: META_REGION_ID,
                        leader: None,
                    });
                };
                match self.meta.get_ts(raft, count, self.config.proposal_timeout) {
                    Ok(ts) => KvResponse::Timestamp { ts },
                    Err(e) => KvResponse::RegionError(self.with_hint(e)),
                }
            }
            KvRequest::GetRegion { key } => KvResponse::Regions {
                regions: self
                    .meta
                    .region_of(&key)
                    .map(|r| {
                        let leader = self.leader_hint(r.id);
                        (r, leader)
                    })
                    .into_iter()
                    .collect(),
            },
            KvRequest::ScanRegions { start, limit } => KvResponse::Regions {
                regions: self
                    .meta
                    .scan(&start, limit)
                    .into_iter()
                    .map(|r| {
                        let leader = self.leader_hint(r.id);
                        (r, leader)
                    })
                    .collect(),
            },
            KvRequest::DetectDeadlock {
                txn,
                wait_for_txn,
                key,
            } => match self.detector.lock().detect(txn, wait_for_txn, &key) {
                Ok(()) => KvResponse::Detect { deadlock: None },
                Err(d) => KvResponse::Detect {
                    deadlock: Some(
                        d.wait_chain
                            .into_iter()
                            .map(|e| WaitForEdge {
                                txn: e.txn,
                                wait_for_txn: e.wait_for_txn,
                                key: e.key,
                            })
                            .collect(),
                    ),
                },
            },
            KvRequest::CleanUpWaitFor {
                txn,
                wait_for_txn,
                key,
            } => {
                self.detector
                    .lock()
                    .clean_up_wait_for(txn, wait_for_txn, &key);
                KvResponse::Done
            }
            KvRequest::CleanUpTxn { txn } => {
                self.detector.lock().clean_up(txn);
                KvResponse::Done
            }
            KvRequest::AllocRegionId | KvRequest::AllocRegionIds { .. } => {
                let cmd = match req {
                    KvRequest::AllocRegionIds { count } => MetaCommand::AllocRegionIds(count),
                    _ => MetaCommand::AllocRegionId,
                };
                let raft = self.raft.read_recursive();
                let Some(raft) = raft.as_ref() else {
                    return KvResponse::RegionError(RegionError::NotLeader {
                        region_id: META_REGION_ID,
                        leader: None,
                    });
                };
                match self
                    .meta
                    .propose(raft, vec![cmd], self.config.proposal_timeout)
                {
                    Ok(id) => KvResponse::RegionId { id },
                    Err(e) => KvResponse::RegionError(self.with_hint(e)),
                }
            }
            KvRequest::ReportRegions { put, remove } => {
                let raft = self.raft.read_recursive();
                let Some(raft) = raft.as_ref() else {
                    return KvResponse::RegionError(RegionError::NotLeader {
                        region_id: META_REGION_ID,
                        leader: None,
                    });
                };
                // Heartbeats repeat what the map holds: propose only what changes it.
                let put = self.meta.news(put);
                if put.is_empty() && remove.is_empty() {
                    return KvResponse::Done;
                }
                let cmds = put
                    .into_iter()
                    .map(MetaCommand::PutRegion)
                    .chain(remove.into_iter().map(MetaCommand::RemoveRegion))
                    .collect();
                match self.meta.propose(raft, cmds, self.config.proposal_timeout) {
                    Ok(_) => KvResponse::Done,
                    Err(e) => KvResponse::RegionError(self.with_hint(e)),
                }
            }
            other => KvResponse::RegionError(RegionError::ServerIsBusy {
                region_id: META_REGION_ID,
                reason: format!("{} is not a meta request", other.name()),
            }),
        }
    }
}
