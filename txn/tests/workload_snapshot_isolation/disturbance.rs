//! What runs against the clients: network faults (on the clients' link and between the
//! nodes) and region changes without pause.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use surge_raft_lite::NetFaults;
use surge_txn::rpc::META_REGION_ID;

use super::recorder::Run;
use crate::support::{ChangeKind, LinkFaults, LossyRouter, SplitMix64, region_change};

/// The clients' link in calm times: a few faults.
pub(crate) fn calm_link() -> LinkFaults {
    LinkFaults {
        drop_request: 3,
        drop_reply: 6,
        garble_reply: 2,
        late: 2,
        delay: 30,
        max_delay: Duration::from_millis(20),
    }
}

/// Raft messages between the nodes: 5-20 % lost, the rest delayed by up to 2-15 ms.
#[allow(clippy::field_reassign_with_default)] // set field by field: no struct literal of a
// type whose crate may make it `#[non_exhaustive]`
pub(crate) fn node_link_faults(rng: &mut SplitMix64) -> NetFaults {
    let mut f = NetFaults::default();
    f.drop_pct = u32::try_from(rng.range(5, 20)).unwrap_or(5);
    f.max_delay = Duration::from_millis(rng.range(2, 15));
    f
}

/// Network faults until the run stops, one at a time with calm in between; returns a line
/// per fault.
pub(crate) fn fault_loop(run: &Run<'_>, link: &LossyRouter, mut rng: SplitMix64) -> Vec<String> {
    let c = run.cluster;
    let started = Instant::now();
    let mut log = Vec::new();
    let sleep = |ms: u64| {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until && !run.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    while !run.stop.load(Ordering::Relaxed) {
        link.set(calm_link());
        sleep(rng.range(100, 400));
        let at = started.elapsed().as_millis();
        let hold = rng.range(200, 700);
        let line = match rng.below(4) {
            0 => {
                let mut f = calm_link();
                f.drop_request = 30;
                f.drop_reply = 50;
                f.garble_reply = 10;
                f.late = 15;
                f.delay = 150;
                f.max_delay = Duration::from_millis(50);
                link.set(f);
                sleep(hold);
                format!("lossy client link for {hold} ms")
            }
            1 => {
                let f = node_link_faults(&mut rng);
                c.set_faults(f);
                sleep(hold);
                c.set_faults(NetFaults::default());
                format!(
                    "node links drop {}%, delay up to {:?}, for {hold} ms",
                    f.drop_pct, f.max_delay
                )
            }
            2 => {
                let regions = c.regions();
                let group = if regions.is_empty() || rng.chance(20) {
                    META_REGION_ID
                } else {
                    regions[rng.below(regions.len() as u64) as usize].id
                };
                match c.leader_of_group(group) {
                    Some(leader) => {
                        let others: Vec<u64> = c
                            .node_ids()
                            .iter()
                            .copied()
                            .filter(|n| *n != leader)
                            .collect();
                        c.network().partition(&[leader], &others);
                        sleep(hold);
                        c.network().heal();
                        format!("partition leader {leader} of group {group} for {hold} ms")
                    }
                    None => format!("group {group} has no leader: no partition"),
                }
            }
            _ => {
                let nodes = c.node_ids();
                let node = nodes[rng.below(nodes.len() as u64) as usize];
                link.cut(node, true);
                sleep(hold);
                link.cut(node, false);
                format!("client cut off from node {node} for {hold} ms")
            }
        };
        log.push(format!("{at:>6} ms {line}"));
    }
    link.set(LinkFaults::default());
    c.set_faults(NetFaults::default());
    c.network().heal();
    log
}

/// Region changes without pause until the run stops; returns the count of successful
/// splits and merges and a line per change.
pub(crate) fn churn_loop(run: &Run<'_>, mut rng: SplitMix64) -> (u64, u64, Vec<String>) {
    let started = Instant::now();
    let (mut splits, mut merges, mut log) = (0, 0, Vec::new());
    while !run.stop.load(Ordering::Relaxed) {
        let at = started.elapsed().as_millis();
        let began = Instant::now();
        let (kind, ok, line) = region_change(run.cluster, &mut rng, 3, 8);
        let took = began.elapsed().as_millis();
        match (kind, ok) {
            (ChangeKind::Split, true) => splits += 1,
            (ChangeKind::Merge, true) => merges += 1,
            _ => {}
        }
        log.push(format!("{at:>6} ms ({took} ms) {line}"));
        std::thread::sleep(Duration::from_millis(rng.range(20, 120)));
    }
    (splits, merges, log)
}
