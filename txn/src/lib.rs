//! Percolator transactions over Raft-replicated regions: where SurgeDB's lower crates meet.
//!
//! `surge-txn` runs optimistic and pessimistic Percolator transactions over key ranges
//! (regions), each replicated by a [`surge_raft_lite`] group on three nodes. Pessimistic
//! locks are written in one of three [`LockMode`]s, changeable at run time: `Sync` (through
//! Raft, reply after apply), `Pipelined` (reply once the leader accepted the proposal) and
//! `InMemory` (only in the region leader's [`surge_lock_table`] table, TiKV 6.0's in-memory
//! pessimistic locks, falling back to pipelined when the table is full or not writable).
//!
//! The crate is built in layers, each a folder, calls going down only:
//! - engine: [`Engine`] and [`MemEngine`], a region's lock / write / default column families;
//! - mvcc and actions: [`Lock`], [`Write`], [`MvccReader`], [`MvccTxn`] and the Percolator
//!   actions ([`prewrite`], [`commit`], [`acquire_pessimistic_lock`], [`check_txn_status`], ...),
//!   pure functions over a snapshot;
//! - region: a data region's replica (latches, the leader's lock table, the Raft state
//!   machine) and its changes: leader transfer, split and merge with in-memory lock migration;
//! - placement: the meta group ([`META_REGION_ID`]): region map and timestamp oracle;
//! - service: [`KvRequest`] / [`KvResponse`], [`KvService`], [`NodeRouter`] and [`KvNode`];
//! - client: [`TxnClient`] and [`Transaction`];
//! - cluster: [`LocalCluster`], N nodes in one process with durable WALs and a faulty network.
//!
//! # Example
//!
//! ```
//! use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, LockMode, TxnClient, TxnError, TxnMode};
//!
//! let dir = tempfile::tempdir()?;
//! let cluster = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(2))?;
//! cluster.set_lock_mode(LockMode::InMemory);
//! let client = TxnClient::new(cluster.router(), ClientConfig::default());
//!
//! let mut t1 = client.begin(TxnMode::Pessimistic)?;
//! t1.put(b"stock", b"9")?; // an in-memory lock on the leader, no Raft write
//! assert_eq!(cluster.counters().lock_raft_bytes, 0);
//!
//! // An optimistic writer of the same key conflicts at prewrite while t1 holds its lock.
//! let mut t2 = client.begin(TxnMode::Optimistic)?;
//! t2.put(b"stock", b"8")?;
//! t1.commit()?;
//! assert!(matches!(t2.commit(), Err(TxnError::WriteConflict { .. })));
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # What this crate is not
//!
//! Not a SQL layer, not a network server (the `surgedb` package puts TCP under
//! [`KvService`]), and not a durable storage engine: a region's data is in memory and rebuilt
//! from its Raft log and snapshots. Regions split and merge on request (not yet by size).
//!
//! # Crate features
//!
//! None.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

mod actions;
mod client;
mod cluster;
mod engine;
mod mvcc;
mod pause;
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
pub use pause::{MAX_PAUSE, PauseGuard, arm_pause, pause_points};
pub use ts::{LOGICAL_BITS, compose_ts, physical_ms};
// client layer re-exports
pub use client::{
    BinlogOptions, BinlogRecoveryReport, TXN_CRASH_ENV, TXN_CRASH_SKIP_ENV, txn_crash_points,
};
pub use client::{
    ClientConfig, ClientCounters, DEFAULT_HOT_AUTO_THRESHOLD, HotChange, HotCounters,
    HotGroupObserver, HotGroupRecord, HotOp, HotOutcome, HotReject, KvPair, Transaction, TxnClient,
    TxnError, TxnMode,
};
/// Hot-row update hints (`commit_on_success`, `rollback_on_fail`, `target_affect_row(n)`),
/// from `surge-hotspot`.
pub use surge_hotspot::Hints as HotHints;
// region, placement, service and cluster layers
pub use cluster::{ClusterConfig, ClusterError, LocalCluster, LocalRouter};
pub use placement::{META_REGION_ID, even_split_keys, initial_regions};
pub use region::{Context, LockMode, NodeCounters, RegionEpoch, RegionError, RegionInfo};
#[doc(hidden)]
pub use region::{PausePoints, region_pause_points};
pub use service::{
    KeyError, KvNode, KvNodeConfig, KvRequest, KvResponse, KvService, LockKey, NodeRouter,
    NodeStatusReport, PROTOCOL_VERSION, RegionStatus, ServiceError, WaitForEdge,
};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
