//! The cluster layer: [`LocalCluster`], N nodes in one process for tests, benches and demos.

mod config;
mod local_cluster;
mod router;

pub use config::{ClusterConfig, EngineKind};
pub use local_cluster::{ClusterError, LocalCluster};
pub use router::LocalRouter;
