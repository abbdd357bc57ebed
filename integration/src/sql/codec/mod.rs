//! How tables live on KV keys: memcomparable keys in TiDB's layout (see
//! <https://docs.pingcap.com/tidb/stable/tidb-computing>) and a compact, versioned row value.

mod datum;
mod keys;
mod row;

pub use datum::{decode_datums, encode_datum, encode_int};
pub use keys::{index_key, row_key};
pub(crate) use keys::{index_prefix, row_prefix, row_prefix_end, table_prefix};
pub use row::{RowError, RowShape, decode_row, encode_row};
