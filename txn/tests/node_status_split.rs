//! `NodeStatus` while a split applies. The split is applied on the node's Raft driver
//! thread, which then adds the child to the node's region map (its write lock); a status
//! report asks that same thread for each region's Raft status. A report that held the map's
//! read lock while it asked would wait for the driver while the driver waited for it: the
//! node would hang for good (every later request needing the map with it).
//!
//! The test parks the driver at the point where the split's child is about to enter the
//! map, sends a status request meanwhile (it reads the map and asks the parked driver), then
//! lets the driver go on: both must finish.

use std::sync::mpsc;
use std::time::Duration;

mod support;

use surge_txn::LockMode;
use surge_txn::region_pause_points::SPLIT_CHILD_BEFORE_HOST;
use surge_txn::rpc::{KvRequest, KvResponse};

/// Longest a test waits for a thread to reach its pause point, or for a reply.
const WAIT: Duration = Duration::from_secs(10);

#[test]
fn node_status_during_a_split_apply_does_not_hang_the_node() {
    let dir = tempfile::tempdir().expect("dir");
    let c = support::one_region_cluster(dir.path(), LockMode::InMemory);
    let region = c.region_of(b"\x10").expect("region");
    let leader = c.leader_of_group(region.id).expect("leader");
    let node = c.node(leader).expect("leader node");
    let pause = node.pause_points();
    pause.arm(SPLIT_CHILD_BEFORE_HOST);

    let (split_tx, split_rx) = mpsc::channel();
    let splitter = node.clone();
    std::thread::spawn(move || {
        let r = splitter.handle(KvRequest::SplitRegion {
            region_id: region.id,
            split_key: Some(b"\x80".to_vec()),
        });
        let _ = split_tx.send(r);
    });
    assert!(
        pause.wait_parked(SPLIT_CHILD_BEFORE_HOST, WAIT),
        "the split's apply never reached its child's hosting"
    );

    let (status_tx, status_rx) = mpsc::channel();
    let reporter = node.clone();
    std::thread::spawn(move || {
        let _ = status_tx.send(reporter.handle(KvRequest::NodeStatus));
    });
    // Let the report read the region map and ask the (parked) driver for the Raft status.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        pause.release(SPLIT_CHILD_BEFORE_HOST),
        "the split's apply gave up its pause before the test released it"
    );

    let status = status_rx.recv_timeout(WAIT);
    let split = split_rx.recv_timeout(WAIT);
    if status.is_err() || split.is_err() {
        // The node's threads are stuck for good: dropping the cluster (which waits for them
        // to let go of the Raft driver) would hang the test instead of failing it.
        std::mem::forget(c);
        panic!(
            "the node hung: NodeStatus answered {}, the split answered {} within {WAIT:?}",
            status.is_ok(),
            split.is_ok()
        );
    }
    match status.expect("status") {
        KvResponse::Status(s) => assert!(
            s.regions.iter().any(|r| r.region.id == region.id),
            "the report lists the parent: {s:?}"
        ),
        other => panic!("status: {other:?}"),
    }
    match split.expect("split") {
        KvResponse::RegionsChanged { regions, .. } => {
            assert_eq!(regions.len(), 2, "parent and child: {regions:?}");
        }
        other => panic!("split: {other:?}"),
    }
    // The node still serves: a second report lists both regions.
    match node.handle(KvRequest::NodeStatus) {
        KvResponse::Status(s) => assert!(s.regions.len() >= 2, "both regions: {s:?}"),
        other => panic!("status: {other:?}"),
    }
}
