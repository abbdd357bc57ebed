//! The meta leader's requests: timestamps, the region map and the cluster's deadlock detector.

use super::node::KvNode;
use super::request::KvRequest;
use super::response::{KvResponse, WaitForEdge};
use crate::placement::{GcHold, META_REGION_ID, MetaCommand};
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
            KvRequest::GetTimestamp { count } => self.with_meta_raft(|raft| {
                let ts = self
                    .meta
                    .get_ts(raft, count, self.config.proposal_timeout)?;
                Ok(KvResponse::Timestamp { ts })
            }),
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
                self.with_meta_raft(|raft| {
                    let id = self
                        .meta
                        .propose(raft, vec![cmd], self.config.proposal_timeout)?;
                    Ok(KvResponse::RegionId { id })
                })
            }
            KvRequest::ReportRegions { put, remove } => {
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
                self.propose_meta(cmds)
            }
            KvRequest::SetGcHold { owner, ts, ttl_ms } => {
                let cmd = if ts == 0 {
                    MetaCommand::RemoveGcHold(owner)
                } else {
                    MetaCommand::SetGcHold(GcHold {
                        owner,
                        ts,
                        expires_ms: crate::ts::wall_clock_ms().saturating_add(ttl_ms),
                    })
                };
                self.propose_meta_ts(cmd)
            }
            KvRequest::RaiseGcSafePoint { safe_point } => {
                // The rule every node applies to a `Gc` request: nothing at or above a
                // timestamp it would still serve (and nothing without a life time).
                let oldest = self.oldest_served();
                if oldest == 0 || safe_point >= oldest {
                    return KvResponse::KeyError(crate::KeyError::TooOld {
                        ts: safe_point,
                        oldest,
                    });
                }
                self.propose_meta_ts(MetaCommand::RaiseGcSafePoint {
                    safe_point,
                    now_ms: crate::ts::wall_clock_ms(),
                })
            }
            KvRequest::GcHolds => self.gc_holds(),
            other => KvResponse::RegionError(RegionError::ServerIsBusy {
                region_id: META_REGION_ID,
                reason: format!("{} is not a meta request", other.name()),
            }),
        }
    }

    /// Runs `f` with this node's Raft node (answering `NotLeader` when it has none: it is
    /// stopping); a region error `f` returns becomes the answer, with a leader hint.
    fn with_meta_raft(
        &self,
        f: impl FnOnce(&surge_raft_lite::Node) -> Result<KvResponse, RegionError>,
    ) -> KvResponse {
        let raft = self.raft.read_recursive();
        let Some(raft) = raft.as_ref() else {
            return KvResponse::RegionError(RegionError::NotLeader {
                region_id: META_REGION_ID,
                leader: None,
            });
        };
        f(raft).unwrap_or_else(|e| KvResponse::RegionError(self.with_hint(e)))
    }

    /// Proposes `cmds` to the meta group; `Done` once applied.
    fn propose_meta(&self, cmds: Vec<MetaCommand>) -> KvResponse {
        self.with_meta_raft(|raft| {
            self.meta
                .propose(raft, cmds, self.config.proposal_timeout)?;
            Ok(KvResponse::Done)
        })
    }

    /// Proposes `cmd` and answers `GcTs` with its apply result.
    fn propose_meta_ts(&self, cmd: MetaCommand) -> KvResponse {
        self.with_meta_raft(|raft| {
            let ts = self
                .meta
                .propose(raft, vec![cmd], self.config.proposal_timeout)?;
            Ok(KvResponse::GcTs { ts })
        })
    }

    /// The GC holds in force. A quorum round first, so that a new leader has applied every
    /// hold set under its predecessors (a hold it missed would let a safe point pass it);
    /// expired holds are dropped through the log, so that every replica forgets them.
    fn gc_holds(&self) -> KvResponse {
        let confirmed = self.with_meta_raft(|raft| {
            raft.read_index(META_REGION_ID, self.config.proposal_timeout)
                .map_err(|e| crate::region::raft_error(META_REGION_ID, e))?;
            Ok(KvResponse::Done)
        });
        if !matches!(confirmed, KvResponse::Done) {
            return confirmed;
        }
        let now = crate::ts::wall_clock_ms();
        let (holds, expired) = self.meta.gc_holds(now);
        if expired {
            let dropped = self.propose_meta(vec![MetaCommand::ExpireGcHolds(now)]);
            if !matches!(dropped, KvResponse::Done) {
                return dropped;
            }
        }
        KvResponse::GcHolds { holds }
    }
}
