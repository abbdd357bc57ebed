//! [`ColumnMeta`]: what a result column is, as a MySQL column definition describes it.

/// A column's type as the MySQL protocol names it (`MYSQL_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnKind {
    /// TINYINT.
    Tiny,
    /// SMALLINT.
    Short,
    /// MEDIUMINT.
    Int24,
    /// INT.
    Long,
    /// BIGINT.
    LongLong,
    /// FLOAT.
    Float,
    /// DOUBLE.
    Double,
    /// DECIMAL.
    NewDecimal,
    /// CHAR and BINARY.
    String,
    /// VARCHAR and VARBINARY.
    VarString,
    /// TEXT and BLOB.
    Blob,
    /// DATE.
    Date,
    /// DATETIME.
    DateTime,
    /// TIMESTAMP.
    Timestamp,
    /// The type of a NULL literal.
    Null,
}

/// One column of a result set (or of a table, for COM_FIELD_LIST).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMeta {
    /// The database of the table it comes from ("" for an expression).
    pub schema: String,
    /// The table (or its alias) it comes from ("" for an expression).
    pub table: String,
    /// The column's name in the result (its alias, or the expression's text).
    pub name: String,
    /// The column's name in its table ("" for an expression).
    pub org_name: String,
    /// Its type.
    pub kind: ColumnKind,
    /// Display length in characters (MySQL's `length` field, before the charset factor).
    pub length: u32,
    /// Digits after the point (DECIMAL, DOUBLE), else 0.
    pub decimals: u8,
    /// UNSIGNED.
    pub unsigned: bool,
    /// NOT NULL.
    pub not_null: bool,
    /// Part of the primary key.
    pub primary_key: bool,
    /// AUTO_INCREMENT.
    pub auto_increment: bool,
    /// A binary string or a number (collation 63, `binary`), not a character string.
    pub binary: bool,
}

impl ColumnMeta {
    /// An expression column: no table, nullable, signed.
    pub fn expr(name: impl Into<String>, kind: ColumnKind) -> ColumnMeta {
        let binary = !matches!(
            kind,
            ColumnKind::String | ColumnKind::VarString | ColumnKind::Blob
        );
        ColumnMeta {
            schema: String::new(),
            table: String::new(),
            name: name.into(),
            org_name: String::new(),
            kind,
            length: 0,
            decimals: 0,
            unsigned: false,
            not_null: false,
            primary_key: false,
            auto_increment: false,
            binary,
        }
    }
}
