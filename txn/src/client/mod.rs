//! The client layer: [`TxnClient`] and [`Transaction`], Percolator's coordinator. It talks
//! to nodes only through [`crate::NodeRouter`] / [`crate::KvService`]: two-phase and
//! one-phase commit, pessimistic locks, lock resolution, region-error retries with backoff,
//! and heartbeats.

mod backoff;
mod buffer;
mod config;
mod core;
mod counters;
mod dispatch;
mod error;
mod heartbeat;
mod mode;
mod pessimistic;
mod region_cache;
mod resolver;
mod secondaries;
mod snapshot;
mod transaction;
mod two_pc;
mod txn_client;

pub use config::ClientConfig;
pub use counters::ClientCounters;
pub use error::TxnError;
pub use mode::TxnMode;
pub use snapshot::KvPair;
pub use transaction::Transaction;
pub use txn_client::TxnClient;

#[cfg(test)]
mod dispatch_test;
#[cfg(test)]
mod fake_router;
#[cfg(test)]
mod two_pc_test;
