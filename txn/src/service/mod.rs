//! The service layer: every node-side command as a [`KvRequest`] / [`KvResponse`] value, the
//! [`KvService`] trait a node implements, and the [`KvNode`] that implements it.

mod region_error;
mod region_info;
mod request;
mod response;
mod service;

pub use region_error::RegionError;
pub use region_info::{Context, LockMode, RegionEpoch, RegionInfo};
pub use request::{KvRequest, LockKey, PROTOCOL_VERSION};
pub use response::{
    KeyError, KvResponse, NodeCounters, NodeStatusReport, RegionStatus, WaitForEdge,
};
pub use service::{KvService, NodeRouter, ServiceError};
