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
        let target_peer = self.peer(target).map_err(|_| {
            refused(
                source,
                format!("region {target} has no replica on this node"),
            )
        })?;
        let expected = target_peer.info();
        if target_peer.merge_state() != MergeState::None || !expected.borders(&peer.info()) {
            return Err(refused(
                source,
                format!("region {target} does not border region {source} or is merging"),
            ));
        }
        let (source_info, data, moved) = peer.prepare_merge(
            raft,
            target,
            self.config.merge_max_lock_bytes,
            self.config.proposal_timeout,
        )?;
        let prepared_version = source_info.epoch.version;
        let req = KvRequest::CommitMerge {
            target,
            source: source_info.clone(),
            data,
            target_version: expected.epoch.version,
        };
        match self.settle_merge(
            &peer,
            &target_peer,
            &source_info,
            expected.epoch.version,
            &req,
        ) {
            Outcome::Merged(target_info) => {
                // The outcome can be known (the source marked merged) before this node's
                // replica of the target shows the wider range. Removing the source while
                // putting a target that does not cover it would leave a hole in the meta
                // group's map, so the report waits (bounded) for a covering target.
                let target_info = if target_info.covers(&source_info) {
                    Some(target_info)
                } else {
                    wait_to_cover(&target_peer, &source_info, COVER_WAIT)
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
                self.roll_back_merge(raft, &peer, prepared_version)?;
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
