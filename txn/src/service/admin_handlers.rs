//! Admin requests: voluntary leader transfer, split and merge of data regions, run on the
//! leader with TiKV's in-memory lock protocol, and reported to the meta group (a merge's
//! source side is driven in `merge_driver.rs`; its target side, `CommitMerge`, is here).

use std::time::{Duration, Instant};

use surge_raft_lite::Node as RaftNode;

use super::node::KvNode;
use super::request::KvRequest;
use super::response::KvResponse;
use crate::region::{RegionError, RegionInfo};

/// How long a split or merge keeps reporting its change to an unreachable meta group before
/// it gives up (and logs it): longer than an election and a partition of a few seconds.
const REPORT_RETRY_FOR: Duration = Duration::from_secs(30);

/// Region ids a node reserves from the meta group at a time for its splits.
pub(super) const REGION_ID_BATCH: u64 = 16;

// The meta group grants at most `MAX_REGION_ID_BATCH` ids at a time and answers only the
// first: a larger batch here would hand out ids it never reserved.
const _: () = assert!(REGION_ID_BATCH <= crate::placement::MAX_REGION_ID_BATCH);

impl KvNode {
    pub(super) fn handle_admin(&self, req: KvRequest) -> KvResponse {
        let raft = self.raft.read_recursive();
        let Some(raft) = raft.as_ref() else {
            return KvResponse::RegionError(RegionError::ServerIsBusy {
                region_id: 0,
                reason: "node stopped".into(),
            });
        };
        let r = match req {
            KvRequest::TransferLeader { region_id, to } => self.transfer(raft, region_id, to),
            KvRequest::SplitRegion {
                region_id,
                split_key,
            } => self.split(raft, region_id, split_key),
            KvRequest::MergeRegions { source, target } => self.merge(raft, source, target),
            KvRequest::CommitMerge {
                target,
                source,
                data,
                target_version,
            } => self.peer(target).and_then(|p| {
                p.commit_merge(
                    raft,
                    source,
                    data,
                    target_version,
                    self.config.proposal_timeout,
                )
                .map(|t| KvResponse::RegionsChanged {
                    regions: vec![t],
                    locks: 0,
                })
            }),
            other => Err(RegionError::ServerIsBusy {
                region_id: 0,
                reason: format!("{} is not an admin request", other.name()),
            }),
        };
        match r {
            Ok(resp) => resp,
            Err(e) => KvResponse::RegionError(self.with_hint(e)),
        }
    }

    fn transfer(
        &self,
        raft: &RaftNode,
        region_id: u64,
        to: u64,
    ) -> Result<KvResponse, RegionError> {
        let peer = self.peer(region_id)?;
        let locks = peer.transfer_leader(
            raft,
            to,
            self.config.proposal_timeout,
            self.config.transfer_timeout,
            self.config.transfer_timeout,
        )?;
        Ok(KvResponse::RegionsChanged {
            regions: vec![peer.info()],
            locks,
        })
    }

    fn split(
        &self,
        raft: &RaftNode,
        region_id: u64,
        split_key: Option<Vec<u8>>,
    ) -> Result<KvResponse, RegionError> {
        let peer = self.peer(region_id)?;
        let split_key = match split_key {
            Some(k) => k,
            None => peer.middle_key().ok_or(RegionError::ServerIsBusy {
                region_id,
                reason: "region has too little data to split".into(),
            })?,
        };
        let new_id = self.next_region_id(region_id)?;
        let moved_before = self.budget.counters().migrated_on_split;
        let (parent, child) = peer.split(raft, &split_key, new_id, self.config.proposal_timeout)?;
        let moved = self.budget.counters().migrated_on_split - moved_before;
        // The split is done once applied here; the child's election follows on a thread
        // of its own, as TiKV's new peer campaigns after the split's apply (the request
        // does not wait for it: it took twice the split's own time). Until it leads, its
        // requests get `NotLeader` and clients retry. It starts before the report, which
        // retries for up to 30 s against a slow meta group: another replica winning the
        // child's election meanwhile would drop the locks the split moved here.
        let campaign = child.clone();
        let spawned = self
            .spawn_with_raft(format!("split-child-{}", child.id), move |node, raft| {
                node.lead_split_child(raft, &campaign)
            });
        if !spawned {
            tracing::warn!(region = child.id, "campaigning for the split child inline");
            self.lead_split_child(raft, &child);
        }
        self.report(vec![parent.clone(), child.clone()], Vec::new());
        Ok(KvResponse::RegionsChanged {
            regions: vec![parent, child],
            locks: usize::try_from(moved).unwrap_or(usize::MAX),
        })
    }

    /// Runs `f` with this node and its raft node on a thread `name` of its own; `false`
    /// (logged) when no thread could start. The thread holds the raft node's read guard,
    /// which a shutdown waits for, so `f` must end once the node stops.
    pub(super) fn spawn_with_raft(
        &self,
        name: String,
        f: impl FnOnce(&KvNode, &RaftNode) + Send + 'static,
    ) -> bool {
        let me = self.me.clone();
        let spawned = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let Some(node) = me.upgrade() else { return };
                let raft = node.raft.read_recursive();
                if let Some(raft) = raft.as_ref() {
                    f(&node, raft);
                }
            });
        if let Err(e) = &spawned {
            tracing::warn!(thread = %name, error = %e, "could not start a node thread");
        }
        spawned.is_ok()
    }

    /// A fresh region id for a split of `region_id`: from the node's reserved ids, which
    /// are refilled [`REGION_ID_BATCH`] at a time in one meta-group round (so most splits
    /// skip that round).
    fn next_region_id(&self, region_id: u64) -> Result<u64, RegionError> {
        if let Some(id) = self.region_ids.lock().next() {
            return Ok(id);
        }
        let count = REGION_ID_BATCH;
        match self.call_meta(KvRequest::AllocRegionIds { count }) {
            Ok(KvResponse::RegionId { id }) => {
                let mut ids = self.region_ids.lock();
                // Two splits may refill at once: the later batch wins, the other's ids
                // are skipped (ids need only be unique).
                *ids = id + 1..id + count;
                Ok(id)
            }
            other => Err(RegionError::ServerIsBusy {
                region_id,
                reason: format!("no region id from the meta group: {other:?}"),
            }),
        }
    }

    /// The split child's replica here holds the moved in-memory locks: campaign so it leads
    /// (TiKV: a new peer of a leader campaigns at once); if another node wins, the locks here
    /// are lost and counted as such. Gives up after 3 s, or when the node stops.
    fn lead_split_child(&self, raft: &RaftNode, child: &RegionInfo) {
        let deadline = Instant::now() + Duration::from_secs(3);
        let running = || Instant::now() < deadline && !self.is_stopped();
        while running() {
            if raft.campaign(child.id).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        while running() {
            if self.is_region_leader(child.id) {
                return;
            }
            if let Some(l) = raft.status(child.id).ok().and_then(|s| s.leader)
                && l != self.id()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if let Ok(p) = self.peer(child.id)
            && !self.is_region_leader(child.id)
        {
            p.drop_locks_not_leader();
        }
    }

    /// Tells the meta group about changed regions (best effort: a client that finds a stale
    /// map gets epoch errors carrying the current regions).
    pub(super) fn report(&self, put: Vec<RegionInfo>, remove: Vec<u64>) {
        // Until the next region heartbeat (`region_heartbeat.rs`, every second) nothing else
        // repairs the meta group's map, and a change it never hears of routes clients to a
        // region that is gone. Retried until the meta group has applied it: replaying a report is harmless (a
        // put older than the map's entry is ignored, a removed id stays removed), so a retry
        // that races a later change of the same region cannot undo it.
        let deadline = Instant::now() + REPORT_RETRY_FOR;
        let mut pause = Duration::from_millis(20);
        loop {
            let req = KvRequest::ReportRegions {
                put: put.clone(),
                remove: remove.clone(),
            };
            let failure = match self.call_meta(req) {
                Ok(KvResponse::Done) => return,
                Ok(other) => format!("{other:?}"),
                Err(e) => e.to_string(),
            };
            if self.is_stopped() || Instant::now() >= deadline {
                tracing::warn!(
                    error = %failure,
                    ?put,
                    ?remove,
                    "region change not reported to the meta group; gave up"
                );
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}
