//! Row images of the store's table `surgedb`.`kv` (`k VARBINARY(3072)` primary key,
//! `v LONGBLOB`): the Table_map that describes it and the row encoding MariaDB uses for it.

use crate::cache::{KV_TABLE_ID, MAX_EVENT_LEN, TxnCache};
use crate::error::{DecodeError, Error, Result};
use crate::event::EventBody;
use crate::rows::{ROWS_FLAG_STMT_END, RowsEvent, RowsKind, TableMap};
use crate::wire::{Cursor, put_u16, put_u32};

/// Database of the key-value table.
pub const KV_DATABASE: &str = "surgedb";
/// Name of the key-value table.
pub const KV_TABLE: &str = "kv";
/// Longest key `VARBINARY(3072)` holds.
pub const KV_MAX_KEY_LEN: usize = 3072;
/// Longest value a `LONGBLOB` holds (4-byte length).
pub const KV_MAX_VALUE_LEN: u64 = u32::MAX as u64;
/// Rows events are cut at about this many bytes of images, like MariaDB's
/// `binlog_row_event_max_size` (8 KiB); one row larger than it gets an event of its own.
pub const ROWS_EVENT_TARGET_SIZE: usize = 8192;

const MYSQL_TYPE_VARCHAR: u8 = 15;
const MYSQL_TYPE_BLOB: u8 = 252;

/// The Table_map of `surgedb`.`kv`, as MariaDB 10.11 writes it.
pub fn kv_table_map(table_id: u64) -> TableMap {
    TableMap {
        table_id,
        flags: 1,
        database: KV_DATABASE.to_string(),
        table: KV_TABLE.to_string(),
        column_types: vec![MYSQL_TYPE_VARCHAR, MYSQL_TYPE_BLOB],
        // VARCHAR max length 3072 (u16 LE), BLOB pack length 4.
        metadata: vec![0x00, 0x0c, 0x04],
        // k is NOT NULL (primary key), v is nullable.
        null_bitmap: vec![0x02],
        optional_metadata: Vec::new(),
    }
}

/// One row image of `surgedb`.`kv`. `value` is `None` when the image holds only the key
/// (minimal before image of a delete) or when `v` is NULL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvRow {
    /// The primary key.
    pub key: Vec<u8>,
    /// The value, if present and not NULL.
    pub value: Option<Vec<u8>>,
}

/// Columns-present bitmap byte for a full image (k, v) or the key alone.
pub(crate) fn kv_columns(with_value: bool) -> u8 {
    if with_value { 0x03 } else { 0x01 }
}

/// Appends one row image: the null bitmap of the present columns (unused bits set, as
/// MariaDB does), then the key (2-byte length) and, if present, the value (4-byte length).
pub(crate) fn put_kv_image(out: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) {
    match value {
        Some(v) => {
            out.push(0xfc);
            put_u16(out, key.len() as u16);
            out.extend_from_slice(key);
            put_u32(out, v.len() as u32);
            out.extend_from_slice(v);
        }
        None => {
            out.push(0xfe);
            put_u16(out, key.len() as u16);
            out.extend_from_slice(key);
        }
    }
}

fn read_image(c: &mut Cursor<'_>, present: u8) -> Result<KvRow, DecodeError> {
    let count = (present & 1) + ((present >> 1) & 1);
    let nulls = c.u8("row null bitmap")?;
    let mut bit = 0;
    let mut key = None;
    let mut value = None;
    if present & 1 != 0 {
        if nulls & (1 << bit) != 0 {
            return Err(c.malformed("NULL primary key"));
        }
        bit += 1;
        let n = usize::from(c.u16("key length")?);
        key = Some(c.take(n, "key past the end")?.to_vec());
    }
    if present & 2 != 0 {
        if nulls & (1 << bit) == 0 {
            let n = c.u32("value length")? as usize;
            value = Some(c.take(n, "value past the end")?.to_vec());
        }
        bit += 1;
    }
    debug_assert_eq!(bit, count);
    Ok(KvRow {
        key: key.ok_or(c.malformed("image without the primary key"))?,
        value,
    })
}

impl RowsEvent {
    /// Decodes the row images as rows of `surgedb`.`kv`. For an Update the images come in
    /// (before, after) pairs.
    ///
    /// # Errors
    /// [`DecodeError::Malformed`] if the event does not have the table's layout.
    pub fn kv_rows(&self) -> Result<Vec<KvRow>, DecodeError> {
        let mut c = Cursor::new(&self.rows, "Rows");
        if self.column_count != 2 || self.columns_present.len() != 1 {
            return Err(c.malformed("not the two-column surgedb.kv layout"));
        }
        let before = self.columns_present[0] & 3;
        let after = match (&self.columns_after, self.kind) {
            (Some(a), RowsKind::Update) if a.len() == 1 => a[0] & 3,
            (_, RowsKind::Update) => return Err(c.malformed("update without after bitmap")),
            _ => before,
        };
        let mut out = Vec::new();
        while c.remaining() > 0 {
            out.push(read_image(&mut c, before)?);
            if self.kind == RowsKind::Update {
                out.push(read_image(&mut c, after)?);
            }
        }
        Ok(out)
    }
}

/// Row helpers for `surgedb`.`kv`: each call is one statement, a Table_map then rows
/// events (the last flagged end-of-statement, after which readers drop the table map).
impl TxnCache {
    /// Adds `INSERT INTO surgedb.kv VALUES (key, value)`: Table_map + Write_rows.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a key over 3072 bytes or a value over 4 GiB; I/O errors.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_many([(key, value)])
    }

    /// Adds one statement inserting several rows (Write_rows events of about 8 KiB).
    ///
    /// # Errors
    /// As [`TxnCache::put`].
    pub fn put_many<'a>(
        &mut self,
        rows: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<()> {
        let rows: Vec<(&[u8], Option<&[u8]>)> =
            rows.into_iter().map(|(k, v)| (k, Some(v))).collect();
        self.statement(RowsKind::Write, &rows)
    }

    /// Adds `DELETE FROM surgedb.kv WHERE k = key`: Table_map + Delete_rows with the key as
    /// the (minimal) before image.
    ///
    /// # Errors
    /// As [`TxnCache::put`].
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.statement(RowsKind::Delete, &[(key, None)])
    }

    fn statement(&mut self, kind: RowsKind, rows: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        for (k, v) in rows {
            if k.len() > KV_MAX_KEY_LEN {
                return Err(Error::Invalid {
                    what: "key",
                    detail: format!("{} bytes, VARBINARY(3072) holds 3072", k.len()),
                });
            }
            if v.is_some_and(|v| v.len() > MAX_EVENT_LEN - 64) {
                return Err(Error::Invalid {
                    what: "value",
                    detail: "larger than one 4 GiB event can hold".to_string(),
                });
            }
        }
        // A statement is added whole or not at all: on failure its first events are
        // rolled back, so the caller may retry or go on with the transaction.
        let start = self.savepoint();
        let r = self.statement_events(kind, rows);
        if r.is_err()
            && let Err(e) = self.rollback_to(start)
        {
            tracing::warn!("rolling back a failed statement: {e}");
        }
        r
    }

    fn statement_events(&mut self, kind: RowsKind, rows: &[(&[u8], Option<&[u8]>)]) -> Result<()> {
        let with_value = rows[0].1.is_some();
        self.push(EventBody::TableMap(kv_table_map(KV_TABLE_ID)))?;
        let mut images = Vec::new();
        for (i, (k, v)) in rows.iter().enumerate() {
            put_kv_image(&mut images, k, *v);
            let last = i + 1 == rows.len();
            if last || images.len() >= ROWS_EVENT_TARGET_SIZE {
                let ev = RowsEvent {
                    kind,
                    table_id: KV_TABLE_ID,
                    flags: if last { ROWS_FLAG_STMT_END } else { 0 },
                    column_count: 2,
                    columns_present: vec![kv_columns(with_value)],
                    columns_after: None,
                    rows: std::mem::take(&mut images),
                };
                self.push(EventBody::Rows(ev))?;
            }
        }
        Ok(())
    }
}
