//! A minimal, crash-safe Raft.
//!
//! Work in progress: see the crate README for what is built so far.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
