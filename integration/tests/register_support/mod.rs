//! The txn crate's register history and linearizability checker, copied (see each file).
#![allow(dead_code)] // Shared by test files that use different parts.

pub mod history;
pub mod linearizability;
