//! SurgeDB's command-line tool and the scenarios it runs.
//!
//! This package (`surgedb`, not published) holds the `surgedb` command (`demo` and
//! `binlog dump`), the scenarios the demo runs (each technique on its own crate, with real
//! threads, files and `fdatasync`) and their tests.
//!
//! What exists today is the four component crates, which this library re-exports under short
//! names so that tools and tests need one dependency:
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`lock_table`] | `surge-lock-table` | region in-memory pessimistic lock table |
//! | [`raft`] | `surge-raft-lite` | minimal crash-safe Raft |
//! | [`binlog`] | `surge-binlog` | MariaDB-compatible binary log |
//! | [`hotspot`] | `surge-hotspot` | hot-row group commit |
//! | [`txn`] | `surge-txn` | transactions over the four (being built: no API yet) |
//!
//! # What this package is not (yet)
//!
//! It is not the assembled transactional store: that store (`surge-txn`: Percolator
//! transactions over Raft regions, with the binlog and hot-row updates) is being built, and a
//! node server, client and `surgedb bench` will follow it. The demo's scenarios wire the
//! crates together by hand. It is not a library to build on either: depend on the component
//! crates instead.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod cli;
mod client;
pub mod demo;
pub mod dump;
pub mod local;
mod regions;
pub mod scenarios;
pub mod server;
pub mod wire;

pub use client::{
    Client, ClientError, ClientOptions, RemoteConfig, RemoteService, TcpRouter, Welcome,
};
pub use regions::{INITIAL_REGIONS, initial_regions};

pub use surge_binlog as binlog;
pub use surge_hotspot as hotspot;
pub use surge_lock_table as lock_table;
pub use surge_raft_lite as raft;
pub use surge_txn as txn;
