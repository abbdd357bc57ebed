//! [`LocalRouter`]: the in-process [`NodeRouter`] of a [`crate::LocalCluster`].

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use surge_raft_lite::NodeId;

use crate::service::{KvNode, KvService, NodeRouter, ServiceError};

/// Routes requests to the running nodes of a local cluster; a stopped node is
/// `Unavailable`.
#[derive(Debug, Default)]
pub struct LocalRouter {
    nodes: RwLock<BTreeMap<NodeId, Option<Arc<KvNode>>>>,
}

impl LocalRouter {
    pub(crate) fn set(&self, id: NodeId, node: Option<Arc<KvNode>>) {
        self.nodes.write().insert(id, node);
    }

    pub(crate) fn get(&self, id: NodeId) -> Option<Arc<KvNode>> {
        self.nodes.read().get(&id).cloned().flatten()
    }
}

impl NodeRouter for LocalRouter {
    fn nodes(&self) -> Vec<NodeId> {
        self.nodes.read().keys().copied().collect()
    }

    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError> {
        match self.get(node) {
            Some(n) if !n.is_stopped() => Ok(n),
            _ => Err(ServiceError::Unavailable {
                node,
                detail: "node stopped".into(),
            }),
        }
    }
}
