//! SurgeDB: the assembled system.
//!
//! This package (`surgedb`, not published) holds the full store built from SurgeDB's crates, the
//! `surgedb` command-line tool, the benchmarks that reproduce the seed documents' experiments, and
//! the cluster and fault tests.
//!
//! The library re-exports every layer under a short name, so that tools and tests written against
//! the assembled system need one dependency:
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`lock_table`] | `surge-lock-table` | region in-memory pessimistic lock table |
//! | [`raft`] | `surge-raft-lite` | minimal crash-safe Raft |
//! | [`binlog`] | `surge-binlog` | MariaDB-compatible binary log |
//! | [`hotspot`] | `surge-hotspot` | hot-row group commit |
//! | [`txn`] | `surge-txn` | transactions over the four |
//!
//! # What this package is not
//!
//! It is not a library to build on: depend on the lower crates instead. The node server, client and
//! `surgedb bench` runs described in the workspace's `DESIGN.md` are not built yet; the `surgedb demo`
//! command says plainly what runs today.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod dump;
pub mod scenarios;

pub use surge_binlog as binlog;
pub use surge_hotspot as hotspot;
pub use surge_lock_table as lock_table;
pub use surge_raft_lite as raft;
pub use surge_txn as txn;
