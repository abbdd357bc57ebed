//! The durable write-ahead log: one per node, shared by all of its groups.

mod fs;
mod record;
mod segment;
mod snap_file;
mod store;

pub use fs::{DirLock, MemFs, StdFs, WalFile, WalFs};
pub use store::{Wal, WalOptions, WalStats};
