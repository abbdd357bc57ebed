//! The durable write-ahead log: one per node, shared by all of its groups.

mod record;
mod segment;
mod store;

pub use store::{Wal, WalOptions, WalStats};
