//! Local multi-process clusters: what `surgedb cluster start|stop|status` manage, described
//! by a [`ClusterManifest`] in the cluster directory.

mod local_cluster;
mod manifest;
mod process;
mod replica;

pub use local_cluster::{
    LocalClusterError, NodeStart, StartOptions, log_tail, restart_node, start, stop, stop_node,
};
pub use manifest::{ClusterManifest, MANIFEST_FILE, ManifestError, ManifestNode};
pub use process::{cpu_seconds, is_alive, is_node_process, signal};
pub use replica::{
    KV_TABLE_DDL, REPLICA_FILE, REPLICA_SERVER_ID, ReplicaError, ReplicaInfo,
    connect as connect_replica, replica_dir, running_replica, slave_status, start_replica,
    stop_replica,
};
