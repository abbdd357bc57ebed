//! Row images of the store's table `surgedb`.`kv`: the Table_map that describes it and the
//! row encoding MariaDB uses for it.
//!
//! The events match this MariaDB table (the Table_map says: column 1 `VARCHAR`-family type 15
//! with a 3072-byte maximum and a 2-byte length, `NOT NULL`; column 2 `BLOB` with a 4-byte
//! length, nullable; no character set, so binary):
//!
//! ```sql
//! CREATE TABLE surgedb.kv (k VARBINARY(3072) NOT NULL PRIMARY KEY, v LONGBLOB) ENGINE=InnoDB;
//! ```
//!
//! A replica applies them in its default STRICT mode only if the caller picks the statement
//! that matches the row's state: [`TxnCache::put`] (Write_rows) for a key that does not exist
//! yet, [`TxnCache::update`] (Update_rows) for one that does, [`TxnCache::delete`]
//! (Delete_rows) for one that does. Otherwise the replica stops with a duplicate-key error
//! (1062) or "Can't find record" (1032), as MariaDB's own replicas do on diverged data.

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

/// Columns-present bitmap bit of `k`.
const COL_K: u8 = 0x01;
/// Columns-present bitmap bit of `v`.
const COL_V: u8 = 0x02;

/// Which columns one row image of a statement holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Image {
    /// `k` and `v`: Write_rows after images.
    Full,
    /// `k` alone: the minimal before image of a Delete or Update (the primary key).
    Key,
    /// `v` alone: the minimal after image of an Update (only the changed column).
    Value,
}

impl Image {
    /// Its columns-present bitmap byte.
    fn columns(self) -> u8 {
        match self {
            Image::Full => COL_K | COL_V,
            Image::Key => COL_K,
            Image::Value => COL_V,
        }
    }
}

/// Appends one row image: the null bitmap of the present columns (bit i for the i-th present
/// column; unused bits set, as MariaDB does), then each present column: the key with a 2-byte
/// length, the value with a 4-byte length.
fn put_kv_image(out: &mut Vec<u8>, image: Image, key: &[u8], value: &[u8]) {
    out.push(if image == Image::Full { 0xfc } else { 0xfe });
    if image != Image::Value {
        put_u16(out, key.len() as u16);
        out.extend_from_slice(key);
    }
    if image != Image::Key {
        put_u32(out, value.len() as u32);
        out.extend_from_slice(value);
    }
}

/// The columns one image held: `None` for a column absent from it (or, for `v`, NULL).
struct ImageColumns {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// Reads one image holding the columns of `present`.
fn read_image(c: &mut Cursor<'_>, present: u8) -> Result<ImageColumns, DecodeError> {
    let nulls = c.u8("row null bitmap")?;
    let mut bit = 0;
    let mut key = None;
    let mut value = None;
    if present & COL_K != 0 {
        if nulls & (1 << bit) != 0 {
            return Err(c.malformed("NULL primary key"));
        }
        bit += 1;
        let n = usize::from(c.u16("key length")?);
        key = Some(c.take(n, "key past the end")?.to_vec());
    }
    if present & COL_V != 0 && nulls & (1 << bit) == 0 {
        let n = c.u32("value length")? as usize;
        value = Some(c.take(n, "value past the end")?.to_vec());
    }
    Ok(ImageColumns { key, value })
}

impl RowsEvent {
    /// Decodes the row images as rows of `surgedb`.`kv`.
    ///
    /// For an Update the images come in (before, after) pairs. An after image without `k`
    /// (the minimal image [`TxnCache::update`] writes: only the changed column) gets the key
    /// of its before image, since the update does not change the key.
    ///
    /// # Errors
    /// [`DecodeError::Malformed`] if the event does not have the table's layout, or an image
    /// has no key (and, for an after image, no before image to take it from).
    pub fn kv_rows(&self) -> Result<Vec<KvRow>, DecodeError> {
        let mut c = Cursor::new(&self.rows, "Rows");
        if self.column_count != 2 || self.columns_present.len() != 1 {
            return Err(c.malformed("not the two-column surgedb.kv layout"));
        }
        let before = self.columns_present[0] & (COL_K | COL_V);
        let after = match (&self.columns_after, self.kind) {
            (Some(a), RowsKind::Update) if a.len() == 1 => a[0] & (COL_K | COL_V),
            (_, RowsKind::Update) => return Err(c.malformed("update without after bitmap")),
            _ => before,
        };
        let mut out = Vec::new();
        while c.remaining() > 0 {
            let ImageColumns { key, value } = read_image(&mut c, before)?;
            let Some(key) = key else {
                return Err(c.malformed("image without the primary key"));
            };
            if self.kind == RowsKind::Update {
                let after = read_image(&mut c, after)?;
                let after_key = after.key.unwrap_or_else(|| key.clone());
                out.push(KvRow { key, value });
                out.push(KvRow {
                    key: after_key,
                    value: after.value,
                });
            } else {
                out.push(KvRow { key, value });
            }
        }
        Ok(out)
    }
}

/// Row helpers for `surgedb`.`kv`: each call is one statement, a Table_map then rows
/// events (the last flagged end-of-statement, after which readers drop the table map).
///
/// Which helper to call depends on the row's state before the statement (the caller knows
/// it: the binlog does not keep the table): [`put`](TxnCache::put) for an absent key,
/// [`update`](TxnCache::update) for a present one, [`delete`](TxnCache::delete) for a
/// present one. A replica in STRICT mode stops on any other combination.
impl TxnCache {
    /// Adds `INSERT INTO surgedb.kv VALUES (key, value)`: Table_map + Write_rows.
    ///
    /// For a key that does not exist before the statement; for an existing key use
    /// [`TxnCache::update`] (a replica stops on an insert of an existing key with a
    /// duplicate-key error).
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
        self.statement(RowsKind::Write, &rows.into_iter().collect::<Vec<_>>())
    }

    /// Adds `UPDATE surgedb.kv SET v = value WHERE k = key`: Table_map + Update_rows (type
    /// 24, v1) with the minimal row image, as MariaDB writes it with
    /// `binlog_row_image=MINIMAL`: the before image holds the key alone (columns-before
    /// bitmap `k`), the after image the new value alone (columns-after bitmap `v`).
    ///
    /// For a key that exists before the statement (a replica stops on an update of an
    /// absent key with "Can't find record").
    ///
    /// # Errors
    /// As [`TxnCache::put`].
    pub fn update(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.update_many([(key, value)])
    }

    /// Adds one statement updating several rows (Update_rows events of about 8 KiB).
    ///
    /// # Errors
    /// As [`TxnCache::put`].
    pub fn update_many<'a>(
        &mut self,
        rows: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<()> {
        self.statement(RowsKind::Update, &rows.into_iter().collect::<Vec<_>>())
    }

    /// Adds `DELETE FROM surgedb.kv WHERE k = key`: Table_map + Delete_rows with the key as
    /// the (minimal) before image.
    ///
    /// For a key that exists before the statement (a replica stops on a delete of an absent
    /// key with "Can't find record").
    ///
    /// # Errors
    /// As [`TxnCache::put`].
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.statement(RowsKind::Delete, &[(key, &[][..])])
    }

    /// One statement of `kind` over `rows` (key, value); Delete ignores the values.
    fn statement(&mut self, kind: RowsKind, rows: &[(&[u8], &[u8])]) -> Result<()> {
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
            if v.len() > MAX_EVENT_LEN - 64 {
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

    fn statement_events(&mut self, kind: RowsKind, rows: &[(&[u8], &[u8])]) -> Result<()> {
        self.push(EventBody::TableMap(kv_table_map(KV_TABLE_ID)))?;
        kv_rows_events(kind, rows, &mut |ev| self.push(EventBody::Rows(ev)))
    }
}

/// Encodes one statement's rows of `surgedb`.`kv` as rows events of about
/// [`ROWS_EVENT_TARGET_SIZE`] bytes of images, handing each to `emit`; the last carries
/// [`ROWS_FLAG_STMT_END`]. `rows` are (key, value); a Delete ignores the values.
fn kv_rows_events(
    kind: RowsKind,
    rows: &[(&[u8], &[u8])],
    emit: &mut dyn FnMut(RowsEvent) -> Result<()>,
) -> Result<()> {
    // (before, after) images: Write has only after images and Delete only before images,
    // both in the first slot (those events have a single bitmap); Update has both.
    let (first, after) = match kind {
        RowsKind::Write => (Image::Full, None),
        RowsKind::Update => (Image::Key, Some(Image::Value)),
        RowsKind::Delete => (Image::Key, None),
    };
    let mut images = Vec::new();
    for (i, (k, v)) in rows.iter().enumerate() {
        put_kv_image(&mut images, first, k, v);
        if let Some(after) = after {
            put_kv_image(&mut images, after, k, v);
        }
        let last = i + 1 == rows.len();
        if last || images.len() >= ROWS_EVENT_TARGET_SIZE {
            emit(RowsEvent {
                kind,
                table_id: KV_TABLE_ID,
                flags: if last { ROWS_FLAG_STMT_END } else { 0 },
                column_count: 2,
                columns_present: vec![first.columns()],
                columns_after: after.map(|a| vec![a.columns()]),
                rows: std::mem::take(&mut images),
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;
    use crate::header::ChecksumAlg;

    /// The rows events of one statement, each encoded as a whole event and decoded back.
    fn round_trip(kind: RowsKind, rows: &[(&[u8], &[u8])]) -> Vec<RowsEvent> {
        let mut out = Vec::new();
        kv_rows_events(kind, rows, &mut |ev| {
            let mut buf = Vec::new();
            Event::new(EventBody::Rows(ev), 1, 1).encode_into(&mut buf, ChecksumAlg::Crc32);
            match Event::decode(&buf, ChecksumAlg::Crc32).map(|e| e.body) {
                Ok(EventBody::Rows(r)) => out.push(r),
                other => panic!("decoded {other:?}"),
            }
            Ok(())
        })
        .expect("no I/O here");
        out
    }

    #[test]
    fn update_is_key_before_value_after() {
        let evs = round_trip(RowsKind::Update, &[(b"k1", b"new")]);
        assert_eq!(evs.len(), 1);
        let ev = &evs[0];
        assert_eq!(ev.kind, RowsKind::Update);
        assert_eq!(ev.columns_present, vec![COL_K]);
        assert_eq!(ev.columns_after, Some(vec![COL_V]));
        assert_eq!(ev.flags, ROWS_FLAG_STMT_END);
        // before: null bitmap, u16 len, key; after: null bitmap, u32 len, value.
        assert_eq!(
            ev.rows,
            [&[0xfe, 2, 0][..], b"k1", &[0xfe, 3, 0, 0, 0], b"new"].concat()
        );
        let rows = ev.kv_rows().expect("decodes");
        let k = b"k1".to_vec();
        assert_eq!(
            rows,
            vec![
                KvRow {
                    key: k.clone(),
                    value: None
                },
                KvRow {
                    key: k,
                    value: Some(b"new".to_vec())
                },
            ]
        );
    }

    #[test]
    fn a_large_update_is_cut_into_events_that_end_the_statement_once() {
        let value = vec![7u8; 1000];
        let keys: Vec<Vec<u8>> = (0..40u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let rows: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &value[..])).collect();
        let evs = round_trip(RowsKind::Update, &rows);
        assert!(evs.len() > 1);
        let ends: Vec<bool> = evs
            .iter()
            .map(|e| e.flags & ROWS_FLAG_STMT_END != 0)
            .collect();
        assert_eq!(ends.iter().filter(|&&e| e).count(), 1);
        assert_eq!(ends.last(), Some(&true));
        let decoded: Vec<KvRow> = evs
            .iter()
            .flat_map(|e| e.kv_rows().expect("decodes"))
            .collect();
        assert_eq!(decoded.len(), 80);
        for (pair, k) in decoded.chunks(2).zip(&keys) {
            assert_eq!((&pair[0].key, &pair[0].value), (k, &None));
            assert_eq!(
                (&pair[1].key, pair[1].value.as_deref()),
                (k, Some(&value[..]))
            );
        }
    }

    #[test]
    fn an_update_image_without_a_key_before_is_refused() {
        let ev = RowsEvent {
            kind: RowsKind::Update,
            table_id: KV_TABLE_ID,
            flags: ROWS_FLAG_STMT_END,
            column_count: 2,
            columns_present: vec![COL_V],
            columns_after: Some(vec![COL_V]),
            rows: [&[0xfe, 1, 0, 0, 0], &b"a"[..], &[0xfe, 1, 0, 0, 0], b"b"].concat(),
        };
        assert!(ev.kv_rows().is_err());
    }
}
