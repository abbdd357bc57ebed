//! A merge driven by the source's leader to a known outcome: `PrepareMerge` at the source,
//! then `CommitMerge` asked of the target until this node knows whether the target absorbed
//! the source, and a rollback only once it knows the target never will.
//!
//! An answer that does not say "applied" (a timeout, an unknown outcome, no reply) proves
//! nothing: the `CommitMerge` may still be in the target's log and apply later, and a source
//! rolled back meanwhile would take writes that apply then discards. What does prove it is
//! this node's own replica of the target: a `CommitMerge` applies only at the target version
//! the merge was prepared against, and its apply marks this node's source replica merged
//! before it moves the target's version. So a replica of the target past that version with
//! the source not marked merged shows the target moved on without the source, for good.
//! TiKV decides the same way: its source peers send `CommitMerge` again on every merge-check
//! tick and roll back only when their store's replica of the target shows a newer epoch than
//! `PrepareMerge` expected (which a target that absorbed the source cannot show there, since
//! absorbing destroys that store's source peer first); see `on_check_merge`,
//! `schedule_merge` and `validate_merge_peer` in
//! <https://github.com/tikv/tikv/blob/master/components/raftstore/src/store/fsm/peer.rs>.

use std::sync::Arc;
use std::time::{Duration, Instant};

use surge_raft_lite::Node as RaftNode;

use super::node::KvNode;
use super::request::KvRequest;
use super::response::KvResponse;
use crate::region::{MergeState, RegionError, RegionInfo, RegionPeer};

/// How a merge ended, as far as this node knows.
#[derive(Debug)]
enum Outcome {
    /// The target absorbed the source: the target as it is after.
    Merged(RegionInfo),
    /// The target moved past the version the merge was prepared against without absorbing
    /// the source: it never will.
    Refused(RegionError),
    /// Not known (this node is stopping): the source stays merging, refusing commands.
    Unknown(RegionError),
}

/// How often a node looks for merging regions it leads that nobody drives (TiKV's
/// `merge_check_tick_interval` is 2 s).
pub(super) const MERGE_CHECK_EVERY: Duration = Duration::from_secs(1);

/// The longest pause between two rounds of asking the target.
const MAX_PAUSE: Duration = Duration::from_millis(200);

/// The longest a merge's report waits for this node's target replica to cover the source.
const COVER_WAIT: Duration = Duration::from_secs(5);

/// `target`'s info once its range covers `source`'s, waiting up to `timeout`; `None` if it
/// did not by then.
fn wait_to_cover(
    target: &RegionPeer,
    source: &RegionInfo,
    timeout: Duration,
) -> Option<RegionInfo> {
    let deadline = Instant::now() + timeout;
    loop {
        let now = target.info();
        if now.covers(source) {
            return Some(now);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A merge refused for good, before or after `PrepareMerge`.
fn refused(source: u64, why: String) -> RegionError {
    RegionError::ServerIsBusy {
        region_id: source,
        reason: format!("merge refused: {why}"),
    }
}

impl KvNode {
    /// Merges region `source` (led here) into `target`. The target's version is taken from
    /// this node's replica of it before `PrepareMerge`; the merge applies only at that
    /// version.
    pub(super) fn merge(
        &self,
        raft: &RaftNode,
        source: u64,
        target: u64,
    ) -> Result<KvResponse, RegionError> {
        let peer = self.peer(source)?;
        let target_peer = self.target_replica(source, target)?;
        let expected = target_peer.info();
        if target_peer.merge_state() != MergeState::None || !expected.borders(&peer.info()) {
            return Err(refused(
                source,
                format!("region {target} does not border region {source} or is merging"),
            ));
        }
        let _driving = self.drive(source)?;
        let (source_info, data, moved) = peer.prepare_merge(
            raft,
            target,
            expected.epoch.version,
            self.config.merge_max_lock_bytes,
            self.config.proposal_timeout,
        )?;
        self.pause
            .reach(crate::region::region_pause_points::MERGE_AFTER_PREPARE);
        self.finish_merge(
            raft,
            &peer,
            &target_peer,
            source_info,
            expected.epoch.version,
            data,
            moved,
        )
    }

    /// This node's replica of a merge's `target`, which the driver needs to settle it.
    fn target_replica(&self, source: u64, target: u64) -> Result<Arc<RegionPeer>, RegionError> {
        self.peer(target).map_err(|_| {
            refused(
                source,
                format!("region {target} has no replica on this node"),
            )
        })
    }

    /// Registers this node as driving the merge of `source` until the guard drops; refused
    /// when a driver here already does (the merge checker skips driven sources).
    fn drive(&self, source: u64) -> Result<Driving<'_>, RegionError> {
        if !self.merges_driven.lock().insert(source) {
            return Err(refused(
                source,
                "a merge of this region is already being driven on this node".into(),
            ));
        }
        Ok(Driving { node: self, source })
    }

    /// The merge checker's step (TiKV's merge-check tick on a source peer): a region this
    /// node leads that is merging with no driver here (the node that prepared it stopped or
    /// lost the leadership, or its `PrepareMerge` came back "outcome unknown" and applied
    /// later) would refuse commands for good; its merge is driven again to an outcome, on a
    /// thread of its own.
    ///
    /// The request carries the target version the merge was prepared against (recorded by
    /// its `PrepareMergeAt` entry on every replica), as the first driver's did, so every
    /// driver decides on the same evidence and a rollback stays safe. A merge prepared
    /// before this node restarted is not resumed (the version is kept in memory only).
    pub(super) fn resume_merges(&self) {
        let merging: Vec<(u64, u64)> = self
            .regions
            .read()
            .values()
            .filter_map(|p| match p.merge_state() {
                // Only a merge whose prepared target version this replica knows can be
                // resumed (see `resume_merge`); the others are left as they are, not tried
                // (and logged) every second.
                MergeState::Merging { target } if p.merge_target_version().is_some() => {
                    Some((p.id(), target))
                }
                _ => None,
            })
            .collect();
        for (source, target) in merging {
            if !self.is_region_leader(source) || self.merges_driven.lock().contains(&source) {
                continue;
            }
            // `settle_merge` ends once the node stops, as the thread must.
            self.spawn_with_raft(
                format!("merge-resume-{source}"),
                move |node, raft| match node.resume_merge(raft, source, target) {
                    Ok(_) => tracing::info!(source, target, "resumed merge settled"),
                    Err(e) => {
                        tracing::warn!(source, target, error = %e, "resumed merge not settled")
                    }
                },
            );
        }
    }

    fn resume_merge(
        &self,
        raft: &RaftNode,
        source: u64,
        target: u64,
    ) -> Result<KvResponse, RegionError> {
        let _driving = self.drive(source)?;
        let peer = self.peer(source)?;
        // Still merging and led here now that this thread drives it.
        if peer.merge_state() != (MergeState::Merging { target }) || !self.is_region_leader(source)
        {
            return Err(refused(source, "no longer merging, or not led here".into()));
        }
        let target_peer = self.target_replica(source, target)?;
        // The version the merge was prepared against, as every driver of it must use: a
        // driver asking at another (the target's current one, say) could get the target to
        // absorb the source after the first driver, seeing the target past its version,
        // rolled the source back, and lose the writes the source took since.
        let Some(expected) = peer.merge_target_version() else {
            return Err(refused(
                source,
                "the target version of its PrepareMerge is not known on this node (applied \
                 before a restart); not resumed"
                    .into(),
            ));
        };
        tracing::warn!(
            source,
            target,
            "a merging region had no driver; resuming its merge"
        );
        // The source refuses commands while merging: its data is final since `PrepareMerge`.
        let (source_info, data) = peer.merge_export();
        self.finish_merge(raft, &peer, &target_peer, source_info, expected, data, 0)
    }

    /// After `PrepareMerge` applied at the source: asks the target to absorb it until the
    /// outcome is known here, then reports it or rolls the source back.
    #[allow(clippy::too_many_arguments)] // the merge's pieces, each used once
    fn finish_merge(
        &self,
        raft: &RaftNode,
        peer: &RegionPeer,
        target_peer: &RegionPeer,
        source_info: RegionInfo,
        expected_version: u64,
        data: Vec<u8>,
        moved: usize,
    ) -> Result<KvResponse, RegionError> {
        let source = source_info.id;
        let target = target_peer.id();
        let prepared_version = source_info.epoch.version;
        let req = KvRequest::CommitMerge {
            target,
            source: source_info.clone(),
            data,
            target_version: expected_version,
        };
        match self.settle_merge(peer, target_peer, &source_info, expected_version, &req) {
            Outcome::Merged(target_info) => {
                // The outcome can be known (the source marked merged) before this node's
                // replica of the target shows the wider range. Removing the source while
                // putting a target that does not cover it would leave a hole in the meta
                // group's map, so the report waits (bounded) for a covering target.
                let target_info = if target_info.covers(&source_info) {
                    Some(target_info)
                } else {
                    wait_to_cover(target_peer, &source_info, COVER_WAIT)
                };
                match &target_info {
                    Some(t) => self.report(vec![t.clone()], vec![source]),
                    // Nothing reported for the target (a put that does not cover the source
                    // is useless); the source is gone for good, so its removal is. The
                    // source's range is then a hole in the map until a later report of the
                    // target's own (its next split puts the wider parent) fills it.
                    None => {
                        tracing::warn!(
                            source,
                            target,
                            "merge applied but the local target replica never covered the \
                             source; only the source's removal is reported"
                        );
                        self.report(Vec::new(), vec![source]);
                    }
                }
                Ok(KvResponse::RegionsChanged {
                    regions: vec![target_info.unwrap_or_else(|| target_peer.info())],
                    locks: moved,
                })
            }
            Outcome::Refused(e) => {
                self.roll_back_merge(raft, peer, prepared_version)?;
                Err(e)
            }
            Outcome::Unknown(e) => Err(e),
        }
    }

    /// Asks the target's leader (wherever it is) to absorb the source, again and again,
    /// until the answer is "applied" or this node's replicas show the outcome. Every other
    /// answer (not the leader, busy, the target moved, an unknown outcome, no reply at all)
    /// leaves it open.
    fn settle_merge(
        &self,
        source: &RegionPeer,
        target: &RegionPeer,
        source_info: &RegionInfo,
        expected: u64,
        req: &KvRequest,
    ) -> Outcome {
        let target_id = target.id();
        let started = Instant::now();
        let mut warned = started;
        let mut pause = Duration::from_millis(10);
        loop {
            if let Some(known) = merge_outcome_here(source, target, source_info, expected) {
                return known;
            }
            if self.is_stopped() {
                return Outcome::Unknown(RegionError::ProposalFailed {
                    region_id: source_info.id,
                    detail: format!(
                        "node stopping; whether region {target_id} absorbed the source is \
                         unknown (the source keeps refusing commands)"
                    ),
                    outcome_unknown: true,
                });
            }
            let mut candidates: Vec<u64> = self.leader_hint(target_id).into_iter().collect();
            candidates.extend(self.router.nodes());
            for node in candidates {
                let resp = if node == self.id() {
                    Ok(self.handle(req.clone()))
                } else {
                    self.router.service(node).and_then(|s| s.call(req.clone()))
                };
                if let Ok(KvResponse::RegionsChanged { mut regions, .. }) = resp
                    && !regions.is_empty()
                {
                    return Outcome::Merged(regions.remove(0));
                }
            }
            if warned.elapsed() >= Duration::from_secs(5) {
                warned = Instant::now();
                tracing::warn!(
                    source = source_info.id,
                    target = target_id,
                    waited_ms = started.elapsed().as_millis() as u64,
                    "merge outcome still unknown; asking the target again"
                );
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// Rolls the source back after a refusal. A rollback whose outcome is unknown is
    /// proposed again (a `RollbackMerge` applies to its merge once).
    fn roll_back_merge(
        &self,
        raft: &RaftNode,
        peer: &RegionPeer,
        prepared_version: u64,
    ) -> Result<(), RegionError> {
        let mut tries = 0;
        loop {
            match peer.rollback_merge(raft, prepared_version, self.config.proposal_timeout) {
                Ok(()) => return Ok(()),
                Err(RegionError::ProposalFailed {
                    outcome_unknown: true,
                    ..
                }) if tries < 2 && !self.is_stopped() => {
                    if peer.merge_state() == MergeState::None {
                        return Ok(());
                    }
                    tries += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A source region this node drives the merge of, until dropped.
struct Driving<'a> {
    node: &'a KvNode,
    source: u64,
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        self.node.merges_driven.lock().remove(&self.source);
    }
}

/// The merge's outcome as this node's replicas show it, if they do: the source replica
/// marked merged (the target's replica here applied the merge), or the target's replica past
/// `expected` (or merged away) with the source not marked (the target moved on without it).
fn merge_outcome_here(
    source: &RegionPeer,
    target: &RegionPeer,
    source_info: &RegionInfo,
    expected: u64,
) -> Option<Outcome> {
    // The target first: its apply marks the source merged before it moves the version, so a
    // version seen past `expected` and then an unmarked source mean another change moved it.
    let seen = target.info();
    let target_gone = matches!(target.merge_state(), MergeState::Merged { .. });
    if matches!(source.merge_state(), MergeState::Merged { .. }) {
        // The apply that marked the source widens the target next.
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut now = target.info();
        while now.epoch.version <= expected && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            now = target.info();
        }
        return Some(Outcome::Merged(now));
    }
    if seen.epoch.version > expected || target_gone {
        if seen.covers(source_info) {
            // Restored from a snapshot taken after the merge.
            return Some(Outcome::Merged(seen));
        }
        return Some(Outcome::Refused(refused(
            source_info.id,
            format!(
                "region {} moved from version {expected} to {} without absorbing it{}",
                seen.id,
                seen.epoch.version,
                if target_gone { " (merged away)" } else { "" }
            ),
        )));
    }
    None
}
