//! The client layer: [`TxnClient`] and [`Transaction`], Percolator's coordinator. It talks
//! to nodes only through [`crate::NodeRouter`] / [`crate::KvService`]: two-phase and
//! one-phase commit, pessimistic locks, lock resolution, region-error retries with backoff,
//! and heartbeats.

mod backoff;
mod batch_pool;
mod binlog_config;
mod binlog_crash;
mod binlog_journal;
mod binlog_purge;
mod binlog_recovery;
mod binlog_sequencer;
mod binlog_sql;
mod binlog_txn;
mod binlog_writer;
mod buffer;
mod cluster_view;
mod config;
mod core;
mod counters;
mod dispatch;
mod error;
mod gc;
mod gc_hold;
mod heartbeat;
mod hot_executor;
mod hot_op;
mod hot_update;
mod hot_update_counters;
mod mode;
mod open_txns;
mod pacing;
mod pessimistic;
mod region_cache;
mod resolver;
mod row_update;
mod secondaries;
mod snapshot;
mod stream_collect;
mod stream_commit;
mod stream_reader;
mod transaction;
mod two_pc;
mod txn_client;

pub use binlog_config::BinlogOptions;
pub use binlog_crash::{TXN_CRASH_ENV, TXN_CRASH_SKIP_ENV, txn_crash_points};
pub use binlog_recovery::BinlogRecoveryReport;
pub use cluster_view::{NodeStatusResult, RegionView};
pub use config::ClientConfig;
pub use counters::ClientCounters;
pub use error::TxnError;
pub use gc::GcReport;
pub use gc_hold::GcHoldOptions;
pub use hot_executor::{HotChange, HotGroupObserver, HotGroupRecord};
pub use hot_op::{HotOp, HotOutcome, HotReject};
pub use hot_update::{DEFAULT_HOT_AUTO_THRESHOLD, DEFAULT_HOT_SPIN_YIELDS};
pub use hot_update_counters::HotCounters;
pub use mode::TxnMode;
pub use row_update::{BinlogRow, HotRowChange, HotRowOutcome, RowUpdate};
pub use snapshot::KvPair;
pub use stream_collect::StreamCollectReport;
pub use transaction::Transaction;
pub use txn_client::TxnClient;

#[cfg(test)]
mod dispatch_test;
#[cfg(test)]
mod fake_router;
#[cfg(test)]
mod resolver_test;
#[cfg(test)]
mod stream_layout_test;
#[cfg(test)]
mod two_pc_test;
