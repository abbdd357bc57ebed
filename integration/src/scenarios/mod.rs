//! The scenarios that `surgedb demo` runs, each returning a report that prints what it
//! shows and that the integration tests check.

mod big_txn;
mod cluster;
mod error;
mod hot_row;
mod key_text;
mod locks;
mod table;

pub use big_txn::{BigTxnReport, BigTxnRun, run as run_big_txn, verify_with_mariadb};
pub use cluster::{ClusterReport, PrewriteOutcome, run as run_cluster};
pub use error::ScenarioError;
pub use hot_row::{HotRowPoint, HotRowReport, run as run_hot_row};
use key_text::key_text;
pub use locks::{LocksReport, run as run_locks};
