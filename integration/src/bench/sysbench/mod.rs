//! `surgedb bench sysbench`: the write-ups' experiments as their authors ran them, with
//! stock sysbench 1.0 through the MySQL protocol, against a fresh 3-node SurgeDB cluster and
//! a private durable MariaDB 10.11 in the same run, variants interleaved.
//!
//! - 000, TiKV 6.0's in-memory pessimistic locks: `oltp_write_only` at 1..64 threads,
//!   optimistic / pessimistic / pipelined / in-memory switched between slices with
//!   `set config tikv pessimistic-txn.*`
//!   (<https://docs.pingcap.com/tidb/stable/pessimistic-transaction>);
//! - 003, large transactions: `oltp_write_only` at 4 threads while another client runs a
//!   big `UPDATE` every 5 s (commit by rename on SurgeDB, by copy on MariaDB 10.11; MariaDB
//!   11.7 added the rename, <https://mariadb.com/kb/en/binlog_large_commit_threshold/>);
//! - 004, AliSQL's hot row: `UPDATE /*+ commit_on_success rollback_on_fail
//!   target_affect_row(1) */ t1 SET data=data+1 WHERE id=1` (the script in
//!   `integration/sysbench/hot_row.lua`) at 1..512 threads, hotspot ON vs OFF;
//! - `oltp` (not in the default list): sysbench's own `oltp_point_select` at 16 threads
//!   and `oltp_write_only` at 32, SurgeDB and MariaDB alternating, with where the tables'
//!   region leaders were at the start of each SurgeDB slice.
//!
//! After every run the data must match what sysbench acknowledged (the hot row's value,
//! the tables' row counts, the big table's counter), and at the end every binlog file
//! must pass `mariadb-binlog --verify-binlog-checksum`.

mod big_update;
mod endpoint;
mod error;
mod hot_row;
mod machine;
mod mariadb;
mod oltp;
mod output;
mod report;
mod run;
mod tally;
mod write_only;

pub use big_update::BigUpdatePoint;
pub use endpoint::{Endpoint, HOT_ROW_LUA};
pub use error::SysbenchError;
pub use hot_row::{HOTSPOT_OFF, HOTSPOT_ON};
pub use machine::Machine;
pub use mariadb::PrivateMariadb;
pub(crate) use oltp::move_leaders;
pub use oltp::{LeaderShare, OltpReport, POINT_SELECT, WRITE_ONLY};
pub use output::{Interval, SysbenchResult, parse_sysbench};
pub use report::{
    big_update_series, big_update_table, size_label, sysbench_series, sysbench_table,
};
pub use run::{Experiment, SysbenchOptions, SysbenchReport, run_sysbench};
pub use tally::SysbenchPoint;
pub use write_only::LOCK_MODES;
