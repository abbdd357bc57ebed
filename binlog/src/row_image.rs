//! Full row images of a [`BinlogTable`] (`binlog_row_image=FULL`): a null bitmap of every
//! column (bit set: NULL; unused bits set, as MariaDB writes them), then each non-NULL
//! value packed as MariaDB's `Field::pack` does (`sql/field.cc`): integers, `FLOAT` and
//! `DOUBLE` little-endian; `DECIMAL` in its binary form; `CHAR`/`BINARY` with a 1-byte
//! length (2 bytes past 255 bytes), `CHAR` without trailing spaces; `VARCHAR`/`VARBINARY`
//! with a 1- or 2-byte length (2 when the column can exceed 255 bytes); `TEXT`/`BLOB` with a
//! little-endian length of the type's size; temporal types as in `temporal.rs`.

use crate::decimal;
use crate::error::{DecodeError, Error, Result};
use crate::rows::{RowsEvent, RowsKind};
use crate::table::{BinlogCharset, BinlogColumn, BinlogTable, BinlogType};
use crate::temporal;
use crate::value::BinlogValue;
use crate::wire::Cursor;

/// Range of a signed integer column of `bytes` bytes.
fn signed_range(bytes: u32) -> (i64, i64) {
    let shift = 64 - bytes * 8;
    (i64::MIN >> shift, i64::MAX >> shift)
}

/// Largest value of an unsigned integer column of `bytes` bytes.
fn unsigned_max(bytes: u32) -> u64 {
    if bytes == 8 {
        u64::MAX
    } else {
        (1u64 << (bytes * 8)) - 1
    }
}

fn int_bytes(kind: &BinlogType) -> Option<u32> {
    match kind {
        BinlogType::TinyInt => Some(1),
        BinlogType::SmallInt => Some(2),
        BinlogType::MediumInt => Some(3),
        BinlogType::Int => Some(4),
        BinlogType::BigInt => Some(8),
        _ => None,
    }
}

/// Appends `v` as little-endian `n` bytes.
fn put_le(out: &mut Vec<u8>, v: u64, n: u32) {
    out.extend_from_slice(&v.to_le_bytes()[..n as usize]);
}

/// Appends a length prefix of `n` bytes.
fn put_len(out: &mut Vec<u8>, len: usize, n: u32) -> std::result::Result<(), String> {
    if n < 8 && (len as u64) > unsigned_max(n) {
        return Err(format!("{len} bytes exceed the {n}-byte length prefix"));
    }
    put_le(out, len as u64, n);
    Ok(())
}

/// Appends one non-NULL value of `col`, or says why it does not fit.
fn put_value(
    col: &BinlogColumn,
    v: &BinlogValue,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    let wrong = || {
        format!(
            "a {} value does not go in a {:?} column",
            v.kind_name(),
            col.kind
        )
    };
    if let Some(n) = int_bytes(&col.kind) {
        if col.unsigned {
            let x = match *v {
                BinlogValue::UInt(x) => x,
                BinlogValue::Int(x) => u64::try_from(x)
                    .map_err(|_| format!("{x} is negative in an UNSIGNED column"))?,
                _ => return Err(wrong()),
            };
            if x > unsigned_max(n) {
                return Err(format!("{x} is out of range (max {})", unsigned_max(n)));
            }
            put_le(out, x, n);
        } else {
            let x = match *v {
                BinlogValue::Int(x) => x,
                BinlogValue::UInt(x) => {
                    i64::try_from(x).map_err(|_| format!("{x} is out of range"))?
                }
                _ => return Err(wrong()),
            };
            let (lo, hi) = signed_range(n);
            if x < lo || x > hi {
                return Err(format!("{x} is out of range ({lo}..={hi})"));
            }
            put_le(out, x as u64, n);
        }
        return Ok(());
    }
    match (&col.kind, v) {
        (BinlogType::Decimal { precision, scale }, BinlogValue::Decimal(text)) => {
            if col.unsigned
                && text.starts_with('-')
                && text.bytes().any(|b| (b'1'..=b'9').contains(&b))
            {
                return Err(format!("{text} is negative in an UNSIGNED column"));
            }
            decimal::encode(text, *precision, *scale, out)
        }
        (BinlogType::Float, BinlogValue::Float(x)) => {
            if !x.is_finite() || (col.unsigned && *x < 0.0) {
                return Err(format!("{x} does not fit the column"));
            }
            out.extend_from_slice(&x.to_le_bytes());
            Ok(())
        }
        (BinlogType::Double, BinlogValue::Double(x)) => {
            if !x.is_finite() || (col.unsigned && *x < 0.0) {
                return Err(format!("{x} does not fit the column"));
            }
            out.extend_from_slice(&x.to_le_bytes());
            Ok(())
        }
        (BinlogType::Char { len, charset }, BinlogValue::Bytes(b))
        | (BinlogType::VarChar { len, charset }, BinlogValue::Bytes(b)) => {
            let chars = charset.char_count(b)?;
            if chars > usize::from(*len) {
                return Err(format!("{chars} characters, the column holds {len}"));
            }
            let max = col.kind.max_bytes().unwrap_or(0);
            let b = if matches!(col.kind, BinlogType::Char { .. }) {
                trim_spaces(b)
            } else {
                b
            };
            put_len(out, b.len(), if max > 255 { 2 } else { 1 })?;
            out.extend_from_slice(b);
            Ok(())
        }
        (BinlogType::Binary { len }, BinlogValue::Bytes(b)) => {
            let len = usize::from(*len);
            if b.len() > len {
                return Err(format!("{} bytes, the column holds {len}", b.len()));
            }
            // BINARY(n) holds n bytes, padded with zero bytes (n <= 255: 1-byte length).
            put_len(out, len, 1)?;
            out.extend_from_slice(b);
            out.resize(out.len() + len - b.len(), 0);
            Ok(())
        }
        (BinlogType::VarBinary { len }, BinlogValue::Bytes(b)) => {
            if b.len() > usize::from(*len) {
                return Err(format!("{} bytes, the column holds {len}", b.len()));
            }
            put_len(out, b.len(), if *len > 255 { 2 } else { 1 })?;
            out.extend_from_slice(b);
            Ok(())
        }
        (
            BinlogType::Text {
                length_bytes,
                charset,
            },
            BinlogValue::Bytes(b),
        ) => {
            charset.char_count(b)?;
            put_len(out, b.len(), u32::from(*length_bytes))?;
            out.extend_from_slice(b);
            Ok(())
        }
        (BinlogType::Blob { length_bytes }, BinlogValue::Bytes(b)) => {
            put_len(out, b.len(), u32::from(*length_bytes))?;
            out.extend_from_slice(b);
            Ok(())
        }
        (BinlogType::Date, BinlogValue::Date(d)) => {
            d.check()?;
            temporal::put_date(out, d);
            Ok(())
        }
        (BinlogType::DateTime { fsp }, BinlogValue::DateTime(t)) => {
            t.check()?;
            temporal::check_micros(t.micros, *fsp)?;
            temporal::put_datetime(out, t, *fsp);
            Ok(())
        }
        (BinlogType::Timestamp { fsp }, BinlogValue::Timestamp { seconds, micros }) => {
            temporal::check_micros(*micros, *fsp)?;
            temporal::put_timestamp(out, *seconds, *micros, *fsp);
            Ok(())
        }
        _ => Err(wrong()),
    }
}

/// `b` without trailing spaces (how `CHAR` values are stored).
fn trim_spaces(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    &b[..end]
}

impl BinlogTable {
    /// Appends the full row image of `row` (one value per column, in table order).
    ///
    /// # Errors
    /// [`Error::BadValue`] naming the table and column: a row of the wrong length, NULL in a
    /// `NOT NULL` column, a value of the wrong kind or out of the column's range (see
    /// [`BinlogValue`]). Nothing is appended then.
    pub fn encode_row(&self, row: &[BinlogValue], out: &mut Vec<u8>) -> Result<()> {
        let bad = |column: String, reason: String| Error::BadValue {
            table: format!("{}.{}", self.database(), self.table()),
            column,
            reason,
        };
        let columns = self.columns();
        if row.len() != columns.len() {
            return Err(bad(
                format!("#{}", row.len()),
                format!("{} values for {} columns", row.len(), columns.len()),
            ));
        }
        let start = out.len();
        let nbytes = columns.len().div_ceil(8);
        // Every bit set, then cleared for each non-NULL column.
        out.resize(start + nbytes, 0xff);
        for (i, (col, v)) in columns.iter().zip(row).enumerate() {
            if *v == BinlogValue::Null {
                if !col.nullable {
                    out.truncate(start);
                    return Err(bad(
                        col.name.clone(),
                        "NULL in a NOT NULL column".to_string(),
                    ));
                }
                continue;
            }
            out[start + i / 8] &= !(1 << (i % 8));
            if let Err(reason) = put_value(col, v, out) {
                out.truncate(start);
                return Err(bad(col.name.clone(), reason));
            }
        }
        Ok(())
    }

    /// Reads one full row image from the front of `bytes`: the values and the bytes used.
    ///
    /// # Errors
    /// [`DecodeError::Malformed`] when the image is cut short or holds a value the column
    /// cannot (a bad date, a `DECIMAL` group out of range, text that is not in the
    /// column's character set).
    pub fn decode_row(
        &self,
        bytes: &[u8],
    ) -> std::result::Result<(Vec<BinlogValue>, usize), DecodeError> {
        let mut c = Cursor::new(bytes, "Rows");
        let nbytes = self.columns().len().div_ceil(8);
        let nulls = c.take(nbytes, "row null bitmap past the end")?.to_vec();
        let mut row = Vec::with_capacity(self.columns().len());
        for (i, col) in self.columns().iter().enumerate() {
            if nulls[i / 8] & (1 << (i % 8)) != 0 {
                row.push(BinlogValue::Null);
            } else {
                row.push(get_value(col, &mut c)?);
            }
        }
        let used = bytes.len() - c.remaining();
        Ok((row, used))
    }
}

fn get_value(
    col: &BinlogColumn,
    c: &mut Cursor<'_>,
) -> std::result::Result<BinlogValue, DecodeError> {
    if let Some(n) = int_bytes(&col.kind) {
        let raw = c.uint(n as usize, "integer past the end")?;
        return Ok(if col.unsigned {
            BinlogValue::UInt(raw)
        } else {
            // Sign-extend from n bytes.
            let shift = 64 - n * 8;
            BinlogValue::Int(((raw << shift) as i64) >> shift)
        });
    }
    let len_prefixed = |c: &mut Cursor<'_>, n: u32| -> std::result::Result<Vec<u8>, DecodeError> {
        let len = c.uint(n as usize, "length past the end")?;
        let len = usize::try_from(len).map_err(|_| c.malformed("length"))?;
        Ok(c.take(len, "value past the end")?.to_vec())
    };
    let text = |c: &Cursor<'_>, b: Vec<u8>, charset: BinlogCharset| {
        charset
            .char_count(&b)
            .map(|_| BinlogValue::Bytes(b))
            .map_err(|_| c.malformed("text not in the column's character set"))
    };
    Ok(match col.kind {
        BinlogType::Decimal { precision, scale } => {
            let b = c.take(decimal::bin_size(precision, scale), "decimal past the end")?;
            BinlogValue::Decimal(
                decimal::decode(b, precision, scale).map_err(|_| c.malformed("decimal digits"))?,
            )
        }
        BinlogType::Float => {
            let b = c.take(4, "float past the end")?;
            BinlogValue::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        BinlogType::Double => {
            let b = c.take(8, "double past the end")?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            BinlogValue::Double(f64::from_le_bytes(a))
        }
        BinlogType::Char { charset, .. } | BinlogType::VarChar { charset, .. } => {
            let n = if col.kind.max_bytes().unwrap_or(0) > 255 {
                2
            } else {
                1
            };
            let b = len_prefixed(c, n)?;
            text(c, b, charset)?
        }
        BinlogType::Binary { .. } => BinlogValue::Bytes(len_prefixed(c, 1)?),
        BinlogType::VarBinary { len } => {
            BinlogValue::Bytes(len_prefixed(c, if len > 255 { 2 } else { 1 })?)
        }
        BinlogType::Text {
            length_bytes,
            charset,
        } => {
            let b = len_prefixed(c, u32::from(length_bytes))?;
            text(c, b, charset)?
        }
        BinlogType::Blob { length_bytes } => {
            BinlogValue::Bytes(len_prefixed(c, u32::from(length_bytes))?)
        }
        BinlogType::Date => {
            let b = c.take(3, "date past the end")?;
            BinlogValue::Date(temporal::get_date(b).map_err(|_| c.malformed("date out of range"))?)
        }
        BinlogType::DateTime { fsp } => {
            let b = c.take(5 + temporal::frac_len(fsp), "datetime past the end")?;
            BinlogValue::DateTime(
                temporal::get_datetime(b, fsp).map_err(|_| c.malformed("datetime out of range"))?,
            )
        }
        BinlogType::Timestamp { fsp } => {
            let b = c.take(4 + temporal::frac_len(fsp), "timestamp past the end")?;
            let (seconds, micros) =
                temporal::get_timestamp(b, fsp).map_err(|_| c.malformed("timestamp fraction"))?;
            BinlogValue::Timestamp { seconds, micros }
        }
        // Integers were handled above.
        BinlogType::TinyInt
        | BinlogType::SmallInt
        | BinlogType::MediumInt
        | BinlogType::Int
        | BinlogType::BigInt => {
            return Err(c.malformed("integer column"));
        }
    })
}

impl RowsEvent {
    /// Decodes the full row images of a rows event of `table`: one row per image, and for
    /// an Update (before, after) pairs as consecutive rows.
    ///
    /// # Errors
    /// [`DecodeError::Malformed`] when the event is not of `table` (its id or column count
    /// differ), an image is not full, or an image does not decode.
    pub fn table_rows(
        &self,
        table: &BinlogTable,
    ) -> std::result::Result<Vec<Vec<BinlogValue>>, DecodeError> {
        let c = Cursor::new(&self.rows, "Rows");
        let n = table.columns().len();
        if self.table_id != table.table_id() || self.column_count != n as u64 {
            return Err(c.malformed("rows event of another table"));
        }
        let full = full_bitmap(n);
        let after_full =
            self.kind != RowsKind::Update || self.columns_after.as_deref() == Some(&full[..]);
        if self.columns_present != full || !after_full {
            return Err(c.malformed("not a full row image"));
        }
        let mut out = Vec::new();
        let mut at = 0;
        while at < self.rows.len() {
            let (row, used) = table.decode_row(&self.rows[at..])?;
            out.push(row);
            at += used;
        }
        Ok(out)
    }
}

/// The columns-present bitmap of every one of `n` columns (unused bits clear).
pub(crate) fn full_bitmap(n: usize) -> Vec<u8> {
    let mut v = vec![0xffu8; n.div_ceil(8)];
    if !n.is_multiple_of(8)
        && let Some(last) = v.last_mut()
    {
        *last = (1u8 << (n % 8)) - 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{BinlogDate, BinlogDateTime};

    fn table(columns: Vec<BinlogColumn>) -> BinlogTable {
        BinlogTable::new("d", "t", 9, columns).expect("valid")
    }

    #[test]
    fn known_images() {
        let t = table(vec![
            BinlogColumn::new("id", BinlogType::Int),
            BinlogColumn::new(
                "name",
                BinlogType::VarChar {
                    len: 10,
                    charset: BinlogCharset::Utf8mb4,
                },
            )
            .nullable(),
            BinlogColumn::new(
                "c",
                BinlogType::Char {
                    len: 4,
                    charset: BinlogCharset::Latin1,
                },
            ),
            BinlogColumn::new("b", BinlogType::Binary { len: 3 }),
            BinlogColumn::new("n", BinlogType::SmallInt).unsigned(),
        ]);
        let mut out = Vec::new();
        t.encode_row(
            &[
                BinlogValue::Int(-2),
                BinlogValue::Null,
                BinlogValue::text("ab  "),
                BinlogValue::Bytes(vec![1]),
                BinlogValue::UInt(65535),
            ],
            &mut out,
        )
        .expect("fits");
        assert_eq!(
            out,
            vec![
                0b1110_0010, // five columns: name NULL, unused bits set
                0xfe,
                0xff,
                0xff,
                0xff, // -2
                2,
                b'a',
                b'b', // CHAR without trailing spaces
                3,
                1,
                0,
                0, // BINARY(3) padded
                0xff,
                0xff,
            ]
        );
        let (row, used) = t.decode_row(&out).expect("decodes");
        assert_eq!(used, out.len());
        assert_eq!(row[0], BinlogValue::Int(-2));
        assert_eq!(row[1], BinlogValue::Null);
        assert_eq!(row[2], BinlogValue::text("ab"));
        assert_eq!(row[4], BinlogValue::UInt(65535));
    }

    #[test]
    fn bad_values_name_their_column_and_append_nothing() {
        let utf8 = BinlogCharset::Utf8mb4;
        let t = table(vec![
            BinlogColumn::new("a", BinlogType::TinyInt),
            BinlogColumn::new("u", BinlogType::Int).unsigned(),
            BinlogColumn::new(
                "s",
                BinlogType::VarChar {
                    len: 2,
                    charset: utf8,
                },
            ),
            BinlogColumn::new("at", BinlogType::DateTime { fsp: 0 }),
            BinlogColumn::new("f", BinlogType::Double),
        ]);
        let good = || {
            vec![
                BinlogValue::Int(1),
                BinlogValue::UInt(1),
                BinlogValue::text("éé"),
                BinlogValue::DateTime(BinlogDateTime::new(BinlogDate::new(2020, 1, 1), 0, 0, 0, 0)),
                BinlogValue::Double(1.5),
            ]
        };
        let mut out = vec![7];
        t.encode_row(&good(), &mut out).expect("fits");
        let cases: Vec<(usize, BinlogValue, &str)> = vec![
            (0, BinlogValue::Int(128), "out of range"),
            (0, BinlogValue::Null, "NOT NULL"),
            (1, BinlogValue::Int(-1), "negative"),
            (1, BinlogValue::UInt(1 << 32), "out of range"),
            (2, BinlogValue::text("abc"), "3 characters"),
            (2, BinlogValue::Bytes(vec![0xff]), "not UTF-8"),
            (
                3,
                BinlogValue::DateTime(BinlogDateTime::new(BinlogDate::new(2020, 1, 1), 0, 0, 0, 5)),
                "fractional",
            ),
            (4, BinlogValue::Double(f64::NAN), "does not fit"),
            (4, BinlogValue::Int(1), "does not go in"),
        ];
        for (i, v, want) in cases {
            let mut row = good();
            row[i] = v;
            let mut out = vec![7];
            let e = t.encode_row(&row, &mut out).expect_err(want);
            let name = &t.columns()[i].name;
            match &e {
                Error::BadValue { column, reason, .. } => {
                    assert_eq!(column, name);
                    assert!(reason.contains(want), "{reason} lacks {want}");
                }
                other => panic!("{other}"),
            }
            assert_eq!(out, vec![7], "nothing appended on error");
        }
        let e = t.encode_row(&good()[..2], &mut out).expect_err("short row");
        assert!(e.to_string().contains("2 values for 5 columns"));
    }

    #[test]
    fn full_bitmaps_clear_unused_bits() {
        assert_eq!(full_bitmap(1), vec![0x01]);
        assert_eq!(full_bitmap(8), vec![0xff]);
        assert_eq!(full_bitmap(9), vec![0xff, 0x01]);
    }
}
