//! Row-based replication events: Table_map (19) and Write/Update/Delete_rows v1 (23/24/25).
//! Row images are kept as raw bytes here; `kv.rs` encodes and decodes them for the
//! `surgedb`.`kv` table.

use crate::error::DecodeError;
use crate::wire::{Cursor, put_packed, put_u16, put_uint};

/// Rows-event flag: last rows event of the statement (readers drop table maps after it).
pub const ROWS_FLAG_STMT_END: u16 = 0x0001;

/// Largest table id (48 bits on the wire).
pub const MAX_TABLE_ID: u64 = (1 << 48) - 1;

/// Body of a Table_map event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMap {
    /// Id the rows events use to refer to this table (48 bits).
    pub table_id: u64,
    /// Table-map flags.
    pub flags: u16,
    /// Database name (at most 255 bytes, no NUL).
    pub database: String,
    /// Table name (at most 255 bytes, no NUL).
    pub table: String,
    /// MySQL column type codes, one per column.
    pub column_types: Vec<u8>,
    /// Packed per-column metadata (lengths, pack sizes).
    pub metadata: Vec<u8>,
    /// Nullability bitmap, `(columns + 7) / 8` bytes.
    pub null_bitmap: Vec<u8>,
    /// Optional metadata (binlog_row_metadata=MINIMAL/FULL), raw.
    pub optional_metadata: Vec<u8>,
}

impl TableMap {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_uint(out, self.table_id, 6);
        put_u16(out, self.flags);
        for name in [&self.database, &self.table] {
            let b = &name.as_bytes()[..name.len().min(255)];
            out.push(b.len() as u8);
            out.extend_from_slice(b);
            out.push(0);
        }
        put_packed(out, self.column_types.len() as u64);
        out.extend_from_slice(&self.column_types);
        put_packed(out, self.metadata.len() as u64);
        out.extend_from_slice(&self.metadata);
        out.extend_from_slice(&self.null_bitmap);
        out.extend_from_slice(&self.optional_metadata);
    }

    pub(crate) fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Table_map");
        let table_id = c.uint(6, "table_id")?;
        let flags = c.u16("flags")?;
        let mut names = [String::new(), String::new()];
        for name in &mut names {
            let n = usize::from(c.u8("name length")?);
            *name = c.string(n, "name is not UTF-8 or past the end")?;
            if c.u8("name terminator")? != 0 {
                return Err(c.malformed("name not NUL-terminated"));
            }
        }
        let [database, table] = names;
        let columns = c.packed("column count")?;
        let columns = usize::try_from(columns).map_err(|_| c.malformed("column count"))?;
        let column_types = c.take(columns, "column types past the end")?.to_vec();
        let meta_len = c.packed("metadata length")?;
        let meta_len = usize::try_from(meta_len).map_err(|_| c.malformed("metadata length"))?;
        let metadata = c.take(meta_len, "metadata past the end")?.to_vec();
        let null_bitmap = c
            .take(columns.div_ceil(8), "null bitmap past the end")?
            .to_vec();
        Ok(TableMap {
            table_id,
            flags,
            database,
            table,
            column_types,
            metadata,
            null_bitmap,
            optional_metadata: c.rest().to_vec(),
        })
    }
}

/// Which rows event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowsKind {
    /// Write_rows: after images.
    Write,
    /// Update_rows: before and after image per row.
    Update,
    /// Delete_rows: before images.
    Delete,
}

/// Body of a Write/Update/Delete_rows v1 event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsEvent {
    /// Which of the three.
    pub kind: RowsKind,
    /// Table id from the preceding Table_map.
    pub table_id: u64,
    /// `ROWS_FLAG_*` bits.
    pub flags: u16,
    /// Number of columns of the table.
    pub column_count: u64,
    /// Columns present in the (before) images, `(column_count + 7) / 8` bytes.
    pub columns_present: Vec<u8>,
    /// Columns present in the after images (Update only).
    pub columns_after: Option<Vec<u8>>,
    /// The row images, back to back, raw.
    pub rows: Vec<u8>,
}

impl RowsEvent {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_uint(out, self.table_id, 6);
        put_u16(out, self.flags);
        put_packed(out, self.column_count);
        out.extend_from_slice(&self.columns_present);
        if self.kind == RowsKind::Update {
            match &self.columns_after {
                Some(after) => out.extend_from_slice(after),
                None => out.extend_from_slice(&self.columns_present),
            }
        }
        out.extend_from_slice(&self.rows);
    }

    pub(crate) fn decode(kind: RowsKind, body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body, "Rows");
        let table_id = c.uint(6, "table_id")?;
        let flags = c.u16("flags")?;
        let column_count = c.packed("column count")?;
        let width =
            usize::try_from(column_count.div_ceil(8)).map_err(|_| c.malformed("column count"))?;
        let columns_present = c.take(width, "column bitmap past the end")?.to_vec();
        let columns_after = if kind == RowsKind::Update {
            Some(c.take(width, "after-image bitmap past the end")?.to_vec())
        } else {
            None
        };
        Ok(RowsEvent {
            kind,
            table_id,
            flags,
            column_count,
            columns_present,
            columns_after,
            rows: c.rest().to_vec(),
        })
    }
}
