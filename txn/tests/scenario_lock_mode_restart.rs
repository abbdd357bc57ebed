//! The lock mode set on a running cluster is the cluster's mode: a node that crashes and
//! restarts must come back in it, not in the mode the cluster started with. Otherwise a
//! cluster switched to `Sync` locks quietly takes in-memory locks again on every restarted
//! leader, and a crash loses them.

mod support;

use support::{Layout, TestCluster};
use surge_txn::LockMode;

#[test]
fn a_restarted_node_comes_back_in_the_mode_set_on_the_cluster() {
    let tc = TestCluster::start(Layout::new(2, LockMode::InMemory));
    tc.cluster.set_lock_mode(LockMode::Sync);
    let node = tc.cluster.node_ids()[0];
    tc.cluster.stop_node(node).expect("stop");
    tc.cluster.restart_node(node).expect("restart");
    for status in tc.node_statuses() {
        assert_eq!(
            status.lock_mode,
            LockMode::Sync,
            "node {} after node {node} restarted",
            status.node
        );
    }
}
