//! [`FaultSchedule`]: a seeded list of faults (node crashes with restart, leader
//! partitions, leader transfers) and the thread that applies it to a running cluster.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use surge_txn::{LocalCluster, LockMode};

use super::rng::SplitMix64;

/// One fault. Nodes and groups are fixed when the schedule is drawn; leaders are looked up
/// when the fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Stop `node` (its memory, with every in-memory lock and waiter, is lost), keep it down
    /// for `down`, restart it from its WAL.
    Crash {
        /// The node.
        node: u64,
        /// How long it stays down.
        down: Duration,
    },
    /// Cut the current leader of `group` off from every other node for `cut`, then heal.
    PartitionLeader {
        /// The Raft group (a region or the meta group).
        group: u64,
        /// How long the cut lasts.
        cut: Duration,
    },
    /// Move the leadership of `group` to `to`.
    TransferLeader {
        /// The Raft group.
        group: u64,
        /// The new leader.
        to: u64,
    },
}

/// Faults at offsets from the start of the run, one at a time (a fault ends before the
/// next begins, so a three-node cluster keeps a quorum of live, connected nodes).
#[derive(Debug, Clone)]
pub struct FaultSchedule {
    events: Vec<(Duration, Fault)>,
}

impl FaultSchedule {
    /// No faults.
    pub fn none() -> FaultSchedule {
        FaultSchedule { events: Vec::new() }
    }

    /// Random faults over `run_for`: after a quiet gap of 150-500 ms, a crash (down
    /// 200-700 ms), a leader partition (300-800 ms) or a transfer, chosen evenly.
    pub fn random(
        rng: &mut SplitMix64,
        nodes: &[u64],
        groups: &[u64],
        run_for: Duration,
    ) -> FaultSchedule {
        let mut events = Vec::new();
        let mut at = Duration::from_millis(rng.range(100, 300));
        let pick = |rng: &mut SplitMix64, of: &[u64]| {
            of[usize::try_from(rng.below(of.len() as u64)).unwrap_or(0)]
        };
        while at < run_for {
            let fault = match rng.below(3) {
                0 => Fault::Crash {
                    node: pick(rng, nodes),
                    down: Duration::from_millis(rng.range(200, 700)),
                },
                1 => Fault::PartitionLeader {
                    group: pick(rng, groups),
                    cut: Duration::from_millis(rng.range(300, 800)),
                },
                _ => Fault::TransferLeader {
                    group: pick(rng, groups),
                    to: pick(rng, nodes),
                },
            };
            events.push((at, fault));
            let busy = match fault {
                Fault::Crash { down, .. } => down,
                Fault::PartitionLeader { cut, .. } => cut,
                Fault::TransferLeader { .. } => Duration::from_millis(100),
            };
            at += busy + Duration::from_millis(rng.range(150, 500));
        }
        FaultSchedule { events }
    }

    /// The faults with their offsets.
    pub fn events(&self) -> &[(Duration, Fault)] {
        &self.events
    }

    /// Applies the faults in order until they run out or `stop` is set, then heals any
    /// fault still in force. Restarted nodes are put back in `mode` (a restart starts a
    /// node in the cluster's initial mode). Returns a line per fault saying what happened.
    pub fn run(&self, cluster: &LocalCluster, mode: LockMode, stop: &AtomicBool) -> Vec<String> {
        let start = Instant::now();
        let mut log = Vec::new();
        let sleep_until = |t: Duration| {
            while start.elapsed() < t {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            true
        };
        for &(at, fault) in &self.events {
            if !sleep_until(at) {
                break;
            }
            let began = start.elapsed();
            let line = match fault {
                Fault::Crash { node, down } => {
                    let stopped = cluster.stop_node(node);
                    sleep_until(began + down);
                    let restarted = cluster.restart_node(node);
                    cluster.set_lock_mode(mode);
                    format!(
                        "crash node {node} for {down:?}: stop {stopped:?}, restart {restarted:?}"
                    )
                }
                Fault::PartitionLeader { group, cut } => match cluster.leader_of_group(group) {
                    Some(leader) => {
                        let others: Vec<u64> = cluster
                            .node_ids()
                            .iter()
                            .copied()
                            .filter(|n| *n != leader)
                            .collect();
                        cluster.network().partition(&[leader], &others);
                        sleep_until(began + cut);
                        cluster.network().heal();
                        format!("partition leader {leader} of group {group} for {cut:?}")
                    }
                    None => format!("partition group {group}: no leader, skipped"),
                },
                Fault::TransferLeader { group, to } => {
                    let r = cluster.transfer_leader(group, to, Duration::from_secs(2));
                    format!("transfer group {group} to {to}: {r:?}")
                }
            };
            log.push(format!("{:>6} ms {line}", began.as_millis()));
        }
        cluster.network().heal();
        log
    }
}

impl std::fmt::Display for FaultSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (at, fault) in &self.events {
            writeln!(f, "  {:>6} ms {fault:?}", at.as_millis())?;
        }
        Ok(())
    }
}
