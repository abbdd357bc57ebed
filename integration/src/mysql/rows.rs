//! Result rows, text and binary (<https://mariadb.com/kb/en/resultset-row/>).
//!
//! - Text row: each value a length-encoded string, NULL as `0xFB`.
//! - Binary row (COM_STMT_EXECUTE): `00`, a NULL bitmap with a 2-bit offset, then each
//!   non-NULL value in its column type's binary form: TINY 1 byte, SHORT 2, INT24 and LONG 4,
//!   LONGLONG 8 (all little-endian), FLOAT an f32, DOUBLE an f64, DECIMAL and strings a
//!   length-encoded string, DATE/DATETIME/TIMESTAMP a length byte (0, 4, 7 or 11) then year
//!   u16, month, day, hour, minute, second, microseconds u32.
//!
//! The column's type decides the binary form, so a value of another variant (an `Int` in a
//! DOUBLE column) is converted; one that cannot be is a [`RowError`], never a wrong byte.

use mysql_common::packets::NullBitmap;
use mysql_common::proto::MySerialize;
use mysql_common::value::ServerSide;

use super::ok_err_eof::put_lenenc_bytes;
use crate::sql::{ColumnKind, ColumnMeta, Value};

/// A value the SQL layer returned that its column's type cannot carry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("mysql: column `{column}` ({kind:?}) cannot carry the value {value:?}")]
pub struct RowError {
    /// The column's name.
    pub column: String,
    /// The column's type.
    pub kind: ColumnKind,
    /// The value.
    pub value: Value,
}

/// A text-protocol row.
pub(crate) fn text_row(row: &[Value]) -> Vec<u8> {
    let mut buf = Vec::new();
    for v in row {
        match v.to_text() {
            Some(t) => put_lenenc_bytes(&mut buf, &t),
            None => buf.push(0xFB),
        }
    }
    buf
}

/// A binary-protocol row for `columns`.
///
/// # Errors
/// A value its column cannot carry, or a row whose length is not the column count.
pub fn binary_row(columns: &[ColumnMeta], row: &[Value]) -> Result<Vec<u8>, RowError> {
    if row.len() != columns.len() {
        return Err(RowError {
            column: format!(
                "<row of {} values for {} columns>",
                row.len(),
                columns.len()
            ),
            kind: ColumnKind::Null,
            value: Value::Null,
        });
    }
    let mut bitmap = NullBitmap::<ServerSide>::new(columns.len());
    for (i, v) in row.iter().enumerate() {
        if matches!(v, Value::Null) {
            bitmap.set(i, true);
        }
    }
    let mut buf = vec![0x00];
    buf.extend_from_slice(bitmap.as_ref());
    for (meta, v) in columns.iter().zip(row) {
        if !matches!(v, Value::Null) {
            put_binary_value(&mut buf, meta, v)?;
        }
    }
    Ok(buf)
}

/// Appends the binary form of non-NULL `v` in `meta`'s type.
fn put_binary_value(buf: &mut Vec<u8>, meta: &ColumnMeta, v: &Value) -> Result<(), RowError> {
    let bad = || RowError {
        column: meta.name.clone(),
        kind: meta.kind,
        value: v.clone(),
    };
    match meta.kind {
        ColumnKind::Tiny => put_int(buf, v, 1, meta.unsigned).ok_or_else(bad),
        ColumnKind::Short => put_int(buf, v, 2, meta.unsigned).ok_or_else(bad),
        ColumnKind::Int24 | ColumnKind::Long => put_int(buf, v, 4, meta.unsigned).ok_or_else(bad),
        ColumnKind::LongLong => put_int(buf, v, 8, meta.unsigned).ok_or_else(bad),
        ColumnKind::Float => {
            let f = as_f64(v).ok_or_else(bad)?;
            buf.extend_from_slice(&(f as f32).to_le_bytes());
            Ok(())
        }
        ColumnKind::Double => {
            let f = as_f64(v).ok_or_else(bad)?;
            buf.extend_from_slice(&f.to_le_bytes());
            Ok(())
        }
        ColumnKind::Date | ColumnKind::DateTime | ColumnKind::Timestamp => {
            let date_only = meta.kind == ColumnKind::Date;
            let mv = match *v {
                Value::Date { year, month, day } => {
                    mysql_common::Value::Date(year, month, day, 0, 0, 0, 0)
                }
                Value::DateTime {
                    year,
                    month,
                    day,
                    hour,
                    minute,
                    second,
                    micro,
                } if !date_only => {
                    mysql_common::Value::Date(year, month, day, hour, minute, second, micro)
                }
                Value::DateTime {
                    year, month, day, ..
                } => mysql_common::Value::Date(year, month, day, 0, 0, 0, 0),
                _ => return Err(bad()),
            };
            mv.serialize(buf);
            Ok(())
        }
        // DECIMAL travels as text in both protocols; strings as their bytes.
        _ => {
            let text = v.to_text().ok_or_else(bad)?;
            put_lenenc_bytes(buf, &text);
            Ok(())
        }
    }
}

/// Appends `v` as a `width`-byte little-endian integer, if it fits.
fn put_int(buf: &mut Vec<u8>, v: &Value, width: usize, unsigned: bool) -> Option<()> {
    let wide: i128 = match *v {
        Value::Int(i) => i128::from(i),
        Value::UInt(u) => i128::from(u),
        Value::Decimal(d) if d.scale == 0 => d.digits,
        _ => return None,
    };
    let bits = (width * 8) as u32;
    let fits = if unsigned {
        wide >= 0 && wide < (1i128 << bits)
    } else {
        wide >= -(1i128 << (bits - 1)) && wide < (1i128 << (bits - 1))
    };
    if !fits {
        return None;
    }
    buf.extend_from_slice(&wide.to_le_bytes()[..width]);
    Some(())
}

/// `v` as a double, for FLOAT and DOUBLE columns.
fn as_f64(v: &Value) -> Option<f64> {
    match *v {
        Value::Double(f) => Some(f),
        Value::Int(i) => Some(i as f64),
        Value::UInt(u) => Some(u as f64),
        Value::Decimal(d) => Some(d.digits as f64 / 10f64.powi(i32::from(d.scale))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mysql::columns::column;
    use crate::sql::Decimal;
    use mysql_common::io::ParseBuf;
    use mysql_common::row::RowDeserializer;

    fn col(kind: ColumnKind, unsigned: bool) -> ColumnMeta {
        let mut m = ColumnMeta::expr("c", kind);
        m.unsigned = unsigned;
        m
    }

    /// Encodes one row and reads it back with `mysql_common`'s client-side row reader.
    fn read_back(cols: &[ColumnMeta], row: &[Value]) -> Vec<mysql_common::Value> {
        let bytes = binary_row(cols, row).unwrap();
        let columns: std::sync::Arc<[_]> = cols.iter().map(column).collect();
        let r = ParseBuf(&bytes)
            .parse::<RowDeserializer<ServerSide, mysql_common::proto::Binary>>(columns)
            .unwrap();
        let r: mysql_common::Row = r.into();
        r.unwrap()
    }

    #[test]
    fn every_kind_reads_back() {
        use mysql_common::Value as M;
        let cols = [
            col(ColumnKind::Tiny, false),
            col(ColumnKind::Short, true),
            col(ColumnKind::Long, false),
            col(ColumnKind::LongLong, true),
            col(ColumnKind::Float, false),
            col(ColumnKind::Double, false),
            col(ColumnKind::NewDecimal, false),
            col(ColumnKind::VarString, false),
            col(ColumnKind::Date, false),
            col(ColumnKind::DateTime, false),
            col(ColumnKind::Blob, false),
        ];
        let row = [
            Value::Int(-5),
            Value::UInt(65_535),
            Value::Int(-70_000),
            Value::UInt(u64::MAX),
            Value::Double(1.5),
            Value::Int(3),
            Value::Decimal(Decimal {
                digits: -12345,
                scale: 2,
            }),
            Value::Bytes(b"hello".to_vec()),
            Value::Date {
                year: 2026,
                month: 12,
                day: 2,
            },
            Value::DateTime {
                year: 2026,
                month: 12,
                day: 2,
                hour: 1,
                minute: 2,
                second: 3,
                micro: 456,
            },
            Value::Null,
        ];
        let got = read_back(&cols, &row);
        assert_eq!(
            got,
            vec![
                M::Int(-5),
                M::Int(65_535),
                M::Int(-70_000),
                M::UInt(u64::MAX),
                M::Float(1.5),
                M::Double(3.0),
                M::Bytes(b"-123.45".to_vec()),
                M::Bytes(b"hello".to_vec()),
                M::Date(2026, 12, 2, 0, 0, 0, 0),
                M::Date(2026, 12, 2, 1, 2, 3, 456),
                M::NULL,
            ]
        );
    }

    #[test]
    fn values_that_do_not_fit_are_errors() {
        let cases = [
            (col(ColumnKind::Tiny, false), Value::Int(128)),
            (col(ColumnKind::Tiny, true), Value::Int(-1)),
            (col(ColumnKind::Long, false), Value::Bytes(b"x".to_vec())),
            (col(ColumnKind::Double, false), Value::Bytes(b"1".to_vec())),
            (col(ColumnKind::Date, false), Value::Int(1)),
        ];
        for (c, v) in cases {
            let err = binary_row(std::slice::from_ref(&c), std::slice::from_ref(&v)).unwrap_err();
            assert_eq!(err.value, v);
        }
        assert!(binary_row(&[col(ColumnKind::Long, false)], &[]).is_err());
    }

    #[test]
    fn text_rows() {
        let r = text_row(&[Value::Null, Value::Int(42), Value::Bytes(vec![])]);
        assert_eq!(r, [0xFB, 2, b'4', b'2', 0]);
    }
}
