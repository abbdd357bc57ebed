//! [`ClusterAdmin`]: what the SQL layer asks of the cluster beyond transactions: the lock
//! mode (`set config`, `show config`) and the region map (`SHOW TABLE t REGIONS`).

use surge_txn::{LocalCluster, LockMode, TxnClient};

/// One region as `SHOW TABLE t REGIONS` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionView {
    /// The region id.
    pub id: u64,
    /// First key (inclusive).
    pub start: Vec<u8>,
    /// End key (exclusive; empty: unbounded).
    pub end: Vec<u8>,
    /// The leader's node id, if one is known.
    pub leader: Option<u64>,
    /// The nodes holding a replica.
    pub peers: Vec<u64>,
}

/// Cluster-wide controls, implemented by whoever runs the nodes.
pub trait ClusterAdmin: Send + Sync {
    /// Sets the pessimistic lock mode on every node.
    ///
    /// # Errors
    /// Why it could not be set, in words.
    fn set_lock_mode(&self, mode: LockMode) -> Result<(), String>;

    /// The lock mode last set, if known.
    fn lock_mode(&self) -> Option<LockMode>;

    /// Every data region.
    ///
    /// # Errors
    /// Why the map could not be read, in words.
    fn regions(&self) -> Result<Vec<RegionView>, String>;
}

/// The in-process cluster of tests and the demo.
#[derive(Debug)]
pub struct LocalClusterAdmin {
    cluster: std::sync::Arc<LocalCluster>,
    mode: parking_lot::Mutex<Option<LockMode>>,
}

impl LocalClusterAdmin {
    /// Controls over `cluster`.
    pub fn new(cluster: std::sync::Arc<LocalCluster>) -> LocalClusterAdmin {
        LocalClusterAdmin {
            cluster,
            mode: parking_lot::Mutex::new(None),
        }
    }
}

impl ClusterAdmin for LocalClusterAdmin {
    fn set_lock_mode(&self, mode: LockMode) -> Result<(), String> {
        self.cluster.set_lock_mode(mode);
        *self.mode.lock() = Some(mode);
        Ok(())
    }

    fn lock_mode(&self) -> Option<LockMode> {
        *self.mode.lock()
    }

    fn regions(&self) -> Result<Vec<RegionView>, String> {
        Ok(self
            .cluster
            .regions()
            .into_iter()
            .map(|r| RegionView {
                id: r.id,
                leader: self.cluster.leader_of_group(r.id),
                start: r.start,
                end: r.end,
                peers: r.peers,
            })
            .collect())
    }
}

/// Cluster controls through the transaction client itself: the lock mode is sent to every
/// node the client's router knows, the region map read from the meta group. What an engine
/// uses when its [`crate::sql::SqlConfig`] names no other.
#[derive(Debug, Clone)]
pub struct ClientAdmin {
    client: TxnClient,
}

impl ClientAdmin {
    /// Controls through `client`.
    pub fn new(client: TxnClient) -> ClientAdmin {
        ClientAdmin { client }
    }
}

impl ClusterAdmin for ClientAdmin {
    fn set_lock_mode(&self, mode: LockMode) -> Result<(), String> {
        self.client.set_lock_mode(mode).map_err(|e| e.to_string())
    }

    fn lock_mode(&self) -> Option<LockMode> {
        // The nodes agree unless a `set_lock_mode` reached only some: then there is no one
        // mode to show.
        let modes = self.client.lock_modes();
        let first = modes.first()?.1;
        modes.iter().all(|(_, m)| *m == first).then_some(first)
    }

    fn regions(&self) -> Result<Vec<RegionView>, String> {
        let regions = self
            .client
            .regions_in_range(b"", None)
            .map_err(|e| e.to_string())?;
        Ok(regions
            .into_iter()
            .map(|r| RegionView {
                id: r.id,
                start: r.start,
                end: r.end,
                leader: r.leader,
                peers: r.peers,
            })
            .collect())
    }
}
