//! Column definitions (<https://mariadb.com/kb/en/result-set-packets/#column-definition-packet>)
//! from the SQL layer's [`ColumnMeta`]: catalog `def`, schema, table, original table, name,
//! original name (each a length-encoded string), `0x0C` (the length of the fixed fields),
//! character set u16, length u32, type u8, flags u16, decimals u8, two zero bytes.
//!
//! Written here, not by `mysql_common`'s `Column` serializer: its 0.38 version writes the
//! length before the character set (its reader has them the right way round), which every
//! client would misread.
//!
//! The rules:
//! - character set: 45 (`utf8mb4_general_ci`) for character strings, 63 (`binary`) for
//!   numbers, dates and binary strings;
//! - length: bytes, so a character column's length in characters is multiplied by 4 (the
//!   longest utf8mb4 character); 0 from the SQL layer means "use the type's display width";
//! - decimals: FLOAT and DOUBLE without a known scale say 31 (`NOT_FIXED_DEC`), as MariaDB
//!   does for expressions, so clients print them in full;
//! - flags: NOT_NULL, PRI_KEY, AUTO_INCREMENT, UNSIGNED, BINARY, BLOB, and NUM for numbers.

use mysql_common::constants::{ColumnFlags, ColumnType};
use mysql_common::packets::Column;

use super::ok_err_eof::put_lenenc_bytes;

use crate::sql::{ColumnKind, ColumnMeta};

/// Collation id of `utf8mb4_general_ci`.
pub(crate) const UTF8MB4_GENERAL_CI: u8 = 45;
/// Collation id of `binary`.
pub(crate) const BINARY_COLLATION: u16 = 63;
/// "The number of decimals is not fixed" (MariaDB's `NOT_FIXED_DEC`).
const NOT_FIXED_DEC: u8 = 31;

/// The protocol type of a column kind.
pub(crate) fn column_type(kind: ColumnKind) -> ColumnType {
    match kind {
        ColumnKind::Tiny => ColumnType::MYSQL_TYPE_TINY,
        ColumnKind::Short => ColumnType::MYSQL_TYPE_SHORT,
        ColumnKind::Int24 => ColumnType::MYSQL_TYPE_INT24,
        ColumnKind::Long => ColumnType::MYSQL_TYPE_LONG,
        ColumnKind::LongLong => ColumnType::MYSQL_TYPE_LONGLONG,
        ColumnKind::Float => ColumnType::MYSQL_TYPE_FLOAT,
        ColumnKind::Double => ColumnType::MYSQL_TYPE_DOUBLE,
        ColumnKind::NewDecimal => ColumnType::MYSQL_TYPE_NEWDECIMAL,
        ColumnKind::String => ColumnType::MYSQL_TYPE_STRING,
        ColumnKind::VarString => ColumnType::MYSQL_TYPE_VAR_STRING,
        ColumnKind::Blob => ColumnType::MYSQL_TYPE_BLOB,
        ColumnKind::Date => ColumnType::MYSQL_TYPE_DATE,
        ColumnKind::DateTime => ColumnType::MYSQL_TYPE_DATETIME,
        ColumnKind::Timestamp => ColumnType::MYSQL_TYPE_TIMESTAMP,
        ColumnKind::Null => ColumnType::MYSQL_TYPE_NULL,
        // `ColumnKind` is non-exhaustive: a kind added later travels as a string until it
        // gets its own mapping.
        #[allow(unreachable_patterns)] // Within this crate the match is exhaustive today.
        _ => ColumnType::MYSQL_TYPE_VAR_STRING,
    }
}

/// Whether a kind is numeric (NUM_FLAG).
fn is_number(kind: ColumnKind) -> bool {
    matches!(
        kind,
        ColumnKind::Tiny
            | ColumnKind::Short
            | ColumnKind::Int24
            | ColumnKind::Long
            | ColumnKind::LongLong
            | ColumnKind::Float
            | ColumnKind::Double
            | ColumnKind::NewDecimal
    )
}

/// The display width in characters a kind has when the SQL layer gives none.
fn default_length(meta: &ColumnMeta) -> u32 {
    let frac = u32::from(meta.decimals);
    match meta.kind {
        ColumnKind::Tiny => 4,
        ColumnKind::Short => 6,
        ColumnKind::Int24 => 9,
        ColumnKind::Long => 11,
        ColumnKind::LongLong => 20,
        ColumnKind::Float => 12,
        ColumnKind::Double => 22,
        ColumnKind::NewDecimal => 65 + 2,
        ColumnKind::Date => 10,
        ColumnKind::DateTime | ColumnKind::Timestamp => 19 + if frac > 0 { frac + 1 } else { 0 },
        ColumnKind::Blob => 65_535,
        ColumnKind::Null => 0,
        _ => 255,
    }
}

/// The column flags of `meta`.
pub(crate) fn column_flags(meta: &ColumnMeta) -> ColumnFlags {
    let mut f = ColumnFlags::empty();
    f.set(ColumnFlags::NOT_NULL_FLAG, meta.not_null);
    f.set(ColumnFlags::PRI_KEY_FLAG, meta.primary_key);
    f.set(ColumnFlags::AUTO_INCREMENT_FLAG, meta.auto_increment);
    f.set(ColumnFlags::UNSIGNED_FLAG, meta.unsigned);
    f.set(ColumnFlags::BINARY_FLAG, meta.binary);
    f.set(ColumnFlags::BLOB_FLAG, meta.kind == ColumnKind::Blob);
    f.set(ColumnFlags::NUM_FLAG, is_number(meta.kind));
    f
}

/// The `mysql_common` column definition of `meta`.
pub(crate) fn column(meta: &ColumnMeta) -> Column {
    let charset = if meta.binary {
        BINARY_COLLATION
    } else {
        u16::from(UTF8MB4_GENERAL_CI)
    };
    let chars = if meta.length == 0 {
        default_length(meta)
    } else {
        meta.length
    };
    let length = if meta.binary {
        chars
    } else {
        chars.saturating_mul(4)
    };
    let decimals = match meta.kind {
        ColumnKind::Float | ColumnKind::Double if meta.decimals == 0 => NOT_FIXED_DEC,
        _ => meta.decimals,
    };
    Column::new(column_type(meta.kind))
        .with_schema(meta.schema.as_bytes())
        .with_table(meta.table.as_bytes())
        .with_org_table(meta.table.as_bytes())
        .with_name(meta.name.as_bytes())
        .with_org_name(meta.org_name.as_bytes())
        .with_character_set(charset)
        .with_column_length(length)
        .with_flags(column_flags(meta))
        .with_decimals(decimals)
}

/// A column definition packet for `meta`.
pub(crate) fn column_definition(meta: &ColumnMeta) -> Vec<u8> {
    let c = column(meta);
    let mut buf = Vec::with_capacity(64);
    put_lenenc_bytes(&mut buf, b"def");
    for part in [
        c.schema_ref(),
        c.table_ref(),
        c.org_table_ref(),
        c.name_ref(),
        c.org_name_ref(),
    ] {
        put_lenenc_bytes(&mut buf, part);
    }
    buf.push(0x0C);
    buf.extend_from_slice(&c.character_set().to_le_bytes());
    buf.extend_from_slice(&c.column_length().to_le_bytes());
    buf.push(c.column_type() as u8);
    buf.extend_from_slice(&c.flags().bits().to_le_bytes());
    buf.push(c.decimals());
    buf.extend_from_slice(&[0, 0]);
    buf
}

/// A column definition for COM_FIELD_LIST: the same, followed by the column's default value
/// (sent as NULL, `0xFB`: the seam does not carry defaults).
pub(crate) fn field_list_definition(meta: &ColumnMeta) -> Vec<u8> {
    let mut buf = column_definition(meta);
    buf.push(0xFB);
    buf
}

/// The definition sent for each `?` of a prepared statement (its type is not known until
/// the client binds one).
pub(crate) fn param_definition() -> Vec<u8> {
    let mut meta = ColumnMeta::expr("?", ColumnKind::VarString);
    meta.binary = true;
    column_definition(&meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mysql_common::io::ParseBuf;

    fn read_back(meta: &ColumnMeta) -> Column {
        let bytes = column_definition(meta);
        ParseBuf(&bytes).parse::<Column>(()).unwrap()
    }

    #[test]
    fn table_driven_definitions() {
        // (kind, binary, unsigned, length, decimals) -> (type, charset, length, decimals)
        let cases = [
            (
                ColumnKind::Long,
                true,
                false,
                0,
                0,
                ColumnType::MYSQL_TYPE_LONG,
                63,
                11,
                0,
            ),
            (
                ColumnKind::LongLong,
                true,
                true,
                20,
                0,
                ColumnType::MYSQL_TYPE_LONGLONG,
                63,
                20,
                0,
            ),
            (
                ColumnKind::Double,
                true,
                false,
                0,
                0,
                ColumnType::MYSQL_TYPE_DOUBLE,
                63,
                22,
                31,
            ),
            (
                ColumnKind::Float,
                true,
                false,
                12,
                2,
                ColumnType::MYSQL_TYPE_FLOAT,
                63,
                12,
                2,
            ),
            (
                ColumnKind::NewDecimal,
                true,
                false,
                12,
                2,
                ColumnType::MYSQL_TYPE_NEWDECIMAL,
                63,
                12,
                2,
            ),
            (
                ColumnKind::String,
                false,
                false,
                120,
                0,
                ColumnType::MYSQL_TYPE_STRING,
                45,
                480,
                0,
            ),
            (
                ColumnKind::VarString,
                true,
                false,
                16,
                0,
                ColumnType::MYSQL_TYPE_VAR_STRING,
                63,
                16,
                0,
            ),
            (
                ColumnKind::Date,
                true,
                false,
                0,
                0,
                ColumnType::MYSQL_TYPE_DATE,
                63,
                10,
                0,
            ),
            (
                ColumnKind::DateTime,
                true,
                false,
                0,
                6,
                ColumnType::MYSQL_TYPE_DATETIME,
                63,
                26,
                6,
            ),
        ];
        for (kind, binary, unsigned, length, decimals, ty, cs, len, dec) in cases {
            let mut m = ColumnMeta::expr("c", kind);
            m.binary = binary;
            m.unsigned = unsigned;
            m.length = length;
            m.decimals = decimals;
            let c = read_back(&m);
            assert_eq!(c.column_type(), ty, "{kind:?}");
            assert_eq!(c.character_set(), cs, "{kind:?}");
            assert_eq!(c.column_length(), len, "{kind:?}");
            assert_eq!(c.decimals(), dec, "{kind:?}");
            assert_eq!(c.flags().contains(ColumnFlags::UNSIGNED_FLAG), unsigned);
            assert_eq!(c.flags().contains(ColumnFlags::BINARY_FLAG), binary);
        }
    }

    #[test]
    fn key_flags_and_names() {
        let m = ColumnMeta {
            schema: "db".into(),
            table: "t".into(),
            name: "id_alias".into(),
            org_name: "id".into(),
            kind: ColumnKind::LongLong,
            length: 20,
            decimals: 0,
            unsigned: false,
            not_null: true,
            primary_key: true,
            auto_increment: true,
            binary: true,
        };
        let c = read_back(&m);
        let f = c.flags();
        assert!(f.contains(
            ColumnFlags::NOT_NULL_FLAG
                | ColumnFlags::PRI_KEY_FLAG
                | ColumnFlags::AUTO_INCREMENT_FLAG
                | ColumnFlags::NUM_FLAG
        ));
        assert_eq!(c.schema_str(), "db");
        assert_eq!(c.table_str(), "t");
        assert_eq!(c.name_str(), "id_alias");
        assert_eq!(c.org_name_str(), "id");
        assert_eq!(*field_list_definition(&m).last().unwrap(), 0xFB);
    }
}
