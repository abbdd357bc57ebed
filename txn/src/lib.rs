//! Percolator transactions over Raft-replicated regions: where SurgeDB's lower crates meet.
//!
//! `surge-txn` combines the four independent SurgeDB crates into a transaction subsystem:
//!
//! - [`surge_lock_table`] keeps pessimistic locks in the region leader's memory (TiKV 6.0's
//!   in-memory pessimistic locks), with fallback to pipelined locking when the region is not
//!   writable or its budget is full;
//! - [`surge_raft_lite`] replicates each region;
//! - [`surge_binlog`] and [`surge_hotspot`] are wired in by later layers (binlog at commit, hot
//!   updates).
//!
//! # What this crate is not
//!
//! It is not a SQL layer, not a network server (that is the `surgedb` package) and not a storage
//! engine: durability comes from the Raft log.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod actions;
mod client;
mod cluster;
mod engine;
mod mvcc;
mod placement;
mod region;
mod service;
mod ts;

// engine layer re-exports
pub use engine::{
    Cf, Engine, EngineError, MemEngine, Modify, Snapshot, WriteBatch, decode_key, encode_key,
    encode_key_with_ts, split_ts,
};
// mvcc re-exports
pub use mvcc::{
    Lock, LockInfo, LockNotFoundReason, LockType, Mutation, MvccError, MvccReader, MvccTxn,
    PessimisticAction, SHORT_VALUE_MAX_LEN, TxnCommitRecord, TxnWrites, Write, WriteType,
};
// actions layer re-exports
pub use actions::*;
pub use ts::{LOGICAL_BITS, compose_ts, physical_ms};
// client layer re-exports
pub use client::{ClientConfig, ClientCounters, KvPair, Transaction, TxnClient, TxnError, TxnMode};
// region, placement, service and cluster layers
pub use cluster::{ClusterConfig, ClusterError, LocalCluster, LocalRouter};
pub use placement::META_REGION_ID;
pub use region::{Context, LockMode, NodeCounters, RegionEpoch, RegionError, RegionInfo};
pub use service::{
    KeyError, KvNode, KvNodeConfig, KvRequest, KvResponse, KvService, LockKey, NodeRouter,
    NodeStatusReport, PROTOCOL_VERSION, RegionStatus, ServiceError, WaitForEdge,
};
