//! [`BinlogTable`]: a SQL table as row events describe it: its columns' types
//! ([`BinlogType`], [`BinlogColumn`]) and the [`TableMap`] MariaDB writes for it.
//!
//! The Table_map carries, per column, a type code and type metadata (what MariaDB's
//! `Field::save_field_metadata` writes, `sql/field.cc`), a nullability bitmap, and the
//! optional metadata of `binlog_row_metadata=FULL` (signedness, character sets, column
//! names, primary key) so that readers such as `mariadb-binlog -vv` show names and
//! signedness. Formats: <https://mariadb.com/kb/en/table_map_event/>.

use crate::decimal;
use crate::error::{Error, Result};
use crate::rows::{MAX_TABLE_ID, TableMap};
use crate::wire::put_packed;

/// Largest number of columns a MariaDB table has.
pub const MAX_COLUMNS: usize = 4096;

// MariaDB's column type codes (`enum_field_types`).
pub(crate) const TYPE_TINY: u8 = 1;
pub(crate) const TYPE_SHORT: u8 = 2;
pub(crate) const TYPE_LONG: u8 = 3;
pub(crate) const TYPE_FLOAT: u8 = 4;
pub(crate) const TYPE_DOUBLE: u8 = 5;
pub(crate) const TYPE_LONGLONG: u8 = 8;
pub(crate) const TYPE_INT24: u8 = 9;
pub(crate) const TYPE_DATE: u8 = 10;
pub(crate) const TYPE_VARCHAR: u8 = 15;
pub(crate) const TYPE_TIMESTAMP2: u8 = 17;
pub(crate) const TYPE_DATETIME2: u8 = 18;
pub(crate) const TYPE_NEWDECIMAL: u8 = 246;
pub(crate) const TYPE_BLOB: u8 = 252;
pub(crate) const TYPE_STRING: u8 = 254;

// Optional metadata field types (`Table_map_log_event::Optional_metadata_field_type`).
const OPT_SIGNEDNESS: u8 = 1;
const OPT_DEFAULT_CHARSET: u8 = 2;
const OPT_COLUMN_NAME: u8 = 4;
const OPT_SIMPLE_PRIMARY_KEY: u8 = 8;

/// The character set (with its default collation) of a string column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinlogCharset {
    /// `binary` (collation 63): bytes, the set of `BINARY`, `VARBINARY` and `BLOB`.
    Binary,
    /// `latin1` with `latin1_swedish_ci` (collation 8): one byte a character.
    Latin1,
    /// `utf8mb4` with `utf8mb4_general_ci` (collation 45): up to 4 bytes a character.
    Utf8mb4,
}

impl BinlogCharset {
    /// The collation number MariaDB writes in the optional metadata.
    pub fn collation_id(self) -> u16 {
        match self {
            BinlogCharset::Binary => 63,
            BinlogCharset::Latin1 => 8,
            BinlogCharset::Utf8mb4 => 45,
        }
    }

    /// The most bytes one character takes.
    pub fn max_char_bytes(self) -> u32 {
        match self {
            BinlogCharset::Binary | BinlogCharset::Latin1 => 1,
            BinlogCharset::Utf8mb4 => 4,
        }
    }

    /// The number of characters in `bytes`, or why they are not text of this set.
    pub(crate) fn char_count(self, bytes: &[u8]) -> std::result::Result<usize, String> {
        match self {
            BinlogCharset::Binary | BinlogCharset::Latin1 => Ok(bytes.len()),
            BinlogCharset::Utf8mb4 => std::str::from_utf8(bytes)
                .map(|s| s.chars().count())
                .map_err(|e| format!("not UTF-8: {e}")),
        }
    }
}

/// A column's SQL type, as far as the binlog cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinlogType {
    /// `TINYINT` (1 byte).
    TinyInt,
    /// `SMALLINT` (2 bytes).
    SmallInt,
    /// `MEDIUMINT` (3 bytes).
    MediumInt,
    /// `INT` (4 bytes).
    Int,
    /// `BIGINT` (8 bytes).
    BigInt,
    /// `DECIMAL(precision, scale)`: precision 1..=65, scale 0..=38 and at most precision.
    Decimal {
        /// Total digits.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// `FLOAT` (4 bytes).
    Float,
    /// `DOUBLE` (8 bytes).
    Double,
    /// `CHAR(len)`: `len` characters, 0..=255.
    Char {
        /// Length in characters.
        len: u16,
        /// Character set.
        charset: BinlogCharset,
    },
    /// `VARCHAR(len)`: `len` characters, at most 65535 bytes.
    VarChar {
        /// Length in characters.
        len: u16,
        /// Character set.
        charset: BinlogCharset,
    },
    /// `TINYTEXT` (`length_bytes` 1), `TEXT` (2), `MEDIUMTEXT` (3), `LONGTEXT` (4).
    Text {
        /// Bytes of the value's length prefix, 1..=4.
        length_bytes: u8,
        /// Character set.
        charset: BinlogCharset,
    },
    /// `TINYBLOB` (`length_bytes` 1), `BLOB` (2), `MEDIUMBLOB` (3), `LONGBLOB` (4).
    Blob {
        /// Bytes of the value's length prefix, 1..=4.
        length_bytes: u8,
    },
    /// `BINARY(len)`: `len` bytes, 0..=255, padded with zero bytes.
    Binary {
        /// Length in bytes.
        len: u16,
    },
    /// `VARBINARY(len)`: at most `len` bytes (65535).
    VarBinary {
        /// Largest length in bytes.
        len: u16,
    },
    /// `DATE`.
    Date,
    /// `DATETIME(fsp)`, `fsp` 0..=6.
    DateTime {
        /// Fractional-second digits.
        fsp: u8,
    },
    /// `TIMESTAMP(fsp)`, `fsp` 0..=6.
    Timestamp {
        /// Fractional-second digits.
        fsp: u8,
    },
}

impl BinlogType {
    /// The type code of the Table_map.
    pub fn type_code(&self) -> u8 {
        match self {
            BinlogType::TinyInt => TYPE_TINY,
            BinlogType::SmallInt => TYPE_SHORT,
            BinlogType::MediumInt => TYPE_INT24,
            BinlogType::Int => TYPE_LONG,
            BinlogType::BigInt => TYPE_LONGLONG,
            BinlogType::Decimal { .. } => TYPE_NEWDECIMAL,
            BinlogType::Float => TYPE_FLOAT,
            BinlogType::Double => TYPE_DOUBLE,
            BinlogType::Char { .. } | BinlogType::Binary { .. } => TYPE_STRING,
            BinlogType::VarChar { .. } | BinlogType::VarBinary { .. } => TYPE_VARCHAR,
            BinlogType::Text { .. } | BinlogType::Blob { .. } => TYPE_BLOB,
            BinlogType::Date => TYPE_DATE,
            BinlogType::DateTime { .. } => TYPE_DATETIME2,
            BinlogType::Timestamp { .. } => TYPE_TIMESTAMP2,
        }
    }

    /// The character set of a string type (binary for `BINARY`, `VARBINARY`, `BLOB`),
    /// `None` for the others.
    pub fn charset(&self) -> Option<BinlogCharset> {
        match *self {
            BinlogType::Char { charset, .. }
            | BinlogType::VarChar { charset, .. }
            | BinlogType::Text { charset, .. } => Some(charset),
            BinlogType::Binary { .. } | BinlogType::VarBinary { .. } | BinlogType::Blob { .. } => {
                Some(BinlogCharset::Binary)
            }
            _ => None,
        }
    }

    /// Whether the type is numeric (has a sign in the optional metadata).
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            BinlogType::TinyInt
                | BinlogType::SmallInt
                | BinlogType::MediumInt
                | BinlogType::Int
                | BinlogType::BigInt
                | BinlogType::Decimal { .. }
                | BinlogType::Float
                | BinlogType::Double
        )
    }

    /// For `CHAR`, `BINARY`, `VARCHAR`, `VARBINARY`: the largest value in bytes.
    pub(crate) fn max_bytes(&self) -> Option<u32> {
        match *self {
            BinlogType::Char { len, charset } | BinlogType::VarChar { len, charset } => {
                Some(u32::from(len) * charset.max_char_bytes())
            }
            BinlogType::Binary { len } | BinlogType::VarBinary { len } => Some(u32::from(len)),
            _ => None,
        }
    }

    /// Why the type's parameters are out of MariaDB's range, if they are.
    fn check(&self) -> std::result::Result<(), String> {
        match *self {
            BinlogType::Decimal { precision, scale }
                if precision == 0
                    || precision > decimal::MAX_PRECISION
                    || scale > decimal::MAX_SCALE
                    || scale > precision =>
            {
                return Err(format!(
                    "DECIMAL({precision},{scale}): precision 1..=65, scale 0..=38 and at most the precision"
                ));
            }
            BinlogType::Char { len, .. } | BinlogType::Binary { len } if len > 255 => {
                return Err(format!("CHAR/BINARY({len}): at most 255"));
            }
            BinlogType::VarChar { .. } | BinlogType::VarBinary { .. } => {
                let bytes = self.max_bytes().unwrap_or(0);
                if bytes > 65535 {
                    return Err(format!("VARCHAR of {bytes} bytes: at most 65535"));
                }
            }
            BinlogType::Text { length_bytes, .. } | BinlogType::Blob { length_bytes }
                if !(1..=4).contains(&length_bytes) =>
            {
                return Err(format!(
                    "TEXT/BLOB length prefix of {length_bytes} bytes: 1..=4"
                ));
            }
            BinlogType::DateTime { fsp } | BinlogType::Timestamp { fsp } if fsp > 6 => {
                return Err(format!("fractional-second digits {fsp}: at most 6"));
            }
            _ => {}
        }
        Ok(())
    }

    /// Appends the column's Table_map metadata.
    fn put_metadata(&self, out: &mut Vec<u8>) {
        match *self {
            BinlogType::Decimal { precision, scale } => out.extend_from_slice(&[precision, scale]),
            BinlogType::Float => out.push(4),
            BinlogType::Double => out.push(8),
            BinlogType::Char { .. } | BinlogType::Binary { .. } => {
                // The real type with the length's bits 8-9 folded into bits 4-5 (flipped),
                // then the length's low byte.
                let len = self.max_bytes().unwrap_or(0);
                out.push(TYPE_STRING ^ ((len & 0x300) >> 4) as u8);
                out.push((len & 0xff) as u8);
            }
            BinlogType::VarChar { .. } | BinlogType::VarBinary { .. } => {
                let len = self.max_bytes().unwrap_or(0) as u16;
                out.extend_from_slice(&len.to_le_bytes());
            }
            BinlogType::Text { length_bytes, .. } | BinlogType::Blob { length_bytes } => {
                out.push(length_bytes);
            }
            BinlogType::DateTime { fsp } | BinlogType::Timestamp { fsp } => out.push(fsp),
            _ => {}
        }
    }
}

/// One column of a [`BinlogTable`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BinlogColumn {
    /// The column's name (at most 64 characters, as in MariaDB).
    pub name: String,
    /// Its type.
    pub kind: BinlogType,
    /// Whether it may be NULL.
    pub nullable: bool,
    /// Whether a numeric column is `UNSIGNED` (ignored for the others).
    pub unsigned: bool,
}

impl BinlogColumn {
    /// A `NOT NULL`, signed column.
    pub fn new(name: impl Into<String>, kind: BinlogType) -> BinlogColumn {
        BinlogColumn {
            name: name.into(),
            kind,
            nullable: false,
            unsigned: false,
        }
    }

    /// The same column, nullable.
    pub fn nullable(mut self) -> BinlogColumn {
        self.nullable = true;
        self
    }

    /// The same column, `UNSIGNED`.
    pub fn unsigned(mut self) -> BinlogColumn {
        self.unsigned = true;
        self
    }
}

/// A table whose rows go to the binlog as row events: its database, name, the table id the
/// events use, its columns in table order and its primary key.
///
/// Build it with [`BinlogTable::new`] (which checks every parameter), then log rows of it
/// with [`crate::TxnCache::table_rows`]. A MariaDB replica applies them to a table of the
/// same name with the same column types in the same order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BinlogTable {
    database: String,
    table: String,
    table_id: u64,
    columns: Vec<BinlogColumn>,
    primary_key: Vec<usize>,
}

fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.is_empty() || name.chars().count() > 64 || name.contains('\0') {
        return Err(Error::Invalid {
            what,
            detail: format!("{name:?}: 1 to 64 characters, no NUL"),
        });
    }
    Ok(())
}

impl BinlogTable {
    /// The table `database`.`table` with `columns` (in table order), whose row events
    /// carry `table_id` (any number up to 2^48 - 1; one statement uses one id per table).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the table or column: an empty or over-long name, a
    /// duplicate column name, no columns or more than 4096, a table id over 48 bits, a type
    /// parameter MariaDB does not allow (`DECIMAL(66,0)`, `CHAR(256)`, `DATETIME(7)`, ...).
    pub fn new(
        database: impl Into<String>,
        table: impl Into<String>,
        table_id: u64,
        columns: Vec<BinlogColumn>,
    ) -> Result<BinlogTable> {
        let (database, table) = (database.into(), table.into());
        check_name("database name", &database)?;
        check_name("table name", &table)?;
        if table_id > MAX_TABLE_ID {
            return Err(Error::Invalid {
                what: "table id",
                detail: format!("{table_id} exceeds 48 bits"),
            });
        }
        if columns.is_empty() || columns.len() > MAX_COLUMNS {
            return Err(Error::Invalid {
                what: "columns",
                detail: format!("{}.{table}: {} columns, 1..=4096", database, columns.len()),
            });
        }
        let mut seen = std::collections::HashSet::new();
        for c in &columns {
            check_name("column name", &c.name)?;
            if !seen.insert(c.name.to_lowercase()) {
                return Err(Error::Invalid {
                    what: "column name",
                    detail: format!("{database}.{table}: {} appears twice", c.name),
                });
            }
            c.kind.check().map_err(|detail| Error::Invalid {
                what: "column type",
                detail: format!("{database}.{table}.{}: {detail}", c.name),
            })?;
        }
        Ok(BinlogTable {
            database,
            table,
            table_id,
            columns,
            primary_key: Vec::new(),
        })
    }

    /// The same table with primary key columns `key` (indexes into the columns, in key
    /// order), written in the optional metadata.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an index past the columns or a repeated one.
    pub fn with_primary_key(mut self, key: Vec<usize>) -> Result<BinlogTable> {
        let mut seen = std::collections::HashSet::new();
        for &i in &key {
            if i >= self.columns.len() || !seen.insert(i) {
                return Err(Error::Invalid {
                    what: "primary key",
                    detail: format!("{}: column index {i} is past the end or repeated", self),
                });
            }
        }
        self.primary_key = key;
        Ok(self)
    }

    /// The database.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The table id its row events carry.
    pub fn table_id(&self) -> u64 {
        self.table_id
    }

    /// The columns, in table order.
    pub fn columns(&self) -> &[BinlogColumn] {
        &self.columns
    }

    /// The primary key's column indexes (empty: none given).
    pub fn primary_key(&self) -> &[usize] {
        &self.primary_key
    }

    /// The Table_map event body describing the table.
    pub fn table_map(&self) -> TableMap {
        let mut metadata = Vec::new();
        let mut null_bitmap = vec![0u8; self.columns.len().div_ceil(8)];
        for (i, c) in self.columns.iter().enumerate() {
            c.kind.put_metadata(&mut metadata);
            if c.nullable {
                null_bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        TableMap {
            table_id: self.table_id,
            flags: 1,
            database: self.database.clone(),
            table: self.table.clone(),
            column_types: self.columns.iter().map(|c| c.kind.type_code()).collect(),
            metadata,
            null_bitmap,
            optional_metadata: self.optional_metadata(),
        }
    }

    /// The optional metadata of `binlog_row_metadata=FULL`: type-length-value fields.
    fn optional_metadata(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let field = |out: &mut Vec<u8>, kind: u8, value: &[u8]| {
            out.push(kind);
            put_packed(out, value.len() as u64);
            out.extend_from_slice(value);
        };
        // Signedness: one bit per numeric column, most significant bit first, 1 unsigned.
        let numeric: Vec<bool> = self
            .columns
            .iter()
            .filter(|c| c.kind.is_numeric())
            .map(|c| c.unsigned)
            .collect();
        if !numeric.is_empty() {
            let mut bits = vec![0u8; numeric.len().div_ceil(8)];
            for (i, _) in numeric.iter().enumerate().filter(|(_, u)| **u) {
                bits[i / 8] |= 0x80 >> (i % 8);
            }
            field(&mut out, OPT_SIGNEDNESS, &bits);
        }
        // Character sets: the most common collation of the string columns, then
        // (index among the string columns, collation) for each that differs.
        let charsets: Vec<u16> = self
            .columns
            .iter()
            .filter_map(|c| c.kind.charset())
            .map(BinlogCharset::collation_id)
            .collect();
        if !charsets.is_empty() {
            let default = [63u16, 8, 45]
                .into_iter()
                .max_by_key(|id| charsets.iter().filter(|c| *c == id).count())
                .unwrap_or(63);
            let mut v = Vec::new();
            put_packed(&mut v, u64::from(default));
            for (i, id) in charsets
                .iter()
                .enumerate()
                .filter(|(_, id)| **id != default)
            {
                put_packed(&mut v, i as u64);
                put_packed(&mut v, u64::from(*id));
            }
            field(&mut out, OPT_DEFAULT_CHARSET, &v);
        }
        let mut names = Vec::new();
        for c in &self.columns {
            put_packed(&mut names, c.name.len() as u64);
            names.extend_from_slice(c.name.as_bytes());
        }
        field(&mut out, OPT_COLUMN_NAME, &names);
        if !self.primary_key.is_empty() {
            let mut v = Vec::new();
            for &i in &self.primary_key {
                put_packed(&mut v, i as u64);
            }
            field(&mut out, OPT_SIMPLE_PRIMARY_KEY, &v);
        }
        out
    }
}

impl std::fmt::Display for BinlogTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`.`{}`", self.database, self.table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, kind: BinlogType) -> BinlogColumn {
        BinlogColumn::new(name, kind)
    }

    #[test]
    fn table_map_carries_types_metadata_and_nulls() {
        let utf8 = BinlogCharset::Utf8mb4;
        let t = BinlogTable::new(
            "shop",
            "items",
            7,
            vec![
                col("id", BinlogType::BigInt).unsigned(),
                col(
                    "price",
                    BinlogType::Decimal {
                        precision: 10,
                        scale: 2,
                    },
                ),
                col(
                    "code",
                    BinlogType::Char {
                        len: 100,
                        charset: utf8,
                    },
                )
                .nullable(),
                col(
                    "name",
                    BinlogType::VarChar {
                        len: 50,
                        charset: utf8,
                    },
                ),
                col("w", BinlogType::Double).nullable(),
                col("at", BinlogType::DateTime { fsp: 3 }),
                col("raw", BinlogType::Blob { length_bytes: 2 }).nullable(),
                col("d", BinlogType::Date),
                col("b", BinlogType::Binary { len: 16 }),
            ],
        )
        .expect("valid")
        .with_primary_key(vec![0])
        .expect("valid key");
        let m = t.table_map();
        assert_eq!(m.column_types, vec![8, 246, 254, 15, 5, 18, 252, 10, 254]);
        // CHAR(100) utf8mb4 = 400 bytes = 0x190: 254 ^ (0x100 >> 4) = 0xee, then 0x90.
        assert_eq!(
            m.metadata,
            vec![10, 2, 0xee, 0x90, 200, 0, 8, 3, 2, 254, 16]
        );
        assert_eq!(m.null_bitmap, vec![0b0101_0100, 0]);
        // Signedness of id, price, w (unsigned id first, MSB first), then charsets: four
        // string columns (code, name: 45; raw, b: 63), default 45 (ties go to the later
        // candidate), then names, then the key.
        let o = &m.optional_metadata;
        assert_eq!(&o[..3], &[OPT_SIGNEDNESS, 1, 0x80]);
        assert_eq!(&o[3..10], &[OPT_DEFAULT_CHARSET, 5, 45, 2, 63, 3, 63]);
        assert_eq!(o[10], OPT_COLUMN_NAME);
        assert!(o.ends_with(&[OPT_SIMPLE_PRIMARY_KEY, 1, 0]));
    }

    #[test]
    fn bad_tables_are_refused_by_name() {
        let ok = || vec![col("a", BinlogType::Int)];
        let cases: Vec<(Result<BinlogTable>, &str)> = vec![
            (BinlogTable::new("", "t", 1, ok()), "database name"),
            (BinlogTable::new("d", "t", 1 << 48, ok()), "table id"),
            (BinlogTable::new("d", "t", 1, vec![]), "columns"),
            (
                BinlogTable::new("d", "t", 1, vec![col("a", BinlogType::Int); 2]),
                "appears twice",
            ),
            (
                BinlogTable::new(
                    "d",
                    "t",
                    1,
                    vec![col(
                        "a",
                        BinlogType::Decimal {
                            precision: 66,
                            scale: 0,
                        },
                    )],
                ),
                "DECIMAL(66,0)",
            ),
            (
                BinlogTable::new("d", "t", 1, vec![col("a", BinlogType::DateTime { fsp: 7 })]),
                "at most 6",
            ),
            (
                BinlogTable::new(
                    "d",
                    "t",
                    1,
                    vec![col(
                        "a",
                        BinlogType::VarChar {
                            len: 20000,
                            charset: BinlogCharset::Utf8mb4,
                        },
                    )],
                ),
                "80000 bytes",
            ),
        ];
        for (r, want) in cases {
            let e = r.expect_err(want).to_string();
            assert!(e.contains(want), "{e} lacks {want}");
        }
        let t = BinlogTable::new("d", "t", 1, ok()).expect("valid");
        assert!(t.with_primary_key(vec![1]).is_err());
    }
}
