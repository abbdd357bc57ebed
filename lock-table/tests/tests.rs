//! Integration tests of `surge-lock-table`, one module per behaviour, compiled as one binary.

mod common;

mod budget;
mod close;
mod concurrency;
mod deadlock;
mod lock_wait;
mod merge;
mod model;
mod ops_interpreter;
mod random_bytes;
mod split;
mod tikv_txn_ext;
mod transfer;
mod wake_by_key;
mod wake_up_edges;
mod write_path;
