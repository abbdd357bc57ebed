//! The row value: `0x01` (the format's version), then per non-NULL column its id (varint),
//! a type tag and the payload. NULL columns are simply absent, so a column added later
//! reads as NULL (or its default) from older rows.
//!
//! Tags: 1 int (zigzag varint), 2 uint (varint), 3 double (8 bytes LE), 4 decimal (scale
//! byte, zigzag varint of the unscaled i128), 5 bytes (varint length, bytes), 6 date-time
//! (packed u64 LE; a DATE column reads it back as a date).

use crate::sql::value::{Decimal, Value};

const VERSION: u8 = 1;

/// A row value that does not decode: names the table and, when known, the column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("row of table `{table}` is damaged at column `{column}`: {detail}")]
pub struct RowError {
    /// The table.
    pub table: String,
    /// The column ("?" when its id is not the table's).
    pub column: String,
    /// What is wrong.
    pub detail: String,
}

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        #[allow(clippy::cast_possible_truncation)] // the low seven bits
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)] // < 0x80
    out.push(v as u8);
}

fn get_varint(b: &mut &[u8]) -> Option<u128> {
    let mut v: u128 = 0;
    for shift in (0..128).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        v |= u128::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

/// What decoding a row needs to know of its table.
pub trait RowShape {
    /// The table's name (for errors).
    fn table_name(&self) -> &str;
    /// How many columns it has.
    fn column_count(&self) -> usize;
    /// The id of the column at `pos`.
    fn column_id(&self, pos: usize) -> u32;
    /// The name of the column at `pos` (for errors).
    fn column_name(&self, pos: usize) -> &str;
    /// Whether the column at `pos` is a DATE (its date-times read back as dates).
    fn is_date(&self, pos: usize) -> bool;

    /// The position of the column with id `id`.
    fn position(&self, id: u128) -> Option<usize> {
        // Ids are usually 1, 2, ... in order: try that first.
        let guess = usize::try_from(id).ok()?.checked_sub(1)?;
        if guess < self.column_count() && u128::from(self.column_id(guess)) == id {
            return Some(guess);
        }
        (0..self.column_count()).find(|&p| u128::from(self.column_id(p)) == id)
    }
}

/// Encodes `values` of columns `ids` (one id per value, in the table's column order).
pub fn encode_row(ids: impl IntoIterator<Item = u32>, values: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + values.len() * 8);
    out.push(VERSION);
    for (id, v) in ids.into_iter().zip(values) {
        if *v == Value::Null {
            continue;
        }
        put_varint(&mut out, u128::from(id));
        match v {
            Value::Null => {}
            Value::Int(i) => {
                out.push(1);
                put_varint(&mut out, zigzag(i128::from(*i)));
            }
            Value::UInt(u) => {
                out.push(2);
                put_varint(&mut out, u128::from(*u));
            }
            Value::Double(f) => {
                out.push(3);
                out.extend_from_slice(&f.to_le_bytes());
            }
            Value::Decimal(d) => {
                out.push(4);
                out.push(d.scale);
                put_varint(&mut out, zigzag(d.digits));
            }
            Value::Bytes(b) => {
                out.push(5);
                put_varint(&mut out, b.len() as u128);
                out.extend_from_slice(b);
            }
            Value::Date { .. } | Value::DateTime { .. } => {
                out.push(6);
                let mut key = Vec::new();
                super::datum::encode_datum(&mut key, v);
                // The datum is flag + 8 bytes of packed time.
                out.extend_from_slice(&key[1..]);
            }
        }
    }
    out
}

/// Decodes a row of the table `shape` describes; absent columns are NULL.
///
/// # Errors
/// [`RowError`] naming the table and column when the bytes are damaged.
pub fn decode_row(shape: &impl RowShape, bytes: &[u8]) -> Result<Vec<Value>, RowError> {
    let err = |column: &str, detail: String| RowError {
        table: shape.table_name().to_owned(),
        column: column.to_owned(),
        detail,
    };
    let mut out = vec![Value::Null; shape.column_count()];
    let Some((&version, mut b)) = bytes.split_first() else {
        return Err(err("?", "empty value".into()));
    };
    if version != VERSION {
        return Err(err("?", format!("unknown row format version {version}")));
    }
    while !b.is_empty() {
        let id = get_varint(&mut b).ok_or_else(|| err("?", "column id truncated".into()))?;
        let pos = shape.position(id);
        let name = pos.map_or("?", |p| shape.column_name(p));
        let (&tag, rest) = b
            .split_first()
            .ok_or_else(|| err(name, "type tag missing".into()))?;
        b = rest;
        let short = || err(name, format!("payload of tag {tag} truncated"));
        let v = match tag {
            1 => {
                let z = unzigzag(get_varint(&mut b).ok_or_else(short)?);
                Value::Int(i64::try_from(z).map_err(|_| err(name, "int out of range".into()))?)
            }
            2 => Value::UInt(
                u64::try_from(get_varint(&mut b).ok_or_else(short)?)
                    .map_err(|_| err(name, "uint out of range".into()))?,
            ),
            3 => {
                let (f, rest) = b.split_first_chunk::<8>().ok_or_else(short)?;
                b = rest;
                Value::Double(f64::from_le_bytes(*f))
            }
            4 => {
                let (&scale, rest) = b.split_first().ok_or_else(short)?;
                b = rest;
                Value::Decimal(Decimal {
                    digits: unzigzag(get_varint(&mut b).ok_or_else(short)?),
                    scale,
                })
            }
            5 => {
                let len =
                    usize::try_from(get_varint(&mut b).ok_or_else(short)?).map_err(|_| short())?;
                if b.len() < len {
                    return Err(short());
                }
                let (v, rest) = b.split_at(len);
                b = rest;
                Value::Bytes(v.to_vec())
            }
            6 => {
                let (t, rest) = b.split_first_chunk::<8>().ok_or_else(short)?;
                b = rest;
                let mut datum = vec![7u8];
                datum.extend_from_slice(t);
                let mut vs = super::datum::decode_datums(&datum).map_err(|e| err(name, e))?;
                vs.pop().ok_or_else(short)?
            }
            other => return Err(err(name, format!("unknown type tag {other}"))),
        };
        if let Some(p) = pos {
            out[p] = match (shape.is_date(p), v) {
                (
                    true,
                    Value::DateTime {
                        year, month, day, ..
                    },
                ) => Value::Date { year, month, day },
                (_, v) => v,
            };
        }
        // A column id the table no longer has (a dropped column) is skipped.
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A table of `names`, ids 1.., `dates` marking DATE columns.
    struct Shape {
        names: Vec<String>,
        dates: Vec<bool>,
    }

    impl RowShape for Shape {
        fn table_name(&self) -> &str {
            "t"
        }
        fn column_count(&self) -> usize {
            self.names.len()
        }
        fn column_id(&self, pos: usize) -> u32 {
            pos as u32 + 1
        }
        fn column_name(&self, pos: usize) -> &str {
            &self.names[pos]
        }
        fn is_date(&self, pos: usize) -> bool {
            self.dates[pos]
        }
    }

    fn shape(n: usize) -> Shape {
        Shape {
            names: (1..=n).map(|i| format!("c{i}")).collect(),
            dates: vec![false; n],
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Int),
            any::<u64>().prop_map(Value::UInt),
            any::<f64>()
                .prop_filter("nan", |f| !f.is_nan())
                .prop_map(Value::Double),
            (any::<i64>(), 0u8..30).prop_map(|(d, s)| Value::Decimal(Decimal {
                digits: i128::from(d) * 1_000_000,
                scale: s
            })),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
            (
                0u16..9999,
                1u8..13,
                1u8..32,
                0u8..24,
                0u8..60,
                0u8..60,
                0u32..1_000_000
            )
                .prop_map(|(year, month, day, hour, minute, second, micro)| {
                    Value::DateTime {
                        year,
                        month,
                        day,
                        hour,
                        minute,
                        second,
                        micro,
                    }
                }),
        ]
    }

    proptest! {
        #[test]
        fn rows_round_trip(values in proptest::collection::vec(value(), 0..12)) {
            let bytes = encode_row(1..=values.len() as u32, &values);
            prop_assert_eq!(decode_row(&shape(values.len()), &bytes).unwrap(), values);
        }

        #[test]
        fn damaged_rows_are_errors_not_panics(values in proptest::collection::vec(value(), 1..6), cut in 0usize..64) {
            let bytes = encode_row(1..=values.len() as u32, &values);
            let _ = decode_row(&shape(values.len()), &bytes[..cut.min(bytes.len())]);
        }
    }

    #[test]
    fn damage_names_table_and_column() {
        let bytes = encode_row([1, 2], &[Value::Int(1), Value::Bytes(b"abc".to_vec())]);
        let e = decode_row(&shape(2), &bytes[..bytes.len() - 1]).unwrap_err();
        assert_eq!(e.table, "t");
        assert_eq!(e.column, "c2");
        assert!(decode_row(&shape(1), &[9]).is_err());
    }

    #[test]
    fn absent_columns_are_null() {
        let bytes = encode_row([1], &[Value::Int(7)]);
        assert_eq!(
            decode_row(&shape(2), &bytes).unwrap(),
            vec![Value::Int(7), Value::Null]
        );
        // A DATE column reads its date-time back as a date.
        let dt = Value::DateTime {
            year: 2026,
            month: 12,
            day: 2,
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
        };
        let bytes = encode_row([1], &[dt]);
        let dated = Shape {
            names: vec!["d".into()],
            dates: vec![true],
        };
        assert_eq!(
            decode_row(&dated, &bytes).unwrap(),
            vec![Value::Date {
                year: 2026,
                month: 12,
                day: 2
            }]
        );
    }
}
