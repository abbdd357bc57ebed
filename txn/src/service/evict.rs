//! Leader eviction before a planned stop: a node hands every group it leads to another
//! voter before it stops (what PD's `evict-leader-scheduler` does for a TiKV store before a
//! rolling restart), so that stopping a node on purpose costs its regions no election
//! timeout of unavailability, and their in-memory pessimistic locks go with them (a data
//! region moves by the voluntary transfer protocol, which proposes its locks first) instead
//! of being lost with the node's memory.

use std::time::{Duration, Instant};

use surge_raft_lite::NodeId;

use super::node::KvNode;
use crate::placement::META_REGION_ID;

/// The longest one transfer is waited for. A live, caught-up follower takes over within a
/// few Raft rounds; a target that has not after this is taken to be down or stopping, and
/// the group goes to the next voter.
const ONE_TRANSFER_WAIT: Duration = Duration::from_secs(2);

/// What [`KvNode::evict_leaders`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEviction {
    /// Groups this node led when it began (data regions and the meta group).
    pub led: usize,
    /// Groups another node leads now.
    pub moved: usize,
    /// In-memory pessimistic locks proposed to the new leaders with their regions.
    pub locks_moved: usize,
    /// Voters that did not take a group within the wait; no other group was offered to
    /// them.
    pub refused_by: Vec<NodeId>,
    /// How long it took.
    pub elapsed: Duration,
}

impl KvNode {
    /// Hands every group this node leads to another voter of the group (module docs).
    /// Data regions go first, each with its in-memory locks, then the meta group. No
    /// handover starts once `budget` has passed, and each one's proposals and wait are cut
    /// to what is left of it (and to 2 s), so the call returns within a few times the
    /// budget at worst, and within it in the usual case. A voter that does not take a
    /// group within its wait is offered no other one, so a dead peer costs one wait, not
    /// one per group. Groups still led at the end stay led: stopping the node then costs
    /// them an election, as a crash would.
    ///
    /// Call it before [`KvNode::shutdown`] while the node still serves; requests that
    /// reach a region after its transfer are answered `NotLeader` with the new leader.
    pub fn evict_leaders(&self, budget: Duration) -> LeaderEviction {
        let began = Instant::now();
        let deadline = began + budget;
        let mut groups: Vec<u64> = self.led_regions().iter().map(|r| r.id).collect();
        if self.is_meta_leader() {
            groups.push(META_REGION_ID);
        }
        let mut out = LeaderEviction {
            led: groups.len(),
            ..LeaderEviction::default()
        };
        for group in groups {
            let Some(status) = self.raft_status(group) else {
                continue;
            };
            for to in status.conf.voters {
                let wait = deadline
                    .saturating_duration_since(Instant::now())
                    .min(ONE_TRANSFER_WAIT);
                if to == self.id() || out.refused_by.contains(&to) || wait.is_zero() {
                    continue;
                }
                let tried = Instant::now();
                match self.hand_over(group, to, wait) {
                    Ok(locks) => {
                        out.moved += 1;
                        out.locks_moved += locks;
                        break;
                    }
                    // Leadership moved anyway (late, or to another voter): done.
                    Err(_) if !self.leads_group(group) => {
                        out.moved += 1;
                        break;
                    }
                    Err(why) => {
                        // Only a voter waited for in vain is skipped from now on; a quick
                        // failure (an epoch change, a busy region) says nothing of it.
                        let refused = tried.elapsed() >= wait;
                        tracing::info!(node = self.id(), group, to, refused, %why, "leader eviction: not moved");
                        if refused {
                            out.refused_by.push(to);
                        }
                    }
                }
            }
        }
        out.elapsed = began.elapsed();
        tracing::info!(node = self.id(), ?out, "leaders evicted");
        out
    }

    /// One transfer of `group` to `to`, waited for up to `wait`; the in-memory locks it
    /// proposed on success.
    fn hand_over(&self, group: u64, to: NodeId, wait: Duration) -> Result<usize, String> {
        if group != META_REGION_ID {
            let raft = self.raft.read_recursive();
            let raft = raft.as_ref().ok_or("node stopped")?;
            let peer = self.peer(group).map_err(|e| e.to_string())?;
            // The handover's proposals (its locks, the transfer command) get the same
            // wait, so that one slow region cannot take much more than the budget.
            return peer
                .transfer_leader(
                    raft,
                    to,
                    wait.min(self.config.proposal_timeout),
                    self.config.transfer_timeout,
                    wait,
                )
                .map_err(|e| e.to_string());
        }
        self.transfer_leader(group, to)?;
        let until = Instant::now() + wait;
        while self.is_meta_leader() {
            if Instant::now() >= until {
                // As for a region: Raft refuses proposals while the transfer is pending,
                // so cancel it (straight to Raft: the lease stays suspended as it is).
                if let Some(raft) = self.raft.read_recursive().as_ref() {
                    let _ = raft.transfer_leader(group, self.id());
                }
                return Err(format!("node {to} did not take the meta group"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(0)
    }

    fn leads_group(&self, group: u64) -> bool {
        if group == META_REGION_ID {
            self.is_meta_leader()
        } else {
            self.is_region_leader(group)
        }
    }
}
