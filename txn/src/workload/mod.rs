//! Benchmark workloads over a [`TxnClient`](crate::TxnClient): sysbench `oltp_write_only` in
//! key-value form, as TiKV's in-memory pessimistic lock write-up (TiKV 6.0) runs it.
//!
//! For SurgeDB's own benchmarks, not an API: the `write_only` example and `surgedb bench
//! locks` both run this one implementation (the table, the event, and the slices that rotate
//! through the lock modes), each printing its own report. Hidden from the docs and free to
//! change.

mod error;
mod measure;
mod mode;
mod rng;
mod write_only;

pub use error::WorkloadError;
pub use measure::{Measured, Schedule, SliceObserver, WorkloadCluster, measure};
pub use mode::WriteMode;
pub use rng::Rng;
pub use write_only::{event, load};
