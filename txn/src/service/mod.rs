//! The service layer: every node-side command as a [`KvRequest`] / [`KvResponse`] value, the
//! [`KvService`] trait a node implements, and the [`KvNode`] that implements it.

mod admin_handlers;
mod evict;
mod kv_service;
mod merge_driver;
mod meta_handlers;
mod node;
mod node_loop;
mod region_handlers;
mod region_heartbeat;
mod request;
mod response;
mod split_checker;

pub use evict::LeaderEviction;
pub use kv_service::{KvService, NodeRouter, ServiceError};
pub use node::{DEFAULT_SPLIT_SIZE, KvNode, KvNodeConfig};
pub(crate) use region_handlers::ONE_PC_MAX_DRIFT_MS;
pub use request::{KvRequest, LockKey, PROTOCOL_VERSION};
pub use response::{KeyError, KvResponse, NodeStatusReport, RegionStatus, WaitForEdge};
