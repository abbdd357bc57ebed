//! The SQL layer: a MySQL-dialect SQL engine over `surge-txn`.
//!
//! Tables live in the store itself, in TiDB's key layout; the catalog too, so every node
//! sees the same schema. A connection's [`SqlSession`] runs statements in transactions of
//! the node's own [`surge_txn::TxnClient`]; [`SqlEngine`] opens them.

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
pub use session::{ConnectionInfo, PreparedInfo, SessionFactory, SqlSession};
pub use types::SqlType;
pub use value::{Decimal, Value};
