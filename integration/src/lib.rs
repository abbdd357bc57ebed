//! SurgeDB's command-line tool, node server and TCP client.
//!
//! This package (`surgedb`, not published) holds the `surgedb` command and what it runs:
//! - [`server`]: [`server::NodeProcess`], one node of a cluster (a locked, stamped data
//!   directory, `raft-lite` over a WAL and TCP, the txn crate's `KvNode`, a transaction
//!   coordinator with its binlog in `DIR/binlog`, a client server);
//! - [`wire`]: the client protocol (length-prefixed postcard frames, versioned handshake);
//! - [`Client`], [`RemoteService`] and [`TcpRouter`]: the txn crate's `KvService` and
//!   `NodeRouter` over TCP, with its `TxnClient` on top;
//! - [`local`]: local clusters of node processes (`surgedb cluster start|stop|status`);
//! - [`cli`]: `kv`, `txn FILE`, `cluster status` and `binlog verify`;
//! - [`demo`] and [`scenarios`]: the demo (in-memory pessimistic locks, binlog commit by
//!   rename and hot-row group commit, each through `surge-txn`);
//! - [`bench`](mod@bench): `surgedb bench locks|hotspot|bigtxn`, the experiments with variants side by
//!   side, as a table, JSON and an SVG plot;
//! - [`dump`]: `binlog dump`;
//! - [`sql`]: the SQL layer (catalog, encoding, planning, execution) over `surge-txn`;
//! - [`mysql`]: the MySQL-protocol front end ([`mysql::MysqlServer`]) over a
//!   [`sql::SessionFactory`], which also serves the replica stream to MariaDB replicas;
//! - [`stream`]: the cluster's replica stream (every coordinator's transactions in
//!   commit_ts order, one GTID domain), kept byte-identical by every node.
//!
//! The component crates are re-exported under short names:
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`lock_table`] | `surge-lock-table` | region in-memory pessimistic lock table |
//! | [`raft`] | `surge-raft-lite` | minimal crash-safe Raft |
//! | [`binlog`] | `surge-binlog` | MariaDB-compatible binary log |
//! | [`hotspot`] | `surge-hotspot` | hot-row group commit |
//! | [`txn`] | `surge-txn` | Percolator transactions over Raft regions |
//!
//! # What this package is not
//!
//! It is not a library to build on: depend on the component crates instead. A node's own
//! binlog is not replicated (each node is its own MariaDB primary in its own GTID domain)
//! and the nodes' binlogs are not ordered against each other: the replica stream
//! ([`stream`]) is the one ordered history, and what a MariaDB replica should follow.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bench;
pub mod cli;
mod client;
pub mod demo;
pub mod dump;
pub mod local;
pub mod mysql;
pub mod scenarios;
pub mod server;
pub mod sql;
pub mod stream;
pub mod wire;

pub use client::{
    Client, ClientError, ClientOptions, LeaderMoves, MovedRegion, RemoteConfig, RemoteService,
    RemoteTxn, TcpRouter, Unreached, Welcome, unreached_reason,
};

pub use surge_binlog as binlog;
pub use surge_hotspot as hotspot;
pub use surge_lock_table as lock_table;
pub use surge_raft_lite as raft;
pub use surge_txn as txn;

/// The README's code blocks, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
