//! The config structs' `Default` values leave the one setting that has no sensible default
//! unset (a cluster's directory, a node's id): using them unchanged is refused, naming the
//! setting, instead of running somewhere unintended.

use std::sync::Arc;

use surge_raft_lite::{MemLogStore, MemNetwork, Node as RaftNode, NodeOptions};
use surge_txn::{
    ClusterConfig, ClusterError, KvNode, KvNodeConfig, LocalCluster, LocalRouter, ServiceError,
};

/// Before, `ClusterConfig::default()` started a cluster with its WALs in `./node-1` ... of
/// the current directory.
#[test]
fn a_cluster_without_a_directory_or_nodes_is_refused() {
    let no_dir = LocalCluster::start(ClusterConfig::default().with_regions(1));
    assert!(
        matches!(
            no_dir,
            Err(ClusterError::InvalidConfig { field: "dir", .. })
        ),
        "{:?}",
        no_dir.map(|c| c.node_ids().to_vec())
    );
    let dir = tempfile::tempdir().expect("dir");
    let no_nodes = LocalCluster::start(ClusterConfig::new(dir.path()).with_nodes(0));
    assert!(
        matches!(
            no_nodes,
            Err(ClusterError::InvalidConfig { field: "nodes", .. })
        ),
        "{:?}",
        no_nodes.map(|c| c.node_ids().to_vec())
    );
}

/// Before, a `KvNode` configured as node 0 (the default) started on raft node 1 and served
/// under the wrong id.
#[test]
fn a_kv_node_configured_for_another_raft_node_is_refused() {
    let net = MemNetwork::new(1);
    let raft = RaftNode::start(NodeOptions::new(1), Box::new(MemLogStore::new()), net)
        .expect("raft node 1");
    let started = KvNode::start(
        KvNodeConfig::default(),
        raft,
        Vec::new(),
        vec![1],
        Vec::new(),
        Arc::new(LocalRouter::default()),
    );
    match started {
        Err(ServiceError::Unavailable { node: 0, detail }) => {
            assert!(detail.contains("raft node 1"), "{detail}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(node) => panic!("started as node {}", node.id()),
    }
}
