//! The scenarios that `surgedb demo` runs, each returning a report that prints what it
//! shows and that the integration tests check.
//!
//! The lock and big-transaction scenarios run through `surge-txn` on three-node
//! `LocalCluster`s; [`run_hot_row`] runs on `surge-hotspot` directly (the demo's hot-row
//! section goes through `surge-txn` with [`crate::bench::run_hot_txn`]).

mod big_txn;
mod error;
mod hot_row;
mod key_text;
mod lock_loss;
mod lock_transfer;
mod sql_cluster;
mod sql_transcript;
mod sql_writeups;
mod step_waits;
mod table;

pub use big_txn::{
    BigTxnConfig, BigTxnReport, BigTxnRun, method_name, run as run_big_txn,
    run_method as run_big_txn_method, run_method_on as run_big_txn_method_on, verify_with_mariadb,
};
pub use error::ScenarioError;
pub use hot_row::{HotRowPoint, HotRowReport, run as run_hot_row};
use key_text::key_text;
pub use lock_loss::{LockLossRun, ROW as LOCK_LOSS_ROW, TxnOutcome, run_lock_loss};
pub use lock_transfer::{TRANSFER_LOCKS, TransferRun, run_lock_transfer};
pub use sql_cluster::SqlCluster;
pub use sql_transcript::{Mysql, SqlAnswer, render as render_sql_answer};
pub use sql_writeups::{SqlLockLoss, run_sql_hot_row, run_sql_lock_loss};
pub use step_waits::{StepWaits, waiting_during};
