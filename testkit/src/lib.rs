//! Test support shared by the SurgeDB crates' tests, so that each helper exists once:
//!
//! - [`History`] records the operations of a per-key register workload (write, read,
//!   compare-and-set) with invocation and completion times from many threads, and
//!   [`check_registers`] decides whether such a history is linearizable (used by raft-lite's
//!   simulation, the txn crate's register workloads and `surgedb`'s process tests under
//!   faults);
//! - [`TxnHistory`] records multi-key transactions (their timestamps, what each read saw,
//!   what each wrote, how each commit ended) and [`check_snapshot_isolation`] decides whether
//!   such a history is consistent with snapshot isolation over the store's timestamps (the
//!   txn crate's region-change workloads);
//! - [`SplitMix64`], the seeded generator of the randomized tests;
//! - [`CrashChild`] re-runs the test binary on one test as a child process, waits (bounded)
//!   for it to reach its crash point, then kills it with SIGKILL and reaps it (the crash
//!   tests of raft-lite, the binlog and the txn crate);
//! - [`mariadb_binlog::verify`] runs MariaDB's own binlog reader over a test's files;
//! - [`mariadb_server::MariadbServer`] starts a private `mariadbd` on a loopback port for the
//!   tests that replay a binlog into a real server (the binlog and txn crates).
//!
//! ```
//! use surge_testkit::{History, Op, OpKind, check_registers};
//!
//! let history = History::new();
//! let op = |kind, invoke, complete| Op { key: 1, kind, client: 0, invoke, complete };
//! history.record(op(OpKind::Write(7), 0, Some(2)));
//! history.record(op(OpKind::Read(7), 3, Some(4)));
//! assert!(check_registers(&history.ops()).is_ok());
//! // A read of the old value after the write completed: not linearizable.
//! history.record(op(OpKind::Read(0), 5, Some(6)));
//! assert!(check_registers(&history.ops()).is_err());
//! ```
//!
//! What it is not: a test framework, or anything the published crates depend on (it is
//! `publish = false`; only dev-dependencies name it).

mod crash_child;
mod history;
mod linearizability;
pub mod mariadb_binlog;
pub mod mariadb_server;
mod rng;
mod snapshot_isolation;
#[cfg(test)]
mod snapshot_isolation_test;
mod txn_history;

pub use crash_child::{CrashChild, REACH_DEADLINE};
pub use history::{History, Op, OpKind};
pub use linearizability::check_registers;
pub use rng::SplitMix64;
pub use snapshot_isolation::{SiSummary, check_snapshot_isolation};
pub use txn_history::{KeyRead, ReadKind, TxnHistory, TxnOutcome, TxnRecord};
