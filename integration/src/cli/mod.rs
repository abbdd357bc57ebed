//! What the `surgedb` subcommands do beyond parsing arguments: `kv`, `txn FILE`,
//! `cluster status`, `gc`, `binlog verify` and `bench`.

mod bench_run;
mod bench_sysbench;
mod binlog_verify;
mod connect;
mod gc_holds;
mod kv;
mod replica_start;
mod script_target;
mod status;
mod stream_positions;
mod txn_script;

pub use bench_run::{BenchOutput, bench_bigtxn, bench_hotspot, bench_locks};
pub use bench_sysbench::{bench_replica, bench_sysbench, text as sysbench_text};
pub(crate) use binlog_verify::mariadb_read;
pub use binlog_verify::{
    DirKind, MariadbCheck, VerifiedFile, VerifyError, VerifyReport, mariadb_binlog_installed,
    verify, verify_dir,
};
pub use connect::{ConnectError, connect_dir};
pub use gc_holds::{print_gc_holds, remove_gc_hold};
pub use kv::{KvError, get, scan, write};
pub use replica_start::start_replica;
pub use script_target::{ScriptTarget, ScriptTxn};
pub use status::{NodeReport, StatusError, cluster_status, print_status};
pub use stream_positions::{print_stream_positions, remove_stream_position};
pub use txn_script::{MAX_SLEEP_MS, ScriptError, ScriptOp, parse_script, run_script, show};
