//! The node protocol: every node-side command as a [`KvRequest`] / [`KvResponse`] value, the
//! [`KvService`] a node serves them through and the [`NodeRouter`] that finds a node's
//! service, plus the region layout a cluster starts with.
//!
//! For transport implementers and those who assemble [`KvNode`](crate::KvNode)s themselves
//! (the `surgedb` package carries these values over TCP and starts nodes in processes of their
//! own). A [`TxnClient`](crate::TxnClient) user needs none of it beyond handing the client a
//! router ([`LocalCluster::router`](crate::LocalCluster::router) gives one).
//!
//! The values are serde types whose encoding is versioned by [`PROTOCOL_VERSION`].

pub use crate::placement::{META_REGION_ID, even_split_keys, initial_regions};
pub use crate::region::Context;
pub use crate::service::{
    KvRequest, KvResponse, KvService, LockKey, NodeRouter, NodeStatusReport, PROTOCOL_VERSION,
    RegionStatus,
};
