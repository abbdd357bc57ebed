//! In-memory pessimistic lock table for the leader of a Raft region (TiKV 6.0 technique).
//!
//! Work in progress: see the crate README for what is built so far.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
