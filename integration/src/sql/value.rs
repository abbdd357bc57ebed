//! [`Value`]: one SQL value as the SQL layer computes with it and the MySQL protocol sends it.

use std::fmt;

/// A fixed-point decimal: `digits / 10^scale` (DECIMAL(p, s) with p <= 38).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decimal {
    /// The unscaled value.
    pub digits: i128,
    /// Digits after the point.
    pub scale: u8,
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.digits < 0 { "-" } else { "" };
        let abs = self.digits.unsigned_abs();
        if self.scale == 0 {
            return write!(f, "{sign}{abs}");
        }
        let pow = 10u128.pow(u32::from(self.scale));
        write!(
            f,
            "{sign}{}.{:0width$}",
            abs / pow,
            abs % pow,
            width = usize::from(self.scale)
        )
    }
}

/// One SQL value.
///
/// Character and binary strings are both [`Value::Bytes`]: the column's type says which.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A signed integer (TINYINT..BIGINT).
    Int(i64),
    /// An unsigned integer (TINYINT..BIGINT UNSIGNED).
    UInt(u64),
    /// FLOAT or DOUBLE.
    Double(f64),
    /// DECIMAL.
    Decimal(Decimal),
    /// CHAR, VARCHAR, TEXT, BINARY, VARBINARY, BLOB.
    Bytes(Vec<u8>),
    /// DATE.
    Date {
        /// 0..=9999.
        year: u16,
        /// 1..=12 (0 in a zero date).
        month: u8,
        /// 1..=31 (0 in a zero date).
        day: u8,
    },
    /// DATETIME or TIMESTAMP.
    DateTime {
        /// 0..=9999.
        year: u16,
        /// 1..=12.
        month: u8,
        /// 1..=31.
        day: u8,
        /// 0..=23.
        hour: u8,
        /// 0..=59.
        minute: u8,
        /// 0..=59.
        second: u8,
        /// 0..=999_999.
        micro: u32,
    },
}

impl Value {
    /// The text form the MySQL text protocol sends (`None` for NULL).
    pub fn to_text(&self) -> Option<Vec<u8>> {
        Some(match self {
            Value::Null => return None,
            Value::Int(v) => v.to_string().into_bytes(),
            Value::UInt(v) => v.to_string().into_bytes(),
            Value::Double(v) => format_double(*v).into_bytes(),
            Value::Decimal(d) => d.to_string().into_bytes(),
            Value::Bytes(b) => b.clone(),
            Value::Date { year, month, day } => {
                format!("{year:04}-{month:02}-{day:02}").into_bytes()
            }
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micro,
            } => {
                let mut s =
                    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}");
                if *micro != 0 {
                    s.push_str(&format!(".{micro:06}"));
                }
                s.into_bytes()
            }
        })
    }

    /// Seconds since 1970-01-01 00:00:00 UTC of a DATE or DATETIME read as UTC
    /// (fractions dropped); `None` for any other value. A text in the DATETIME form
    /// (`YYYY-MM-DD[ HH:MM:SS]`) is parsed first.
    pub fn unix_seconds(&self) -> Option<i64> {
        let (year, month, day, hour, minute, second) = match super::types::to_datetime(self)? {
            Value::Date { year, month, day } => (year, month, day, 0, 0, 0),
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                ..
            } => (year, month, day, hour, minute, second),
            _ => return None,
        };
        Some(
            days_from_civil(i64::from(year), i64::from(month), i64::from(day)) * 86_400
                + i64::from(hour) * 3600
                + i64::from(minute) * 60
                + i64::from(second),
        )
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A double as MySQL prints it: the shortest form that reads back the same, no `.0` on
/// whole numbers, `inf`/`nan` never produced by SQL arithmetic.
fn format_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_count_seconds_from_the_epoch_in_utc() {
        let text = |s: &str| Value::Bytes(s.as_bytes().to_vec());
        assert_eq!(text("1970-01-01 00:00:00").unix_seconds(), Some(0));
        assert_eq!(text("2000-03-01").unix_seconds(), Some(951_868_800));
        assert_eq!(
            text("2026-12-05 10:00:00").unix_seconds(),
            Some(1_796_464_800)
        );
        assert_eq!(text("not a date").unix_seconds(), None);
        assert_eq!(Value::Int(3).unix_seconds(), None);
    }

    #[test]
    fn decimal_text_keeps_its_scale() {
        let d = |digits, scale| Decimal { digits, scale }.to_string();
        assert_eq!(d(12345, 2), "123.45");
        assert_eq!(d(-5, 3), "-0.005");
        assert_eq!(d(7, 0), "7");
    }

    #[test]
    fn text_forms() {
        assert_eq!(Value::Null.to_text(), None);
        assert_eq!(Value::Int(-3).to_text().unwrap(), b"-3");
        assert_eq!(Value::Double(2.0).to_text().unwrap(), b"2");
        assert_eq!(Value::Double(0.5).to_text().unwrap(), b"0.5");
        let dt = Value::DateTime {
            year: 2026,
            month: 12,
            day: 2,
            hour: 1,
            minute: 2,
            second: 3,
            micro: 0,
        };
        assert_eq!(dt.to_text().unwrap(), b"2026-12-02 01:02:03");
    }
}
