//! Percolator transactions over Raft-replicated regions: where SurgeDB's lower crates meet.
//!
//! `surge-txn` is the layer that combines the four independent SurgeDB crates into a transaction
//! subsystem:
//!
//! - [`surge_lock_table`] keeps pessimistic locks in the region leader's memory (TiKV 6.0's
//!   in-memory pessimistic locks), with fallback to pipelined locking when the region is not
//!   writable or its budget is full;
//! - [`surge_raft_lite`] replicates each region;
//! - [`surge_binlog`] records each committed transaction in a MariaDB-compatible binary log, and
//!   commits a large transaction by renaming its spilled cache file into the next binlog file;
//! - [`surge_hotspot`] merges concurrent updates of one hot row into groups, one durable write per
//!   group.
//!
//! # Status
//!
//! This crate is not built yet: it has no public API. The transaction model it will carry
//! (optimistic and pessimistic Percolator transactions with `Sync`, `Pipelined` and `InMemory`
//! lock modes, binlog as the commit decision, hot updates) is described in the workspace's
//! `DESIGN.md`. Until then, use the four lower crates directly.
//!
//! # What this crate is not
//!
//! It is not a SQL layer, not a network server (that is the `surgedb` package) and not a storage
//! engine: durability comes from the Raft log and the binlog.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
