//! [`KvService`] and [`NodeRouter`]: the seam between clients and nodes.

use std::sync::Arc;

use surge_raft_lite::NodeId;

use super::request::KvRequest;
use super::response::KvResponse;

/// Why a request did not get an answer from a node at all.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum ServiceError {
    /// The node is down or unreachable.
    #[error("node {node} unavailable: {detail}")]
    Unavailable {
        /// The node.
        node: NodeId,
        /// Why.
        detail: String,
    },
    /// No answer within the deadline (the request may or may not have run).
    #[error("node {node}: no answer within {timeout_ms} ms")]
    Timeout {
        /// The node.
        node: NodeId,
        /// The deadline.
        timeout_ms: u64,
    },
    /// The peer speaks another protocol or sent something undecodable.
    #[error("node {node}: protocol error: {detail}")]
    Protocol {
        /// The node.
        node: NodeId,
        /// What was wrong.
        detail: String,
    },
}

/// What a node offers: every node-side command as a [`KvRequest`] / [`KvResponse`] pair.
/// A node implements it in process ([`crate::KvNode`]); the `surgedb` package puts TCP under
/// it. Implementations may block (a lock wait blocks up to its timeout).
pub trait KvService: Send + Sync {
    /// Handles one request.
    ///
    /// # Errors
    /// [`ServiceError`] when the node could not be asked (down, timeout, protocol).
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError>;
}

/// How to reach the nodes of a cluster: what clients and nodes use to talk to each other.
pub trait NodeRouter: Send + Sync {
    /// Every node id of the cluster.
    fn nodes(&self) -> Vec<NodeId>;

    /// The service of `node`.
    ///
    /// # Errors
    /// [`ServiceError::Unavailable`] if the node is unknown or down.
    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError>;

    /// The node this router's caller runs in, if any (a node's own transaction
    /// coordinator). Default `None`.
    ///
    /// A client gives up at once on [`crate::RegionError::NodeStopping`] from that node
    /// instead of retrying: the node waits for its callers to finish before it stops, and
    /// until it has stopped its peers name it as the region's leader, so a retry would only
    /// come back to it until the client's backoff budget ran out. From another node, the
    /// client retries elsewhere as after `NotLeader` without a hint.
    fn local_node(&self) -> Option<NodeId> {
        None
    }
}
