//! [`LocalFirstRouter`]: the router a node's coordinator uses: its own node in process,
//! the others over TCP.

use std::sync::Arc;

use surge_raft_lite::NodeId;
use surge_txn::{
    KvNode, ServiceError,
    rpc::{KvService, NodeRouter},
};

use crate::client::TcpRouter;

/// Reaches this node's [`KvNode`] by a direct call and every other node through the
/// [`TcpRouter`] the node already uses for its peers (the same routing a `Client` uses).
/// Requests to its own regions skip a TCP round trip and a connection thread.
pub(crate) struct LocalFirstRouter {
    me: NodeId,
    local: Arc<KvNode>,
    remote: Arc<TcpRouter>,
}

impl LocalFirstRouter {
    /// Node `me` in process, the rest of `remote` over TCP.
    pub(crate) fn new(me: NodeId, local: Arc<KvNode>, remote: Arc<TcpRouter>) -> Self {
        LocalFirstRouter { me, local, remote }
    }
}

impl NodeRouter for LocalFirstRouter {
    fn nodes(&self) -> Vec<NodeId> {
        self.remote.nodes()
    }

    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError> {
        if node == self.me {
            Ok(self.local.clone())
        } else {
            self.remote.service(node)
        }
    }

    /// This node: the coordinator gives up at once when its own node says it is stopping
    /// (the node's shutdown waits for the coordinator's sessions).
    fn local_node(&self) -> Option<NodeId> {
        Some(self.me)
    }
}
