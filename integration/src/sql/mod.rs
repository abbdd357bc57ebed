//! The SQL layer: a MySQL-dialect SQL engine over `surge-txn`.
//!
//! Tables live in the store itself, in TiDB's key layout; the catalog too, so every node
//! sees the same schema. A connection's [`SqlSession`] runs statements in transactions of
//! the node's own [`surge_txn::TxnClient`]; [`SqlEngine`] opens them.
//!
//! # Layout
//!
//! - Rows: `t{table id}_r{handle}`, the handle being the integer primary key (or a hidden
//!   row id); the value is a versioned row encoding (column id, type tag, payload; NULLs
//!   absent). Index entries: `t{table id}_i{index id}{values}`, the handle appended when
//!   the index is not unique (or a value is NULL); keys are memcomparable, so index ranges
//!   are key ranges (<https://docs.pingcap.com/tidb/stable/tidb-computing>).
//! - Catalog: `mVersion`, `mDB:{db}`, `mTable:{db}\0{table}` (JSON), `mAutoInc:{id}`. Every
//!   DDL locks `mVersion` and bumps it; an engine reads it at most once per schema lease
//!   ([`SqlConfig::schema_lease`]) and at once after its own DDL.
//!
//! # Statements
//!
//! CREATE/DROP DATABASE, USE, CREATE TABLE (PRIMARY KEY, UNIQUE, KEY, AUTO_INCREMENT,
//! DEFAULT, NOT NULL; of the table options only AUTO_INCREMENT = n acts), CREATE INDEX (backfilled), DROP TABLE,
//! TRUNCATE, SHOW CREATE TABLE; INSERT (multi-row, DEFAULT, IGNORE, ON DUPLICATE KEY
//! UPDATE with the `AS new` row alias, ... SELECT), REPLACE; SELECT on one table (point get,
//! key or index range, or scan; aggregates, GROUP BY with positions, HAVING, DISTINCT,
//! ORDER BY, LIMIT, FOR UPDATE, and FOR SHARE / LOCK IN SHARE MODE taking FOR UPDATE's
//! exclusive lock; NOWAIT waits as a plain lock does) and scalar subqueries that are not correlated; UPDATE and DELETE
//! (ORDER BY, LIMIT); BEGIN, COMMIT, ROLLBACK, autocommit; SET and SHOW as clients need
//! them; prepared statements. TiDB's `set config` / `show config` and `SHOW TABLE t
//! REGIONS`; AliSQL's inventory hints and `SELECT ... FROM UPDATE`. What is not supported
//! (joins, correlated subqueries, window functions, WITH ROLLUP, SKIP LOCKED,
//! ALTER TABLE, ...) is error 1235 naming it.
//!
//! # Transactions and errors
//!
//! Pessimistic by default (`SET tidb_txn_mode='optimistic'` or `surgedb_txn_mode` per
//! session): UPDATE, DELETE and SELECT FOR UPDATE lock each row key with a locking read,
//! absent keys too. Every abort a retry can cure is 1213 (SQLSTATE 40001), a lock wait
//! timeout 1205; both roll the transaction back on the server first, so a client that
//! retries from BEGIN (sysbench) starts clean. A statement that fails after it wrote rows
//! rolls its whole transaction back (there are no statement savepoints) and says so.
//!
//! # Known limits
//!
//! - Strings compare bytewise (a binary collation), not case-insensitively as MySQL's
//!   default `utf8mb4_general_ci`; LIKE is ASCII case-insensitive.
//! - CREATE INDEX is not an online schema change: an engine that has not yet seen the new
//!   index (within one schema lease) writes rows without its entries.
//! - Writes to non-unique index entries take pessimistic locks too (the client locks every
//!   key a pessimistic transaction writes), where TiDB lets them ride the prewrite.

mod admin;
mod catalog;
mod codec;
mod column;
mod engine;
mod exec;
mod expr;
mod output;
mod session;
mod txn_error;
mod types;
mod value;

pub use admin::{ClientAdmin, ClusterAdmin, LocalClusterAdmin, RegionView};
pub use catalog::{ColumnDef, IndexDef, TableDef};
pub use codec::{
    RowError, RowShape, decode_datums, decode_row, encode_datum, encode_int, encode_row, index_key,
    row_key,
};
pub use column::{ColumnKind, ColumnMeta};
pub use engine::{SqlConfig, SqlEngine};
pub use exec::Session;
pub use output::{Output, SqlError};
pub use session::{
    ConnectionInfo, PreparedInfo, SessionFactory, SqlSession, StatementResult,
    multi_statements_refused,
};
pub use types::SqlType;
pub use value::{Decimal, Value};
