//! Integration tests of surge-binlog, compiled as one binary.
// Test helpers outside #[test] functions panic on failure too, like the tests themselves.
#![allow(clippy::unwrap_used)]

mod common;

mod codec_props;
mod commit;
mod commit_many;
mod crash;
mod dir_lock;
mod fixtures;
mod mariadb_replay;
mod mariadb_sql_replay;
mod mariadb_tool;
mod power_loss;
mod reading;
mod recovery;
mod rename;
mod shutdown;
mod sql_rows;
