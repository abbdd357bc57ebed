//! [`TcpRouter`]: a [`NodeRouter`] whose services are [`RemoteService`]s.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use surge_raft_lite::NodeId;
use surge_txn::{
    ServiceError,
    rpc::{KvService, NodeRouter},
};

use super::remote_service::{RemoteConfig, RemoteService};

/// Reaches the nodes of a cluster over TCP: one [`RemoteService`] (with its connection
/// pool) per node. Nodes use it to call each other (the meta leader's oracle and deadlock
/// detector); clients use it under [`surge_txn::TxnClient`].
#[derive(Debug)]
pub struct TcpRouter {
    nodes: RwLock<BTreeMap<NodeId, Arc<RemoteService>>>,
}

impl TcpRouter {
    /// A router to `peers` (node id and client address), each reached with `config`.
    ///
    /// # Errors
    /// [`ServiceError::Unavailable`] if an address does not resolve.
    pub fn new(
        peers: impl IntoIterator<Item = (NodeId, String)>,
        config: &RemoteConfig,
    ) -> Result<TcpRouter, ServiceError> {
        let mut nodes = BTreeMap::new();
        for (id, addr) in peers {
            let sock = RemoteService::resolve(id, &addr)?;
            nodes.insert(id, Arc::new(RemoteService::new(id, sock, config.clone())));
        }
        Ok(TcpRouter {
            nodes: RwLock::new(nodes),
        })
    }

    /// The remote service of `node`, if known.
    pub fn remote(&self, node: NodeId) -> Option<Arc<RemoteService>> {
        self.nodes.read().get(&node).cloned()
    }
}

impl NodeRouter for TcpRouter {
    fn nodes(&self) -> Vec<NodeId> {
        self.nodes.read().keys().copied().collect()
    }

    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError> {
        match self.remote(node) {
            Some(s) => Ok(s),
            None => Err(ServiceError::Unavailable {
                node,
                detail: "no such node in the cluster".into(),
            }),
        }
    }
}
