//! Row events of caller-described tables ([`BinlogTable`]) and DDL statements in a
//! [`TxnCache`], and the cache's events as raw bytes (to keep them elsewhere and put them
//! back, as a coordinator's prepare journal does).

use crate::cache::TxnCache;
use crate::error::{Error, Result};
use crate::event::EventBody;
use crate::header::{CHECKSUM_LEN, ChecksumAlg, HEADER_LEN};
use crate::kv::ROWS_EVENT_TARGET_SIZE;
use crate::query::QueryEvent;
use crate::row_image::full_bitmap;
use crate::rows::{ROWS_FLAG_STMT_END, RowsEvent, RowsKind};
use crate::table::{BinlogCharset, BinlogTable};
use crate::value::BinlogValue;

/// One row changed by a SQL statement, with full row images (every column, in table
/// order), as MariaDB logs it with `binlog_row_image=FULL`.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlRowChange {
    /// A new row (Write_rows).
    Insert {
        /// The row as inserted.
        after: Vec<BinlogValue>,
    },
    /// A changed row (Update_rows): the replica finds the row equal to `before` (by its
    /// primary key when the table has one) and sets it to `after`.
    Update {
        /// The row before the statement.
        before: Vec<BinlogValue>,
        /// The row after it.
        after: Vec<BinlogValue>,
    },
    /// A removed row (Delete_rows).
    Delete {
        /// The row before the statement.
        before: Vec<BinlogValue>,
    },
}

impl SqlRowChange {
    fn kind(&self) -> RowsKind {
        match self {
            SqlRowChange::Insert { .. } => RowsKind::Write,
            SqlRowChange::Update { .. } => RowsKind::Update,
            SqlRowChange::Delete { .. } => RowsKind::Delete,
        }
    }
}

impl TxnCache {
    /// Adds one statement's row changes of `table`: a Table_map, then rows events of about
    /// [`ROWS_EVENT_TARGET_SIZE`] bytes (a new event wherever the kind of change changes),
    /// the last flagged end-of-statement. An empty `changes` adds nothing.
    ///
    /// A replica in STRICT mode applies them only if they match its rows: an insert of a
    /// row whose key is absent, an update or delete of a row that exists as `before`.
    ///
    /// # Errors
    /// [`Error::BadValue`] naming the column of a value that does not fit (nothing of the
    /// statement is added then); I/O errors when spilling.
    pub fn table_rows(&mut self, table: &BinlogTable, changes: &[SqlRowChange]) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        // Encode first: a bad value adds nothing.
        let mut images: Vec<(RowsKind, Vec<u8>)> = Vec::with_capacity(changes.len());
        for ch in changes {
            let mut img = Vec::new();
            match ch {
                SqlRowChange::Insert { after: row } | SqlRowChange::Delete { before: row } => {
                    table.encode_row(row, &mut img)?;
                }
                SqlRowChange::Update { before, after } => {
                    table.encode_row(before, &mut img)?;
                    table.encode_row(after, &mut img)?;
                }
            }
            images.push((ch.kind(), img));
        }
        let start = self.savepoint();
        let r = self.table_events(table, images);
        if r.is_err()
            && let Err(e) = self.rollback_to(start)
        {
            tracing::warn!("rolling back a failed statement: {e}");
        }
        r
    }

    fn table_events(
        &mut self,
        table: &BinlogTable,
        images: Vec<(RowsKind, Vec<u8>)>,
    ) -> Result<()> {
        self.push(EventBody::TableMap(table.table_map()))?;
        let n = table.columns().len();
        let bitmap = full_bitmap(n);
        let count = images.len();
        let mut rows = Vec::new();
        for (i, (kind, img)) in images.iter().enumerate() {
            rows.extend_from_slice(img);
            let last = i + 1 == count;
            let kind_changes = images.get(i + 1).is_some_and(|(next, _)| next != kind);
            if last || kind_changes || rows.len() >= ROWS_EVENT_TARGET_SIZE {
                self.push(EventBody::Rows(RowsEvent {
                    kind: *kind,
                    table_id: table.table_id(),
                    flags: if last { ROWS_FLAG_STMT_END } else { 0 },
                    column_count: n as u64,
                    columns_present: bitmap.clone(),
                    columns_after: (*kind == RowsKind::Update).then(|| bitmap.clone()),
                    rows: std::mem::take(&mut rows),
                }))?;
            }
        }
        Ok(())
    }

    /// Adds a statement logged as its text (a Query event), for DDL such as `CREATE TABLE`,
    /// run with `database` as the current database, in the session charset utf8mb4
    /// (the charset of the text columns that [`BinlogTable`] describes), so that a replica
    /// creates databases and tables whose columns match the row events' Table_maps.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a database name over 255 bytes or an empty statement; I/O
    /// errors when spilling.
    pub fn query(&mut self, database: &str, sql: &str) -> Result<()> {
        if database.len() > 255 || database.contains('\0') {
            return Err(Error::Invalid {
                what: "database name",
                detail: format!("{database:?}: at most 255 bytes, no NUL"),
            });
        }
        if sql.trim().is_empty() {
            return Err(Error::Invalid {
                what: "statement",
                detail: "empty".to_string(),
            });
        }
        let q = QueryEvent::new(database, sql).with_charset(BinlogCharset::Utf8mb4.collation_id());
        self.push(EventBody::Query(q))
    }

    /// Every event added so far, as the bytes the binlog will hold (each with its header,
    /// `log_pos` 0 and CRC-32), in order. Reads the spill file of a spilled cache.
    ///
    /// # Errors
    /// [`Error::Io`] if the spill file cannot be read.
    pub fn encoded_events(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len() as usize);
        self.copy_out(
            &mut |chunk| {
                out.extend_from_slice(chunk);
                Ok(())
            },
            &mut || {},
        )?;
        Ok(out)
    }

    /// Appends events given as bytes (what [`TxnCache::encoded_events`] returned, of a
    /// cache of a binlog with the same server id), after checking that they are whole
    /// events with good checksums.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `bytes` do not split into whole events or a checksum is
    /// wrong (nothing is appended then); I/O errors when spilling.
    pub fn push_encoded(&mut self, bytes: &[u8]) -> Result<()> {
        let mut at = 0;
        while at < bytes.len() {
            let rest = &bytes[at..];
            let bad = |detail: String| Error::Invalid {
                what: "encoded events",
                detail: format!("at byte {at}: {detail}"),
            };
            if rest.len() < HEADER_LEN + CHECKSUM_LEN {
                return Err(bad(format!("{} bytes left, not a whole event", rest.len())));
            }
            let size = u32::from_le_bytes([rest[9], rest[10], rest[11], rest[12]]) as usize;
            if size < HEADER_LEN + CHECKSUM_LEN || size > rest.len() {
                return Err(bad(format!(
                    "event size {size} with {} bytes left",
                    rest.len()
                )));
            }
            crate::event::Event::decode(&rest[..size], ChecksumAlg::Crc32)
                .map_err(|e| bad(e.to_string()))?;
            at += size;
        }
        let start = self.savepoint();
        let r = self.append(bytes);
        if r.is_err()
            && let Err(e) = self.rollback_to(start)
        {
            tracing::warn!("rolling back failed appended events: {e}");
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{BinlogColumn, BinlogType};

    #[test]
    fn change_kinds_map_to_rows_events() {
        let row = vec![BinlogValue::Int(1)];
        assert_eq!(
            SqlRowChange::Insert { after: row.clone() }.kind(),
            RowsKind::Write
        );
        assert_eq!(
            SqlRowChange::Update {
                before: row.clone(),
                after: row.clone()
            }
            .kind(),
            RowsKind::Update
        );
        assert_eq!(
            SqlRowChange::Delete { before: row }.kind(),
            RowsKind::Delete
        );
        let t = BinlogTable::new("d", "t", 3, vec![BinlogColumn::new("a", BinlogType::Int)]);
        assert!(t.is_ok());
    }
}
