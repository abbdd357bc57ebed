//! [`LocalRouter`]: the in-process [`NodeRouter`] of a [`crate::LocalCluster`], with one
//! fault of its own: requests of a chosen kind held back, their callers answered
//! [`ServiceError::Timeout`] (what a TCP caller sees when a reply never comes).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use surge_raft_lite::NodeId;

use crate::service::{KvNode, KvRequest, KvResponse, KvService, NodeRouter, ServiceError};

/// Routes requests to the running nodes of a local cluster; a stopped node is
/// `Unavailable`.
#[derive(Debug, Default)]
pub struct LocalRouter {
    nodes: RwLock<BTreeMap<NodeId, Option<Arc<KvNode>>>>,
    held: Arc<Held>,
}

/// Requests held back by [`LocalRouter::hold`], in the order they were sent.
#[derive(Debug, Default)]
struct Held {
    /// The request kind held ([`KvRequest::name`]), if any.
    kind: RwLock<Option<&'static str>>,
    queue: Mutex<Vec<(NodeId, KvRequest)>>,
}

/// A node's service seen through the router while requests are held.
struct Holding {
    node: Arc<KvNode>,
    held: Arc<Held>,
}

impl KvService for Holding {
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        if *self.held.kind.read() == Some(req.name()) {
            let id = self.node.id();
            self.held.queue.lock().push((id, req));
            return Err(ServiceError::Timeout {
                node: id,
                timeout_ms: 0,
            });
        }
        self.node.call(req)
    }
}

impl LocalRouter {
    pub(crate) fn set(&self, id: NodeId, node: Option<Arc<KvNode>>) {
        self.nodes.write().insert(id, node);
    }

    pub(crate) fn get(&self, id: NodeId) -> Option<Arc<KvNode>> {
        self.nodes.read().get(&id).cloned().flatten()
    }

    /// From now on requests of kind `kind` ([`KvRequest::name`]) sent through the router
    /// are kept, undelivered, and their callers get [`ServiceError::Timeout`]. Calls a node
    /// makes to itself do not go through the router and are not held.
    pub(crate) fn hold(&self, kind: &'static str) {
        *self.held.kind.write() = Some(kind);
    }

    /// How many requests are held now.
    pub(crate) fn held(&self) -> usize {
        self.held.queue.lock().len()
    }

    /// Stops holding and delivers the held requests in the order they were sent (to nodes
    /// still running; replies dropped). Returns how many were delivered.
    pub(crate) fn deliver_held(&self) -> usize {
        *self.held.kind.write() = None;
        let queue = std::mem::take(&mut *self.held.queue.lock());
        let mut delivered = 0;
        for (id, req) in queue {
            if let Some(node) = self.get(id).filter(|n| !n.is_stopped()) {
                let _ = node.handle(req);
                delivered += 1;
            }
        }
        delivered
    }
}

impl NodeRouter for LocalRouter {
    fn nodes(&self) -> Vec<NodeId> {
        self.nodes.read().keys().copied().collect()
    }

    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError> {
        match self.get(node) {
            Some(n) if !n.is_stopped() => {
                if self.held.kind.read().is_some() {
                    Ok(Arc::new(Holding {
                        node: n,
                        held: self.held.clone(),
                    }))
                } else {
                    Ok(n)
                }
            }
            _ => Err(ServiceError::Unavailable {
                node,
                detail: "node stopped".into(),
            }),
        }
    }
}
