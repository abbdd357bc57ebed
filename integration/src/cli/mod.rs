//! What the `surgedb` subcommands do beyond parsing arguments: `kv`, `txn FILE`,
//! `cluster status` and `binlog verify`.

mod binlog_verify;
mod kv;
mod status;
mod txn_script;

pub use binlog_verify::{VerifiedFile, VerifyError, verify_dir};
pub use kv::{KvError, get, scan, write};
pub use status::print_status;
pub use txn_script::{ScriptError, ScriptOp, parse_script, run_script, show};
