//! Local multi-process clusters: what `surgedb cluster start|stop|status` manage, described
//! by a [`ClusterManifest`] in the cluster directory.

mod local_cluster;
mod manifest;
mod process;

pub use local_cluster::{
    LocalClusterError, NodeStart, StartOptions, log_tail, restart_node, start, stop, stop_node,
};
pub use manifest::{ClusterManifest, MANIFEST_FILE, ManifestError, ManifestNode};
pub use process::{is_alive, is_node_process, signal};
