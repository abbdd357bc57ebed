//! A MariaDB-compatible binary log with group commit and large-transaction commit by rename.
//!
//! Work in progress: see the crate README for what is built so far.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]
