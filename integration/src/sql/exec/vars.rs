//! System variables: their defaults, and the ones that change how the engine runs.

use std::collections::BTreeMap;

use crate::sql::engine::SqlConfig;
use crate::sql::value::Value;

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

/// `innodb_lock_wait_timeout`'s default, in seconds (InnoDB's).
pub(crate) const DEFAULT_LOCK_WAIT_SECS: i64 = 50;

/// Every system variable the engine knows, at its default. Names are lower case.
pub(crate) fn default_variables(config: &SqlConfig) -> BTreeMap<String, Value> {
    let mut v = BTreeMap::new();
    let mut set = |k: &str, val: Value| {
        v.insert(k.to_owned(), val);
    };
    set("version", text(&config.server_version));
    set(
        "version_comment",
        text("SurgeDB: MySQL protocol over Percolator transactions on Raft"),
    );
    set("version_compile_os", text("Linux"));
    set("autocommit", Value::Int(1));
    for k in [
        "character_set_client",
        "character_set_connection",
        "character_set_results",
        "character_set_server",
        "character_set_database",
        "character_set_system",
    ] {
        set(k, text("utf8mb4"));
    }
    set("collation_connection", text("utf8mb4_general_ci"));
    set("collation_server", text("utf8mb4_general_ci"));
    set("collation_database", text("utf8mb4_general_ci"));
    set("max_allowed_packet", Value::Int(67_108_864));
    set("net_buffer_length", Value::Int(16_384));
    set(
        "sql_mode",
        text("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"),
    );
    set("transaction_isolation", text("REPEATABLE-READ"));
    set("tx_isolation", text("REPEATABLE-READ"));
    set("transaction_read_only", Value::Int(0));
    set("tx_read_only", Value::Int(0));
    set("lower_case_table_names", Value::Int(0));
    set("time_zone", text("SYSTEM"));
    set("system_time_zone", text("UTC"));
    set("wait_timeout", Value::Int(28_800));
    // InnoDB's default: a row lock waits up to 50 s (each transaction's own lock wait
    // timeout in the store, set from this when it begins; the client's default is shorter).
    set(
        "innodb_lock_wait_timeout",
        Value::Int(DEFAULT_LOCK_WAIT_SECS),
    );
    // The node serves TCP only (drivers that prefer a Unix socket ask for it first).
    set("socket", text(""));
    set("interactive_timeout", Value::Int(28_800));
    set("net_write_timeout", Value::Int(60));
    set("net_read_timeout", Value::Int(30));
    set("auto_increment_increment", Value::Int(1));
    set("auto_increment_offset", Value::Int(1));
    set("sql_auto_is_null", Value::Int(0));
    set("sql_select_limit", Value::UInt(u64::MAX));
    set("performance_schema", Value::Int(0));
    set("query_cache_type", text("OFF"));
    set("query_cache_size", Value::Int(0));
    set("init_connect", text(""));
    set("license", text("MIT OR Apache-2.0"));
    set("have_ssl", text("DISABLED"));
    set("server_id", Value::UInt(config.node_id));
    set(
        "hostname",
        text(&format!("surgedb-node-{}", config.node_id)),
    );
    // AliSQL's hot-row switches (SET GLOBAL hotspot=ON, hotspot_lock_type=ON).
    set("hotspot", text("OFF"));
    set("hotspot_lock_type", text("OFF"));
    set("hotspot_for_autocommit", text("OFF"));
    set("hotspot_update_max_wait_time", Value::Int(100));
    // TiDB's transaction mode; `surgedb_txn_mode` is the same switch under our name.
    set("tidb_txn_mode", text("pessimistic"));
    set("surgedb_txn_mode", text("pessimistic"));
    v
}

/// Normalizes a SET value for `name`: ON/OFF switches as `ON`/`OFF`, booleans as 0/1.
pub(crate) fn normalize(name: &str, v: Value) -> Value {
    let switch = matches!(
        name,
        "hotspot" | "hotspot_lock_type" | "hotspot_for_autocommit"
    );
    let word = match &v {
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).to_ascii_uppercase()),
        Value::Int(i) => Some(if *i != 0 { "ON".into() } else { "OFF".into() }),
        _ => None,
    };
    if switch {
        return match word.as_deref() {
            Some("ON" | "1" | "TRUE") => text("ON"),
            Some(_) => text("OFF"),
            None => v,
        };
    }
    if name == "autocommit" {
        return match word.as_deref() {
            Some("ON" | "1" | "TRUE") => Value::Int(1),
            Some(_) => Value::Int(0),
            None => v,
        };
    }
    v
}

/// Whether a switch value is on.
pub(crate) fn is_on(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bytes(b)) => b.eq_ignore_ascii_case(b"ON") || b == b"1",
        Some(Value::Int(i)) => *i != 0,
        _ => false,
    }
}
