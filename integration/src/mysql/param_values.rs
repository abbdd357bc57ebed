//! The values of COM_STMT_EXECUTE parameters that need more than a fixed-width read:
//! DECIMAL text, DATE/DATETIME/TIMESTAMP and TIME structures, and long data.
//!
//! Binary dates (<https://mariadb.com/kb/en/resultset-row/#binary-resultset-row>): a length
//! byte (0, 4, 7 or 11), then year u16, month, day, hour, minute, second, microseconds u32.
//! Binary times: a length byte (0, 8 or 12), then negative u8, days u32, hour, minute,
//! second, microseconds u32.

use mysql_common::constants::ColumnType;

use super::error::PacketError;
use super::params::{ParamType, WHAT};
use crate::sql::{Decimal, Value};

/// A parameter whose value came by COM_STMT_SEND_LONG_DATA: its bytes, as a string, or as a
/// decimal for a DECIMAL parameter.
pub(crate) fn long_value(i: usize, t: ParamType, data: &[u8]) -> Result<Value, PacketError> {
    let is_decimal = t.ty == ColumnType::MYSQL_TYPE_NEWDECIMAL as u8
        || t.ty == ColumnType::MYSQL_TYPE_DECIMAL as u8;
    if is_decimal {
        decimal_value(&format!("parameter {i} (long data)"), data)
    } else {
        Ok(Value::Bytes(data.to_vec()))
    }
}

/// Parses a DECIMAL parameter's text (`-123.45`).
pub(crate) fn decimal_value(what: &str, text: &[u8]) -> Result<Value, PacketError> {
    parse_decimal(text).map(Value::Decimal).ok_or_else(|| {
        PacketError::malformed(
            WHAT,
            format!(
                "{what}: {:?} is not a decimal of at most 38 digits",
                String::from_utf8_lossy(text)
            ),
        )
    })
}

/// `[+-]digits[.digits]` with at most 38 digits in all.
pub(crate) fn parse_decimal(text: &[u8]) -> Option<Decimal> {
    let (neg, rest) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (int, frac) = match rest.iter().position(|&b| b == b'.') {
        Some(p) => (&rest[..p], &rest[p + 1..]),
        None => (rest, &[][..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if int.len() + frac.len() > 38 || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let mut digits: i128 = 0;
    for &b in int.iter().chain(frac) {
        digits = digits * 10 + i128::from(b - b'0');
    }
    Some(Decimal {
        digits: if neg { -digits } else { digits },
        scale: u8::try_from(frac.len()).ok()?,
    })
}

/// A DATE/DATETIME/TIMESTAMP parameter: 0, 4, 7 or 11 bytes.
pub(crate) fn date_value(what: &str, ty: ColumnType, b: &[u8]) -> Result<Value, PacketError> {
    let bad = |detail: String| PacketError::malformed(WHAT, format!("{what}: {detail}"));
    let (year, month, day) = match b.len() {
        0 => (0, 0, 0),
        4 | 7 | 11 => (u16::from_le_bytes([b[0], b[1]]), b[2], b[3]),
        n => return Err(bad(format!("a date of {n} bytes (0, 4, 7 or 11 expected)"))),
    };
    let (hour, minute, second) = if b.len() >= 7 {
        (b[4], b[5], b[6])
    } else {
        (0, 0, 0)
    };
    let micro = if b.len() == 11 {
        u32::from_le_bytes([b[7], b[8], b[9], b[10]])
    } else {
        0
    };
    if year > 9999 || month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 {
        return Err(bad(format!(
            "invalid date {year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}"
        )));
    }
    if micro > 999_999 {
        return Err(bad(format!("microseconds {micro} over 999999")));
    }
    Ok(
        if matches!(
            ty,
            ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE
        ) {
            Value::Date { year, month, day }
        } else {
            Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micro,
            }
        },
    )
}

/// A TIME parameter (0, 8 or 12 bytes), as its text `[-]HHH:MM:SS[.ffffff]`: the SQL layer
/// has no TIME value.
pub(crate) fn time_value(what: &str, b: &[u8]) -> Result<Value, PacketError> {
    let (neg, days, h, m, s) = match b.len() {
        0 => (false, 0, 0, 0, 0),
        8 | 12 => (
            b[0] != 0,
            u32::from_le_bytes([b[1], b[2], b[3], b[4]]),
            b[5],
            b[6],
            b[7],
        ),
        n => {
            return Err(PacketError::malformed(
                WHAT,
                format!("{what}: a time of {n} bytes (0, 8 or 12 expected)"),
            ));
        }
    };
    let micro = if b.len() == 12 {
        u32::from_le_bytes([b[8], b[9], b[10], b[11]])
    } else {
        0
    };
    if h > 23 || m > 59 || s > 59 || micro > 999_999 {
        return Err(PacketError::malformed(
            WHAT,
            format!("{what}: invalid time {days}d {h}:{m}:{s}.{micro}"),
        ));
    }
    let hours = u64::from(days) * 24 + u64::from(h);
    let mut text = format!("{}{hours:02}:{m:02}:{s:02}", if neg { "-" } else { "" });
    if micro != 0 {
        text.push_str(&format!(".{micro:06}"));
    }
    Ok(Value::Bytes(text.into_bytes()))
}
