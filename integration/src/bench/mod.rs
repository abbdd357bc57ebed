//! `surgedb bench locks|hotspot|bigtxn`: the three write-ups' experiments with their
//! variants side by side in one run, printed as a table or JSON and drawn as an SVG plot.
//!
//! - [`run_locks`]: sysbench `oltp_write_only` in key-value form through `surge-txn`
//!   (embedded or over TCP), optimistic vs pessimistic with sync, pipelined and in-memory
//!   locks (TiKV 6.0's in-memory pessimistic locks);
//! - [`run_hot_txn`]: one hot row incremented by many clients, AliSQL hot-row group commit
//!   through `surge-txn`'s `hot_update` vs ordinary pessimistic transactions (embedded or
//!   over TCP); [`run_hotspot`]: the same on `surge-hotspot` alone, in this process;
//! - [`run_bigtxn`]: small commits beside a big transaction, none vs copy vs rename
//!   (AliSQL/MariaDB 11.7 large-transaction binlog commit by rename), through a `surge-txn`
//!   coordinator with its binlog in this process (on embedded clusters or over TCP).

mod bigtxn;
mod hot_txn;
mod hotspot;
mod locks;
mod plot;
pub mod replica;
mod report;
mod stats;
pub mod sysbench;
mod target;

pub use bigtxn::{BigTxnOptions, BigTxnPoint, run_bigtxn};
pub use hot_txn::{hot_txn_steps, run_hot_txn};
pub use hotspot::{HotspotOptions, HotspotPoint, HotspotRun, run_hotspot};
pub use locks::{LocksOptions, LocksPoint, run_locks};
pub use plot::{Plot, Series, XAxis, YAxis, plot_svg};
pub use report::{
    bigtxn_series, bigtxn_table, hotspot_series, hotspot_table, locks_series, locks_table,
    percentile_name,
};
pub use stats::Latency;
pub use surge_txn::workload::WriteMode;
pub use target::BenchTarget;

/// Why a benchmark stopped.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The cluster or the scratch directory could not be set up.
    #[error("setting up: {0}")]
    Setup(String),
    /// Loading the table failed.
    #[error("loading the table: {0}")]
    Load(String),
    /// The cluster refused a request the benchmark needs (setting the lock mode).
    #[error("cluster: {0}")]
    Cluster(String),
    /// An experiment on a component crate failed.
    #[error(transparent)]
    Scenario(#[from] crate::scenarios::ScenarioError),
    /// The plot could not be drawn or written.
    #[error("plot {path}: {detail}")]
    Plot {
        /// The SVG file.
        path: String,
        /// What failed.
        detail: String,
    },
}

/// Where a benchmark reports how far it got (a progress bar in the command line).
pub trait Progress {
    /// What runs now.
    fn message(&mut self, text: &str);
    /// One more step done (of the count the options' `steps` gives).
    fn step(&mut self);
}

/// No progress reporting.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn message(&mut self, _text: &str) {}
    fn step(&mut self) {}
}
