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
//! - engine: [`Engine`], a region's lock / write / default column families: [`MemEngine`] in
//!   memory, or a region's view ([`FjallRegion`]) of its node's disk engine ([`FjallEngine`],
//!   one fjall database per node, the default of [`LocalCluster`]);
//! - mvcc and actions: the Percolator actions ([`actions::prewrite`], [`actions::commit`],
//!   [`actions::acquire_pessimistic_lock`], ...), pure functions over a snapshot;
//! - region: a data region's replica (latches, the leader's lock table, the Raft state
//!   machine) and its changes: leader transfer, split and merge with in-memory lock migration;
//! - placement: the meta group ([`rpc::META_REGION_ID`]): region map and timestamp oracle;
//! - service: [`KvNode`], serving [`rpc::KvRequest`]s;
//! - stream: the layouts of the stream records ([`STREAM_PREFIX`], [`encode_stream_record`]);
//! - client: [`TxnClient`] and [`Transaction`];
//! - cluster: [`LocalCluster`], N nodes in one process with durable WALs and a faulty network.
//!
//! # What is where
//!
//! The crate root holds what an application uses: the client ([`TxnClient`],
//! [`Transaction`], [`TxnMode`], [`ClientConfig`], [`TxnError`] and the errors it carries),
//! hot-row updates ([`HotOp`], [`HotHints`], and over any row bytes [`RowUpdate`] with
//! [`TxnClient::hot_update_row`]), the binlog row events a SQL layer logs for its own tables
//! ([`Transaction::binlog_rows`] with [`BinlogTable`] and [`SqlRowChange`],
//! [`Transaction::binlog_query`]), the replication stream every coordinator with a binlog
//! writes into the store and any client reads back in commit_ts order
//! ([`TxnClient::stream_resolved_ts`], [`TxnClient::stream_scan`], [`StreamTxn`],
//! [`StreamGroup`], [`StreamOptions`]), the cluster views it shows ([`TxnClient::regions_in_range`],
//! [`TxnClient::set_lock_mode`], [`TxnClient::cluster_counters`]), the in-process cluster
//! ([`LocalCluster`]) and its parts ([`KvNode`], [`LockMode`], [`Engine`], [`MemEngine`], [`FjallEngine`]).
//! Three modules hold the rest, each for its own reader:
//! - [`rpc`]: the node protocol ([`rpc::KvRequest`], [`rpc::KvService`], [`rpc::NodeRouter`]),
//!   for transport implementers and those who start nodes themselves;
//! - [`actions`]: the Percolator actions and the MVCC types they work on, for tests and reuse
//!   of the storage side;
//! - [`codec`]: key, timestamp and record encodings, for tools that read engine data.
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
//! - `serde`: `Serialize` and `Deserialize` for the values an application hands the client
//!   and gets back, to carry them over a transport of its own: [`TxnMode`], [`HotOp`],
//!   [`HotOutcome`], [`HotRowOutcome`] and [`HotHints`]. Off by default. The node protocol ([`rpc`]), the MVCC
//!   records and the errors derive them always, since nodes replicate and send them.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod actions;
mod client;
mod cluster;
pub mod codec;
mod engine;
mod mvcc;
mod placement;
mod region;
pub mod rpc;
mod service;
mod stream;
mod ts;
mod wire_bytes;
// The write-only benchmark's workload, shared by the `write_only` example and `surgedb
// bench locks`. Not an API.
#[doc(hidden)]
pub mod workload;

pub use client::{
    BinlogOptions, BinlogRecoveryReport, BinlogRow, ClientConfig, ClientCounters,
    DEFAULT_HOT_AUTO_THRESHOLD, DEFAULT_HOT_SPIN_YIELDS, GcHoldOptions, GcReport, HotChange,
    HotCounters, HotGroupObserver, HotGroupRecord, HotOp, HotOutcome, HotReject, HotRowChange,
    HotRowOutcome, KvPair, NodeStatusResult, RegionView, RowUpdate, StreamCollectReport,
    Transaction, TxnClient, TxnError, TxnMode,
};
pub use cluster::{ClusterConfig, ClusterError, EngineKind, LocalCluster, LocalRouter};
pub use engine::{
    Cf, ENGINE_CRASH_ENV, ENGINE_CRASH_SKIP_ENV, Engine, EngineError, EngineIdentity, EntriesView,
    EntryVisitor, FjallEngine, FjallOptions, FjallRegion, MemEngine, Modify, RegionRecord,
    SNAPSHOT_STREAM_MAX_PIECE, SNAPSHOT_STREAM_MAX_RECORD, Snapshot, SnapshotStreamEntry,
    SnapshotStreamError, SnapshotStreamHeader, SnapshotStreamReader, SnapshotStreamWriter,
    WriteBatch, engine_crash_points,
};
pub use stream::{
    STREAM_PREFIX, STREAM_RECORD_VERSION, StreamDecodeError, StreamGroup, StreamGroupKind,
    StreamOptions, StreamPosition, StreamTxn, StreamWatermark, decode_stream_record,
    encode_stream_record, stream_events_from_cache_bytes,
};
/// The binlog's SQL row types the caller builds row events from (`surge-binlog`).
pub use surge_binlog::{
    BinlogCharset, BinlogColumn, BinlogDate, BinlogDateTime, BinlogTable, BinlogType, BinlogValue,
    SqlRowChange,
};
/// Hot-row update hints (`commit_on_success`, `rollback_on_fail`, `target_affect_row(n)`),
/// from `surge-hotspot`.
pub use surge_hotspot::Hints as HotHints;
// The errors a `TxnError` carries, and what they carry.
pub use mvcc::{LockInfo, LockNotFoundReason, MvccError};
pub use placement::GcHold;
pub use region::{LockMode, NodeCounters, RegionEpoch, RegionError, RegionInfo};
pub use service::{
    DEFAULT_SPLIT_SIZE, KeyError, KvNode, KvNodeConfig, LeaderEviction, ServiceError, WaitForEdge,
};

// Inside the crate every item keeps its flat root path (`crate::KvRequest`,
// `crate::prewrite`): the modules above group the public docs by reader, not the layering.
pub(crate) use actions::*;
pub(crate) use codec::*;
pub(crate) use rpc::*;

// Crash-test hooks: the environment variables a test sets to kill a committing process at a
// named point (`tests/binlog_crash.rs`, the `surgedb` node tests). Not an API.
#[doc(hidden)]
pub use client::{TXN_CRASH_ENV, TXN_CRASH_SKIP_ENV, txn_crash_points};

// Test hooks: named places where a test parks a thread to force a race in an exact order
// (`tests/lock_migration_races.rs`, `tests/locking_read_max_ts.rs`). Inert unless armed. Not an API.
#[doc(hidden)]
pub use region::{PausePoints, region_pause_points};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
