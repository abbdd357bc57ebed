//! [`SqlType`]: a table column's declared type, and how a [`Value`] is stored into it
//! (MySQL's strict-mode conversions: a value that does not fit is an error, never clipped).

use serde::{Deserialize, Serialize};

use super::column::ColumnKind;
use super::output::SqlError;
use super::value::{Decimal, Value};

/// A column's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SqlType {
    /// TINYINT (1), SMALLINT (2), MEDIUMINT (3), INT (4), BIGINT (8) bytes.
    Int {
        /// Storage width in bytes.
        bytes: u8,
        /// UNSIGNED.
        unsigned: bool,
    },
    /// DECIMAL(precision, scale).
    Decimal {
        /// Total digits, 1..=38.
        precision: u8,
        /// Digits after the point, 0..=precision.
        scale: u8,
    },
    /// FLOAT.
    Float,
    /// DOUBLE.
    Double,
    /// CHAR(n): trailing spaces are not kept (MySQL strips them on read).
    Char(u32),
    /// VARCHAR(n).
    VarChar(u32),
    /// TEXT (and TINY/MEDIUM/LONGTEXT).
    Text,
    /// BINARY(n).
    Binary(u32),
    /// VARBINARY(n).
    VarBinary(u32),
    /// BLOB (and TINY/MEDIUM/LONGBLOB).
    Blob,
    /// DATE.
    Date,
    /// DATETIME.
    DateTime,
    /// TIMESTAMP.
    Timestamp,
}

impl SqlType {
    /// Whether values are integers (an integer primary key is the row handle).
    pub fn is_int(self) -> bool {
        matches!(self, SqlType::Int { .. })
    }

    /// Whether values are character strings (not binary ones).
    pub fn is_text(self) -> bool {
        matches!(self, SqlType::Char(_) | SqlType::VarChar(_) | SqlType::Text)
    }

    /// The type as SHOW CREATE TABLE and SHOW COLUMNS print it.
    pub fn sql_name(self) -> String {
        match self {
            SqlType::Int { bytes, unsigned } => {
                let name = match bytes {
                    1 => "tinyint",
                    2 => "smallint",
                    3 => "mediumint",
                    4 => "int",
                    _ => "bigint",
                };
                if unsigned {
                    format!("{name} unsigned")
                } else {
                    name.to_owned()
                }
            }
            SqlType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            SqlType::Float => "float".into(),
            SqlType::Double => "double".into(),
            SqlType::Char(n) => format!("char({n})"),
            SqlType::VarChar(n) => format!("varchar({n})"),
            SqlType::Text => "text".into(),
            SqlType::Binary(n) => format!("binary({n})"),
            SqlType::VarBinary(n) => format!("varbinary({n})"),
            SqlType::Blob => "blob".into(),
            SqlType::Date => "date".into(),
            SqlType::DateTime => "datetime".into(),
            SqlType::Timestamp => "timestamp".into(),
        }
    }

    /// The protocol's column type, display length and decimals.
    pub fn kind(self) -> (ColumnKind, u32, u8) {
        match self {
            SqlType::Int { bytes, .. } => match bytes {
                1 => (ColumnKind::Tiny, 4, 0),
                2 => (ColumnKind::Short, 6, 0),
                3 => (ColumnKind::Int24, 9, 0),
                4 => (ColumnKind::Long, 11, 0),
                _ => (ColumnKind::LongLong, 20, 0),
            },
            SqlType::Decimal { precision, scale } => {
                (ColumnKind::NewDecimal, u32::from(precision) + 2, scale)
            }
            SqlType::Float => (ColumnKind::Float, 12, 31),
            SqlType::Double => (ColumnKind::Double, 22, 31),
            SqlType::Char(n) | SqlType::Binary(n) => (ColumnKind::String, n, 0),
            SqlType::VarChar(n) | SqlType::VarBinary(n) => (ColumnKind::VarString, n, 0),
            SqlType::Text | SqlType::Blob => (ColumnKind::Blob, 65535, 0),
            SqlType::Date => (ColumnKind::Date, 10, 0),
            SqlType::DateTime => (ColumnKind::DateTime, 19, 0),
            SqlType::Timestamp => (ColumnKind::Timestamp, 19, 0),
        }
    }

    /// `v` converted for storage in a column `column` of this type.
    ///
    /// # Errors
    /// 1264 out of range, 1366 an incorrect value for the type, 1406 too long.
    pub fn coerce(self, v: Value, column: &str) -> Result<Value, SqlError> {
        if v == Value::Null {
            return Ok(Value::Null);
        }
        match self {
            SqlType::Int { bytes, unsigned } => {
                let n = to_integer(&v).ok_or_else(|| incorrect("integer", &v, column))?;
                let bits = u32::from(bytes) * 8;
                let (min, max) = if unsigned {
                    (0i128, (1i128 << bits) - 1)
                } else {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                };
                if n < min || n > max {
                    return Err(out_of_range(column));
                }
                Ok(if unsigned {
                    Value::UInt(u64::try_from(n).map_err(|_| out_of_range(column))?)
                } else {
                    Value::Int(i64::try_from(n).map_err(|_| out_of_range(column))?)
                })
            }
            SqlType::Decimal { precision, scale } => {
                let d = to_decimal(&v).ok_or_else(|| incorrect("decimal", &v, column))?;
                let d = rescale(d, scale).ok_or_else(|| out_of_range(column))?;
                let limit = 10i128
                    .checked_pow(u32::from(precision))
                    .unwrap_or(i128::MAX);
                if d.digits.abs() >= limit {
                    return Err(out_of_range(column));
                }
                Ok(Value::Decimal(d))
            }
            SqlType::Float | SqlType::Double => {
                let f = to_double(&v).ok_or_else(|| incorrect("double", &v, column))?;
                if self == SqlType::Float {
                    // Stored as the f32 it is, read back as the shortest double of it.
                    #[allow(clippy::cast_possible_truncation)] // FLOAT keeps f32 precision.
                    let f32v = f as f32;
                    Ok(Value::Double(f64::from(f32v)))
                } else {
                    Ok(Value::Double(f))
                }
            }
            SqlType::Char(n) | SqlType::VarChar(n) | SqlType::Binary(n) | SqlType::VarBinary(n) => {
                let mut bytes = to_bytes(&v);
                if matches!(self, SqlType::Char(_)) {
                    while bytes.last() == Some(&b' ') {
                        bytes.pop();
                    }
                }
                let len = if self.is_text() {
                    String::from_utf8_lossy(&bytes).chars().count()
                } else {
                    bytes.len()
                };
                if len > n as usize {
                    return Err(SqlError::new(
                        1406,
                        "22001",
                        format!("Data too long for column '{column}' at row 1"),
                    ));
                }
                Ok(Value::Bytes(bytes))
            }
            SqlType::Text | SqlType::Blob => Ok(Value::Bytes(to_bytes(&v))),
            SqlType::Date => match to_datetime(&v) {
                Some(Value::DateTime {
                    year, month, day, ..
                })
                | Some(Value::Date { year, month, day }) => Ok(Value::Date { year, month, day }),
                _ => Err(incorrect("date", &v, column)),
            },
            SqlType::DateTime | SqlType::Timestamp => match to_datetime(&v) {
                Some(Value::Date { year, month, day }) => Ok(Value::DateTime {
                    year,
                    month,
                    day,
                    hour: 0,
                    minute: 0,
                    second: 0,
                    micro: 0,
                }),
                Some(dt) => Ok(dt),
                None => Err(incorrect("datetime", &v, column)),
            },
        }
    }
}

fn out_of_range(column: &str) -> SqlError {
    SqlError::new(
        1264,
        "22003",
        format!("Out of range value for column '{column}' at row 1"),
    )
}

fn incorrect(kind: &str, v: &Value, column: &str) -> SqlError {
    let text = v
        .to_text()
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .unwrap_or_else(|| "NULL".into());
    SqlError::new(
        1366,
        "HY000",
        format!("Incorrect {kind} value: '{text}' for column '{column}' at row 1"),
    )
}

/// A value as an exact integer (decimals and doubles rounded half away from zero, strings
/// parsed), or `None` when it is not a number.
pub(crate) fn to_integer(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        Value::Double(f) => {
            let r = f.round();
            // i128 holds every finite double we accept; the range check follows.
            (r.is_finite() && r.abs() < 1e38).then(|| {
                #[allow(clippy::cast_possible_truncation)] // checked finite and in range
                let n = r as i128;
                n
            })
        }
        Value::Decimal(d) => rescale(*d, 0).map(|d| d.digits),
        Value::Bytes(b) => {
            let s = std::str::from_utf8(b).ok()?.trim();
            if let Ok(n) = s.parse::<i128>() {
                return Some(n);
            }
            to_integer(&Value::Decimal(parse_decimal(s)?))
        }
        Value::Date { .. } | Value::DateTime { .. } | Value::Null => None,
    }
}

/// A value as a decimal (`None` for NULL, a non-number, or a double out of range).
pub(crate) fn to_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal {
            digits: i128::from(*i),
            scale: 0,
        }),
        Value::UInt(u) => Some(Decimal {
            digits: i128::from(*u),
            scale: 0,
        }),
        Value::Decimal(d) => Some(*d),
        Value::Double(f) => parse_decimal(&format!("{f:.10}")),
        Value::Bytes(b) => parse_decimal(std::str::from_utf8(b).ok()?.trim()),
        _ => None,
    }
}

/// A value as a double (`None` for NULL or a non-number). A string must be a number as a
/// whole: MySQL would read `'12abc'` as 12 with a warning, this refuses it.
pub(crate) fn to_double(v: &Value) -> Option<f64> {
    match v {
        #[allow(clippy::cast_precision_loss)] // MySQL's double arithmetic loses it too
        Value::Int(i) => Some(*i as f64),
        #[allow(clippy::cast_precision_loss)] // as above
        Value::UInt(u) => Some(*u as f64),
        Value::Double(f) => Some(*f),
        #[allow(clippy::cast_precision_loss)] // as above
        Value::Decimal(d) => Some(d.digits as f64 / 10f64.powi(i32::from(d.scale))),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// `b` without the spaces MySQL skips around a number in a string: space, tab, newline,
/// vertical tab, form feed and carriage return (ASCII only, as every number parser here).
pub(crate) fn trim_number_spaces(b: &[u8]) -> &[u8] {
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
    let start = b.iter().position(|c| !space(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !space(c)).map_or(start, |i| i + 1);
    &b[start..end.max(start)]
}

/// Whether string `b` is a clean, finite number: one that every reading of it here agrees
/// on (the strict parse of [`to_double`], which stores, and [`string_as_double`], which
/// compares). Only such a string may narrow an index or key range: for any other
/// (`'12abc'`, `'nan'`, `'\u{a0}5'`) the key order and the comparison could disagree.
pub(crate) fn is_clean_number(b: &[u8]) -> bool {
    let Ok(t) = std::str::from_utf8(trim_number_spaces(b)) else {
        return false;
    };
    let Ok(f) = t.parse::<f64>() else {
        return false;
    };
    // Past the character check the text is one float literal with ASCII spaces around it:
    // `to_double` (whose Unicode trim takes those spaces too) reads the same `f`.
    f.is_finite()
        && t.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.' | b'e' | b'E'))
        && string_as_double(b) == f
}

/// A string as MySQL reads it where a number is needed in a comparison or in arithmetic:
/// its longest prefix that is a number (spaces before it allowed), 0 when there is none
/// (`'12abc'` is 12, `'abc'` 0, `'1e3x'` 1000). MySQL warns (1292) where this truncates;
/// no warning is kept here. Storing into a numeric column does not use this: STRICT mode
/// refuses such a string there.
pub(crate) fn string_as_double(b: &[u8]) -> f64 {
    let s = trim_number_spaces(b);
    let digits = |from: usize| s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut end = usize::from(matches!(s.first(), Some(b'+' | b'-')));
    let int = digits(end);
    end += int;
    let mut frac = 0;
    if s.get(end) == Some(&b'.') {
        frac = digits(end + 1);
        if int + frac > 0 {
            end += 1 + frac;
        }
    }
    if int + frac == 0 {
        return 0.0;
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(s.get(end + 1), Some(b'+' | b'-')));
        let exp = digits(end + 1 + sign);
        if exp > 0 {
            end += 1 + sign + exp;
        }
    }
    // The prefix is ASCII digits, sign, dot and exponent: valid UTF-8 and a valid float.
    std::str::from_utf8(&s[..end])
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0)
}

/// A value's bytes as a string column stores them.
pub(crate) fn to_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bytes(b) => b.clone(),
        other => other.to_text().unwrap_or_default(),
    }
}

/// `text` as a decimal: `[-+]digits[.digits]` (no exponent).
pub(crate) fn parse_decimal(text: &str) -> Option<Decimal> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) || frac.len() > 30 {
        return None;
    }
    let mut digits: i128 = 0;
    for c in int.bytes().chain(frac.bytes()) {
        digits = digits.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
    }
    let scale = u8::try_from(frac.len()).ok()?;
    Some(Decimal {
        digits: if neg { -digits } else { digits },
        scale,
    })
}

/// `d` at `scale` digits after the point, rounding half away from zero; `None` on overflow.
pub(crate) fn rescale(d: Decimal, scale: u8) -> Option<Decimal> {
    if scale >= d.scale {
        let f = 10i128.checked_pow(u32::from(scale - d.scale))?;
        Some(Decimal {
            digits: d.digits.checked_mul(f)?,
            scale,
        })
    } else {
        let f = 10i128.checked_pow(u32::from(d.scale - scale))?;
        let q = d.digits / f;
        let r = d.digits % f;
        let q = if r.abs() * 2 >= f {
            q + d.digits.signum()
        } else {
            q
        };
        Some(Decimal { digits: q, scale })
    }
}

/// A value as a DATE or DATETIME (strings `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` parsed).
pub(crate) fn to_datetime(v: &Value) -> Option<Value> {
    match v {
        Value::Date { .. } | Value::DateTime { .. } => Some(v.clone()),
        Value::Bytes(b) => parse_datetime(std::str::from_utf8(b).ok()?.trim()),
        _ => None,
    }
}

fn parse_datetime(s: &str) -> Option<Value> {
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let year: u16 = parts.next()?.parse().ok()?;
    let month: u8 = parts.next()?.parse().ok()?;
    let day: u8 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || year > 9999 || month > 12 || day > 31 {
        return None;
    }
    let Some(time) = time else {
        return Some(Value::Date { year, month, day });
    };
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':');
    let hour: u8 = t.next()?.parse().ok()?;
    let minute: u8 = t.next()?.parse().ok()?;
    let second: u8 = t.next().unwrap_or("0").parse().ok()?;
    if hour > 23 || minute > 59 || second > 59 || frac.len() > 6 {
        return None;
    }
    let micro = if frac.is_empty() {
        0
    } else {
        frac.parse::<u32>().ok()? * 10u32.pow(6 - u32::try_from(frac.len()).ok()?)
    };
    Some(Value::DateTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micro,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_read_as_their_numeric_prefix() {
        let cases: [(&str, f64); 14] = [
            ("12abc", 12.0),
            ("abc", 0.0),
            ("", 0.0),
            ("  -3.5e2x", -350.0),
            ("1e", 1.0),
            ("1e+", 1.0),
            ("2E-1", 0.2),
            (".5", 0.5),
            ("5.", 5.0),
            (".", 0.0),
            ("-", 0.0),
            ("+7", 7.0),
            ("1.2.3", 1.2),
            ("\u{e9}1", 0.0),
        ];
        for (text, want) in cases {
            assert_eq!(string_as_double(text.as_bytes()), want, "{text:?}");
        }
        assert_eq!(string_as_double(&[0xff, b'1']), 0.0, "not UTF-8");
    }

    #[test]
    fn ints_are_range_checked() {
        let t = SqlType::Int {
            bytes: 1,
            unsigned: false,
        };
        assert_eq!(t.coerce(Value::Int(127), "c").unwrap(), Value::Int(127));
        assert_eq!(t.coerce(Value::Int(128), "c").unwrap_err().code, 1264);
        assert_eq!(
            t.coerce(Value::Bytes(b"12".to_vec()), "c").unwrap(),
            Value::Int(12)
        );
        assert_eq!(
            t.coerce(Value::Bytes(b"x".to_vec()), "c").unwrap_err().code,
            1366
        );
    }

    #[test]
    fn decimals_round_and_check_precision() {
        let t = SqlType::Decimal {
            precision: 5,
            scale: 2,
        };
        let v = t.coerce(Value::Bytes(b"1.235".to_vec()), "d").unwrap();
        assert_eq!(v.to_text().unwrap(), b"1.24");
        assert_eq!(t.coerce(Value::Int(1000), "d").unwrap_err().code, 1264);
    }

    #[test]
    fn strings_are_length_checked_and_chars_unpadded() {
        assert_eq!(
            SqlType::Char(3)
                .coerce(Value::Bytes(b"ab  ".to_vec()), "c")
                .unwrap(),
            Value::Bytes(b"ab".to_vec())
        );
        assert_eq!(
            SqlType::VarChar(2)
                .coerce(Value::Bytes(b"abc".to_vec()), "c")
                .unwrap_err()
                .code,
            1406
        );
    }

    #[test]
    fn dates_parse() {
        let v = SqlType::DateTime
            .coerce(Value::Bytes(b"2026-12-02 01:02:03.5".to_vec()), "t")
            .unwrap();
        assert_eq!(v.to_text().unwrap(), b"2026-12-02 01:02:03.500000");
        assert!(
            SqlType::Date
                .coerce(Value::Bytes(b"2026-13-01".to_vec()), "t")
                .is_err()
        );
    }
}
