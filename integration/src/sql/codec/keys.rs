//! Key layout: `t{table id}_r{handle}` for rows, `t{table id}_i{index id}{datums}` for
//! index entries (the handle appended when the index is not unique or a value is NULL),
//! and the catalog under `m`, apart from (and before) all tables.

use super::datum::{encode_datum, encode_int};
use crate::sql::value::Value;

/// `t{table id}`: every key of the table starts so.
pub(crate) fn table_prefix(table_id: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    k.push(b't');
    k.extend_from_slice(&encode_int(table_id));
    k
}

/// `t{table id}_r`: every row key of the table starts so.
pub(crate) fn row_prefix(table_id: i64) -> Vec<u8> {
    let mut k = table_prefix(table_id);
    k.extend_from_slice(b"_r");
    k
}

/// The first key after every row key of the table (`t{table id}_s`): a handle's first
/// byte may be 0xFF (handles from 0x7F00_0000_0000_0000 up), so `_r` followed by 0xFF is
/// not past them all.
pub(crate) fn row_prefix_end(table_id: i64) -> Vec<u8> {
    let mut k = table_prefix(table_id);
    k.extend_from_slice(b"_s");
    k
}

/// The row key of `handle` (19 bytes).
pub fn row_key(table_id: i64, handle: i64) -> Vec<u8> {
    let mut k = row_prefix(table_id);
    k.extend_from_slice(&encode_int(handle));
    k
}

/// `t{table id}_i{index id}`: every entry of the index starts so.
pub(crate) fn index_prefix(table_id: i64, index_id: i64) -> Vec<u8> {
    let mut k = table_prefix(table_id);
    k.extend_from_slice(b"_i");
    k.extend_from_slice(&encode_int(index_id));
    k
}

/// The index key of `values` (plus `handle` when given: non-unique entries).
pub fn index_key(table_id: i64, index_id: i64, values: &[Value], handle: Option<i64>) -> Vec<u8> {
    let mut k = index_prefix(table_id, index_id);
    for v in values {
        encode_datum(&mut k, v);
    }
    if let Some(h) = handle {
        encode_datum(&mut k, &Value::Int(h));
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_keys_are_tidbs_and_sort_by_handle() {
        let k = row_key(5, -1);
        assert_eq!(k.len(), 19);
        assert_eq!(&k[..1], b"t");
        assert_eq!(&k[9..11], b"_r");
        assert!(row_key(5, -1) < row_key(5, 0));
        assert!(row_key(5, i64::MAX) < row_key(6, i64::MIN));
        // The catalog's keys (`m...`) sort apart from, and before, every table's.
        assert!(b"mVersion".as_slice() < table_prefix(i64::MIN).as_slice());
    }

    #[test]
    fn index_keys_sort_by_values_then_handle() {
        let a = index_key(1, 1, &[Value::Int(3)], Some(9));
        let b = index_key(1, 1, &[Value::Int(4)], Some(1));
        assert!(a < b);
        assert!(
            index_key(1, 1, &[Value::Null], None) < index_key(1, 1, &[Value::Int(i64::MIN)], None)
        );
    }
}
