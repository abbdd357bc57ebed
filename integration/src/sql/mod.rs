//! The SQL layer: a MySQL-dialect SQL engine over `surge-txn`.
//!
//! Tables live in the store itself, in TiDB's key layout; the catalog too, so every node
//! sees the same schema. A connection's [`SqlSession`] runs statements in transactions of
//! the node's own [`surge_txn::TxnClient`].

mod column;
mod output;
mod session;
mod value;

pub use column::{ColumnKind, ColumnMeta};
pub use output::{Output, SqlError};
pub use session::{ConnectionInfo, PreparedInfo, SessionFactory, SqlSession};
pub use value::{Decimal, Value};
