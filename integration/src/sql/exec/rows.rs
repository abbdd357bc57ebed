//! Reading and writing one row with its index entries.
//!
//! A unique index entry (no NULL among its values) is `key(values) -> handle`, written with
//! an existence check (1062 when taken); any other entry is `key(values, handle) -> "0"`.

use surge_txn::{Transaction, TxnError};

use crate::sql::catalog::{IndexDef, TableDef};
use crate::sql::codec::{decode_row, encode_int, encode_row, index_key, row_key};
use crate::sql::output::SqlError;
use crate::sql::txn_error::from_txn;
use crate::sql::value::Value;

/// The handle in a row key (its last 8 bytes).
///
/// # Errors
/// A key too short to be a row key.
pub(crate) fn handle_of_row_key(k: &[u8]) -> Result<i64, SqlError> {
    let tail = k
        .len()
        .checked_sub(8)
        .and_then(|s| k.get(s..))
        .and_then(|t| <[u8; 8]>::try_from(t).ok())
        .ok_or_else(|| SqlError::internal(format!("row key {k:?} is too short")))?;
    Ok((u64::from_be_bytes(tail) ^ (1 << 63)) as i64)
}

/// The handle an index entry points at: its value (unique entries, 8 bytes) or the key's
/// last 8 bytes (others).
///
/// # Errors
/// A damaged entry.
pub(crate) fn handle_of_index_entry(key: &[u8], value: &[u8]) -> Result<i64, SqlError> {
    if value.len() == 8 {
        handle_of_row_key(value)
    } else {
        handle_of_row_key(key)
    }
}

/// The entry of `index` for `row` at `handle`: key, value, and whether it is unique.
pub(crate) fn index_entry(
    table: &TableDef,
    index: &IndexDef,
    handle: i64,
    row: &[Value],
) -> (Vec<u8>, Vec<u8>, bool) {
    let values = table.index_values(index, row);
    let unique = index.unique && !values.contains(&Value::Null);
    if unique {
        (
            index_key(table.id, index.id, &values, None),
            encode_int(handle).to_vec(),
            true,
        )
    } else {
        (
            index_key(table.id, index.id, &values, Some(handle)),
            b"0".to_vec(),
            false,
        )
    }
}

/// 1062 for `values` under index `index` of `table`.
pub(crate) fn duplicate(table: &TableDef, index: &str, values: &[Value]) -> SqlError {
    let text: Vec<String> = values
        .iter()
        .map(|v| {
            v.to_text().map_or_else(
                || "NULL".into(),
                |t| String::from_utf8_lossy(&t).into_owned(),
            )
        })
        .collect();
    SqlError::new(
        1062,
        "23000",
        format!(
            "Duplicate entry '{}' for key '{}.{}'",
            text.join("-"),
            table.name,
            index
        ),
    )
}

fn map_dup(e: TxnError, dup: impl FnOnce() -> SqlError) -> SqlError {
    match e {
        TxnError::AlreadyExist { .. } => dup(),
        other => from_txn(&other),
    }
}

/// Writes one index entry (checked when unique).
///
/// # Errors
/// 1062 when a unique entry is taken; lock errors.
pub(crate) fn insert_index_entries(
    txn: &mut Transaction,
    table: &TableDef,
    index: &IndexDef,
    key: Vec<u8>,
    value: Vec<u8>,
    unique: bool,
    row: &[Value],
) -> Result<(), SqlError> {
    if unique {
        txn.insert(&key, &value).map_err(|e| {
            map_dup(e, || {
                duplicate(table, &index.name, &table.index_values(index, row))
            })
        })
    } else {
        txn.put(&key, &value).map_err(|e| from_txn(&e))
    }
}

/// Decodes a row value of `table`.
///
/// # Errors
/// 1105 naming the table and column when damaged.
pub(crate) fn decode(table: &TableDef, bytes: &[u8]) -> Result<Vec<Value>, SqlError> {
    decode_row(table, bytes).map_err(|e| SqlError::internal(e.to_string()))
}

/// The row at `handle`; `lock`: a locking current read (pessimistic), which locks the key
/// even when the row is absent.
///
/// # Errors
/// Lock or read failures.
pub(crate) fn read_row(
    txn: &mut Transaction,
    table: &TableDef,
    handle: i64,
    lock: bool,
) -> Result<Option<Vec<Value>>, SqlError> {
    let key = row_key(table.id, handle);
    let v = if lock {
        txn.get_for_update(&key)
    } else {
        txn.get(&key)
    }
    .map_err(|e| from_txn(&e))?;
    v.map(|b| decode(table, &b)).transpose()
}

/// [`read_row`] with `lock` of many handles at once: the locking reads go out in one
/// request per region ([`Transaction::batch_get_for_update`]), in `handles`' order.
///
/// # Errors
/// Lock or read failures.
pub(crate) fn read_rows_locked(
    txn: &mut Transaction,
    table: &TableDef,
    handles: &[i64],
) -> Result<Vec<Option<Vec<Value>>>, SqlError> {
    let keys: Vec<Vec<u8>> = handles.iter().map(|h| row_key(table.id, *h)).collect();
    txn.batch_get_for_update(&keys)
        .map_err(|e| from_txn(&e))?
        .into_iter()
        .map(|v| v.map(|b| decode(table, &b)).transpose())
        .collect()
}

/// Inserts a new row and its index entries.
///
/// # Errors
/// 1062 when the handle or a unique entry is taken.
pub(crate) fn insert_row(
    txn: &mut Transaction,
    table: &TableDef,
    handle: i64,
    row: &[Value],
) -> Result<(), SqlError> {
    let bytes = encode_row(table.column_ids(), row);
    txn.insert(&row_key(table.id, handle), &bytes)
        .map_err(|e| map_dup(e, || duplicate(table, "PRIMARY", &[Value::Int(handle)])))?;
    for index in &table.indexes {
        let (k, v, unique) = index_entry(table, index, handle, row);
        insert_index_entries(txn, table, index, k, v, unique, row)?;
    }
    Ok(())
}

/// Deletes a row and its index entries.
///
/// # Errors
/// Lock failures.
pub(crate) fn delete_row(
    txn: &mut Transaction,
    table: &TableDef,
    handle: i64,
    row: &[Value],
) -> Result<(), SqlError> {
    txn.delete(&row_key(table.id, handle))
        .map_err(|e| from_txn(&e))?;
    for index in &table.indexes {
        let (k, _, _) = index_entry(table, index, handle, row);
        txn.delete(&k).map_err(|e| from_txn(&e))?;
    }
    Ok(())
}

/// Replaces row `old` at `handle` by `new` at `new_handle`; only index entries whose values
/// changed are touched.
///
/// # Errors
/// 1062 when a changed unique value or the new handle is taken.
pub(crate) fn update_row(
    txn: &mut Transaction,
    table: &TableDef,
    handle: i64,
    new_handle: i64,
    old: &[Value],
    new: &[Value],
) -> Result<(), SqlError> {
    if new_handle != handle {
        delete_row(txn, table, handle, old)?;
        return insert_row(txn, table, new_handle, new);
    }
    let bytes = encode_row(table.column_ids(), new);
    txn.put(&row_key(table.id, handle), &bytes)
        .map_err(|e| from_txn(&e))?;
    for index in &table.indexes {
        if table.index_values(index, old) == table.index_values(index, new) {
            continue;
        }
        let (old_key, _, _) = index_entry(table, index, handle, old);
        txn.delete(&old_key).map_err(|e| from_txn(&e))?;
        let (k, v, unique) = index_entry(table, index, handle, new);
        insert_index_entries(txn, table, index, k, v, unique, new)?;
    }
    Ok(())
}
