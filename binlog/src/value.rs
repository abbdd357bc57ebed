//! [`BinlogValue`]: one cell of a row image, as the caller gives it and as
//! [`crate::BinlogTable::decode_row`] reads it back.

use std::fmt;

/// A calendar date as MariaDB stores it: zero parts are allowed (`0000-00-00`, a zero day),
/// as in MariaDB's own `DATE` column outside `NO_ZERO_DATE` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BinlogDate {
    /// 0..=9999.
    pub year: u16,
    /// 0..=12.
    pub month: u8,
    /// 0..=31.
    pub day: u8,
}

impl BinlogDate {
    /// The date `year-month-day` (not checked here; the encoder checks the ranges).
    pub const fn new(year: u16, month: u8, day: u8) -> BinlogDate {
        BinlogDate { year, month, day }
    }

    /// Why the parts are out of range, if they are.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.year > 9999 || self.month > 12 || self.day > 31 {
            return Err(format!("date {self} out of range"));
        }
        Ok(())
    }
}

impl fmt::Display for BinlogDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A date and time of day with microseconds (a `DATETIME(fsp)` value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BinlogDateTime {
    /// The date.
    pub date: BinlogDate,
    /// 0..=23.
    pub hour: u8,
    /// 0..=59.
    pub minute: u8,
    /// 0..=59.
    pub second: u8,
    /// 0..=999999; a column of `fsp` digits holds only multiples of `10^(6-fsp)`.
    pub micros: u32,
}

impl BinlogDateTime {
    /// `date` at `hour:minute:second.micros`.
    pub const fn new(
        date: BinlogDate,
        hour: u8,
        minute: u8,
        second: u8,
        micros: u32,
    ) -> BinlogDateTime {
        BinlogDateTime {
            date,
            hour,
            minute,
            second,
            micros,
        }
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        self.date.check()?;
        if self.hour > 23 || self.minute > 59 || self.second > 59 || self.micros > 999_999 {
            return Err(format!("time of day in {self} out of range"));
        }
        Ok(())
    }
}

impl fmt::Display for BinlogDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:02}:{:02}:{:02}.{:06}",
            self.date, self.hour, self.minute, self.second, self.micros
        )
    }
}

/// One value of a row image.
///
/// Which variant a column takes ([`crate::BinlogType`]): integers `Int` (signed columns) or
/// `UInt` (unsigned; either is accepted when the number fits, decoding gives the column's
/// own); `DECIMAL` the decimal text `Decimal("-12.50")` (at most the column's digits; fewer
/// fraction digits are padded with zeros, more are refused: round before logging);
/// `FLOAT` `Float`, `DOUBLE` `Double` (finite only); every string and binary type `Bytes`
/// (text in the column's character set; `CHAR` loses trailing spaces and `BINARY` is
/// padded with zero bytes to its length, as MariaDB stores them); `DATE` `Date`,
/// `DATETIME` `DateTime`, `TIMESTAMP` `Timestamp` (seconds since the Unix epoch, UTC, as
/// MariaDB stores it). `Null` only in a nullable column.
#[derive(Debug, Clone, PartialEq)]
pub enum BinlogValue {
    /// SQL NULL.
    Null,
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A decimal number as text: an optional `-`, digits, optionally `.` and digits.
    Decimal(String),
    /// A `FLOAT`.
    Float(f32),
    /// A `DOUBLE`.
    Double(f64),
    /// A string or binary value.
    Bytes(Vec<u8>),
    /// A `DATE`.
    Date(BinlogDate),
    /// A `DATETIME(fsp)`.
    DateTime(BinlogDateTime),
    /// A `TIMESTAMP(fsp)`: seconds since 1970-01-01 00:00:00 UTC and microseconds.
    Timestamp {
        /// Whole seconds (MariaDB's `TIMESTAMP` holds 32 bits).
        seconds: u32,
        /// 0..=999999.
        micros: u32,
    },
}

impl BinlogValue {
    /// The text of `s` as `Bytes`.
    pub fn text(s: &str) -> BinlogValue {
        BinlogValue::Bytes(s.as_bytes().to_vec())
    }

    /// A name for the variant, for error messages.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            BinlogValue::Null => "NULL",
            BinlogValue::Int(_) => "Int",
            BinlogValue::UInt(_) => "UInt",
            BinlogValue::Decimal(_) => "Decimal",
            BinlogValue::Float(_) => "Float",
            BinlogValue::Double(_) => "Double",
            BinlogValue::Bytes(_) => "Bytes",
            BinlogValue::Date(_) => "Date",
            BinlogValue::DateTime(_) => "DateTime",
            BinlogValue::Timestamp { .. } => "Timestamp",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_print_as_sql_literals_and_check_ranges() {
        let d = BinlogDate::new(2024, 2, 29);
        assert_eq!(d.to_string(), "2024-02-29");
        assert!(d.check().is_ok());
        assert!(BinlogDate::new(0, 0, 0).check().is_ok());
        assert!(BinlogDate::new(2024, 13, 1).check().is_err());
        assert!(BinlogDate::new(10000, 1, 1).check().is_err());
        let dt = BinlogDateTime::new(d, 23, 59, 59, 5);
        assert_eq!(dt.to_string(), "2024-02-29 23:59:59.000005");
        assert!(dt.check().is_ok());
        assert!(BinlogDateTime::new(d, 24, 0, 0, 0).check().is_err());
        assert!(BinlogDateTime::new(d, 0, 0, 0, 1_000_000).check().is_err());
    }
}
