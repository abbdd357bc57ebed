//! [`BenchTarget`]: the cluster a benchmark runs against, in this process or over TCP.

use std::time::Duration;

use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, LockMode, NodeCounters, TxnClient, rpc::NodeRouter,
};

use surge_txn::workload::WorkloadCluster;

use super::BenchError;
use crate::{Client, ClientOptions};

/// Where a benchmark's transactions go.
#[derive(Debug)]
pub enum BenchTarget {
    /// A 3-node [`LocalCluster`] in a temporary directory of this process.
    Embedded {
        /// The cluster (dropped before its directory).
        cluster: Box<LocalCluster>,
        /// Its directory, deleted when dropped.
        dir: tempfile::TempDir,
    },
    /// A running cluster of node processes.
    Remote {
        /// The TCP client.
        client: Client,
        /// The addresses it was given.
        addrs: Vec<String>,
    },
}

impl BenchTarget {
    /// Starts a 3-node cluster in this process (16 regions, durable WALs in a temporary
    /// directory).
    ///
    /// # Errors
    /// [`BenchError::Setup`] if the directory or the cluster cannot be made.
    pub fn embedded() -> Result<BenchTarget, BenchError> {
        let dir = tempfile::tempdir().map_err(|e| BenchError::Setup(e.to_string()))?;
        let cluster = LocalCluster::start(ClusterConfig::new(dir.path()))
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        Ok(BenchTarget::Embedded {
            cluster: Box::new(cluster),
            dir,
        })
    }

    /// Connects to the cluster of `addrs` and waits (up to 60 s) until it is ready.
    ///
    /// # Errors
    /// [`BenchError::Setup`] if no node answers or the cluster is not ready.
    pub fn remote(addrs: &[String]) -> Result<BenchTarget, BenchError> {
        let client = Client::connect(addrs, ClientOptions::default())
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        client
            .wait_ready(Duration::from_secs(60))
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        Ok(BenchTarget::Remote {
            client,
            addrs: addrs.to_vec(),
        })
    }

    /// What the target is, for the report's header.
    pub fn describe(&self) -> String {
        match self {
            BenchTarget::Embedded { .. } => {
                "embedded: 3 nodes in this process (surge-txn LocalCluster), 16 regions x 3 \
                 replicas, durable WALs"
                    .into()
            }
            BenchTarget::Remote { client, addrs } => format!(
                "{} node processes over TCP (cluster {}, {}), 16 regions x 3 replicas",
                client.router().nodes().len(),
                client.cluster_id(),
                addrs.join(",")
            ),
        }
    }

    /// A transactional client with `config`.
    pub fn txn_client(&self, config: ClientConfig) -> TxnClient {
        match self {
            BenchTarget::Embedded { cluster, .. } => TxnClient::new(cluster.router(), config),
            BenchTarget::Remote { client, .. } => TxnClient::new(client.router(), config),
        }
    }

    /// Sets the pessimistic lock mode on every node.
    ///
    /// # Errors
    /// [`BenchError::Cluster`] if a node could not be told.
    pub fn set_lock_mode(&self, mode: LockMode) -> Result<(), BenchError> {
        match self {
            BenchTarget::Embedded { cluster, .. } => {
                cluster.set_lock_mode(mode);
                Ok(())
            }
            BenchTarget::Remote { client, .. } => client
                .set_lock_mode(mode)
                .map_err(|e| BenchError::Cluster(e.to_string())),
        }
    }

    /// The sum of every reachable node's counters.
    pub fn counters(&self) -> NodeCounters {
        match self {
            BenchTarget::Embedded { cluster, .. } => cluster.counters(),
            BenchTarget::Remote { client, .. } => client
                .router()
                .nodes()
                .into_iter()
                .filter_map(|n| client.node_status(n).ok())
                .fold(NodeCounters::default(), |sum, s| sum.add(&s.counters)),
        }
    }
}

impl WorkloadCluster for BenchTarget {
    fn set_lock_mode(&self, mode: LockMode) -> Result<(), String> {
        BenchTarget::set_lock_mode(self, mode).map_err(|e| e.to_string())
    }

    fn counters(&self) -> NodeCounters {
        BenchTarget::counters(self)
    }
}
