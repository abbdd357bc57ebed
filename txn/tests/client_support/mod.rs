//! Shared setup of the client end-to-end tests: a three-node local cluster with 16 regions
//! split on the first key byte, and clients with short TTLs so lock expiry is quick to test.

#![allow(dead_code)] // each test binary uses its own subset

use std::time::Duration;

use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, TxnClient};

/// A running cluster and the directory holding its WALs (kept alive with it).
pub struct Env {
    pub cluster: LocalCluster,
    pub client: TxnClient,
    _dir: tempfile::TempDir,
}

/// A client configuration with `lock_ttl_ms` locks and fast heartbeats.
pub fn config(lock_ttl_ms: u64) -> ClientConfig {
    ClientConfig::default()
        .with_lock_ttl_ms(lock_ttl_ms)
        .with_heartbeat_interval(Duration::from_millis(100))
}

/// Three nodes, 16 regions, a client with `config`.
pub fn start(config: ClientConfig) -> Env {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = LocalCluster::start(ClusterConfig::new(dir.path())).expect("cluster starts");
    let client = TxnClient::new(cluster.router(), config);
    Env {
        cluster,
        client,
        _dir: dir,
    }
}

impl Env {
    /// Another client of the same cluster (its own cache, counters and heartbeat thread).
    pub fn other_client(&self, config: ClientConfig) -> TxnClient {
        TxnClient::new(self.cluster.router(), config)
    }
}

/// A key in the region of first byte `region * 16` (16 even regions), with a suffix.
pub fn key(region: u8, suffix: &str) -> Vec<u8> {
    let mut k = vec![region.wrapping_mul(16)];
    k.extend_from_slice(suffix.as_bytes());
    k
}
