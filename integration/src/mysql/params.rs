//! COM_STMT_EXECUTE's parameters (<https://mariadb.com/kb/en/com_stmt_execute/>).
//!
//! After the command byte: statement id u32, cursor flags u8, iteration count u32; then, when
//! the statement has `n > 0` parameters: a NULL bitmap of `(n + 7) / 8` bytes (bit `i` set:
//! parameter `i` is NULL), the new-params-bound flag u8, when it is 1 the parameters' types
//! (`n` pairs of type byte and flag byte, `0x80` = unsigned), then each parameter that is
//! neither NULL nor sent earlier by COM_STMT_SEND_LONG_DATA, in its type's binary form.
//!
//! **Re-execution.** With new-params-bound = 0 the types are the ones bound by an earlier
//! execution of the same statement, and the values start right after the flag byte. MariaDB
//! Connector/C sends the types only on the first execution after binding, so every
//! re-execution by sysbench or the `mariadb` tools takes this path; reading the types (or
//! the flag) again there would decode every value from the wrong offset.

use mysql_common::constants::ColumnType;

use super::error::PacketError;
use super::ok_err_eof::put_lenenc_bytes;
use crate::sql::{Decimal, Value};

const WHAT: &str = "COM_STMT_EXECUTE";

/// The unsigned bit of a parameter's flag byte.
const UNSIGNED: u8 = 0x80;

/// A parameter's bound type: the type byte (`MYSQL_TYPE_*`) and whether it is unsigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParamType {
    /// The `MYSQL_TYPE_*` byte.
    pub ty: u8,
    /// The flag byte's unsigned bit.
    pub unsigned: bool,
}

impl ParamType {
    /// A signed (or untyped) parameter of `ty`.
    pub fn new(ty: ColumnType) -> ParamType {
        ParamType {
            ty: ty as u8,
            unsigned: false,
        }
    }

    /// An unsigned parameter of `ty`.
    pub fn unsigned(ty: ColumnType) -> ParamType {
        ParamType {
            ty: ty as u8,
            unsigned: true,
        }
    }
}

/// The fixed head of a COM_STMT_EXECUTE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecuteHead {
    /// The statement.
    pub stmt_id: u32,
    /// Cursor flags (0: no cursor; cursors are not supported, results are sent whole).
    pub flags: u8,
}

/// Reads the statement id and flags of a COM_STMT_EXECUTE `body` (the packet after its
/// command byte).
///
/// # Errors
/// [`PacketError::Malformed`] when `body` is shorter than its 9-byte head.
pub fn decode_execute_head(body: &[u8]) -> Result<ExecuteHead, PacketError> {
    if body.len() < 9 {
        return Err(PacketError::malformed(
            WHAT,
            format!("{} bytes, shorter than the 9-byte head", body.len()),
        ));
    }
    Ok(ExecuteHead {
        stmt_id: u32::from_le_bytes([body[0], body[1], body[2], body[3]]),
        flags: body[4],
    })
}

/// Decodes the parameters of a COM_STMT_EXECUTE `body` (after the command byte) for a
/// statement with `params` parameters. `bound` holds the types of the previous execution
/// and is replaced by newly bound ones on success; `long_data[i]`, when set, is parameter
/// `i`'s value sent by COM_STMT_SEND_LONG_DATA (then absent from the packet).
///
/// # Errors
/// [`PacketError::Malformed`] naming the parameter, its type and the offset: a truncated
/// value, an unknown type, a bad flag byte, new-params-bound = 0 with no types bound before,
/// an invalid date.
pub fn decode_execute_params(
    body: &[u8],
    params: u16,
    bound: &mut Option<Vec<ParamType>>,
    long_data: &[Option<Vec<u8>>],
) -> Result<Vec<Value>, PacketError> {
    decode_execute_head(body)?;
    let n = usize::from(params);
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut r = Reader { buf: body, pos: 9 };
    let bitmap = r.take(n.div_ceil(8), "the NULL bitmap")?;
    let fresh = match r.u8("the new-params-bound flag")? {
        0 => None,
        1 => {
            let mut types = Vec::with_capacity(n);
            for _ in 0..n {
                let t = r.take(2, "the parameter types")?;
                types.push(ParamType {
                    ty: t[0],
                    unsigned: t[1] & UNSIGNED != 0,
                });
            }
            Some(types)
        }
        other => {
            return Err(PacketError::malformed(
                WHAT,
                format!("new-params-bound flag {other} at offset {}", r.pos - 1),
            ));
        }
    };
    let types = match (&fresh, bound.as_ref()) {
        (Some(t), _) | (None, Some(t)) => t,
        (None, None) => {
            return Err(PacketError::malformed(
                WHAT,
                "new-params-bound flag 0 but no parameter types were bound before",
            ));
        }
    };
    if types.len() != n {
        return Err(PacketError::malformed(
            WHAT,
            format!("{} types bound for {n} parameters", types.len()),
        ));
    }
    let mut values = Vec::with_capacity(n);
    for (i, t) in types.iter().enumerate() {
        let v = if let Some(Some(data)) = long_data.get(i) {
            long_value(i, *t, data)?
        } else if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            Value::Null
        } else {
            r.value(i, *t)?
        };
        values.push(v);
    }
    if let Some(t) = fresh {
        *bound = Some(t);
    }
    Ok(values)
}

/// A byte cursor whose every read names what it was reading when the bytes ran out.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], PacketError> {
        let left = self.buf.len() - self.pos;
        if len > left {
            return Err(PacketError::malformed(
                WHAT,
                format!(
                    "{what} needs {len} bytes at offset {}, {left} left",
                    self.pos + 1
                ),
            ));
        }
        let s = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, PacketError> {
        Ok(self.take(1, what)?[0])
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], PacketError> {
        let s = self.take(N, what)?;
        let mut a = [0; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn lenenc_int(&mut self, what: &str) -> Result<u64, PacketError> {
        Ok(match self.u8(what)? {
            0xFC => u64::from(u16::from_le_bytes(self.array(what)?)),
            0xFD => {
                let b: [u8; 3] = self.array(what)?;
                u64::from(u32::from_le_bytes([b[0], b[1], b[2], 0]))
            }
            0xFE => u64::from_le_bytes(self.array(what)?),
            b @ (0xFB | 0xFF) => {
                return Err(PacketError::malformed(
                    WHAT,
                    format!(
                        "{what}: byte {b:#04x} is not a length at offset {}",
                        self.pos
                    ),
                ));
            }
            b => u64::from(b),
        })
    }

    fn lenenc_bytes(&mut self, what: &str) -> Result<&'a [u8], PacketError> {
        let len = self.lenenc_int(what)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.take(len, what)
    }

    /// Parameter `i`'s value of type `t`.
    fn value(&mut self, i: usize, t: ParamType) -> Result<Value, PacketError> {
        let what = format!("parameter {i} (type {:#04x})", t.ty);
        let ty = ColumnType::try_from(t.ty)
            .map_err(|_| PacketError::malformed(WHAT, format!("{what}: unknown type")))?;
        use ColumnType as C;
        let int = |bytes: &[u8]| -> Value {
            let mut b = [0u8; 8];
            b[..bytes.len()].copy_from_slice(bytes);
            let u = u64::from_le_bytes(b);
            if t.unsigned {
                Value::UInt(u)
            } else {
                // Sign-extend from the value's width.
                let shift = 64 - 8 * bytes.len() as u32;
                Value::Int(((u << shift) as i64) >> shift)
            }
        };
        Ok(match ty {
            C::MYSQL_TYPE_NULL => Value::Null,
            C::MYSQL_TYPE_TINY => int(self.take(1, &what)?),
            C::MYSQL_TYPE_SHORT | C::MYSQL_TYPE_YEAR => int(self.take(2, &what)?),
            C::MYSQL_TYPE_LONG | C::MYSQL_TYPE_INT24 => int(self.take(4, &what)?),
            C::MYSQL_TYPE_LONGLONG => int(self.take(8, &what)?),
            C::MYSQL_TYPE_FLOAT => Value::Double(f64::from(f32::from_le_bytes(self.array(&what)?))),
            C::MYSQL_TYPE_DOUBLE => Value::Double(f64::from_le_bytes(self.array(&what)?)),
            C::MYSQL_TYPE_DECIMAL | C::MYSQL_TYPE_NEWDECIMAL => {
                let text = self.lenenc_bytes(&what)?;
                decimal_value(&what, text)?
            }
            C::MYSQL_TYPE_DATE
            | C::MYSQL_TYPE_NEWDATE
            | C::MYSQL_TYPE_DATETIME
            | C::MYSQL_TYPE_TIMESTAMP => {
                let len = usize::from(self.u8(&what)?);
                let body = self.take(len, &what)?;
                date_value(&what, ty, body)?
            }
            C::MYSQL_TYPE_TIME => {
                let len = usize::from(self.u8(&what)?);
                let body = self.take(len, &what)?;
                time_value(&what, body)?
            }
            C::MYSQL_TYPE_VARCHAR
            | C::MYSQL_TYPE_VAR_STRING
            | C::MYSQL_TYPE_STRING
            | C::MYSQL_TYPE_TINY_BLOB
            | C::MYSQL_TYPE_MEDIUM_BLOB
            | C::MYSQL_TYPE_LONG_BLOB
            | C::MYSQL_TYPE_BLOB
            | C::MYSQL_TYPE_ENUM
            | C::MYSQL_TYPE_SET
            | C::MYSQL_TYPE_BIT
            | C::MYSQL_TYPE_JSON
            | C::MYSQL_TYPE_GEOMETRY => Value::Bytes(self.lenenc_bytes(&what)?.to_vec()),
            other => {
                return Err(PacketError::malformed(
                    WHAT,
                    format!("{what}: {other:?} cannot be a parameter"),
                ));
            }
        })
    }
}

/// A parameter whose value came by COM_STMT_SEND_LONG_DATA: its bytes, as a string, or as a
/// decimal for a DECIMAL parameter.
fn long_value(i: usize, t: ParamType, data: &[u8]) -> Result<Value, PacketError> {
    let is_decimal = t.ty == ColumnType::MYSQL_TYPE_NEWDECIMAL as u8
        || t.ty == ColumnType::MYSQL_TYPE_DECIMAL as u8;
    if is_decimal {
        decimal_value(&format!("parameter {i} (long data)"), data)
    } else {
        Ok(Value::Bytes(data.to_vec()))
    }
}

/// Parses a DECIMAL parameter's text (`-123.45`).
fn decimal_value(what: &str, text: &[u8]) -> Result<Value, PacketError> {
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
fn date_value(what: &str, ty: ColumnType, b: &[u8]) -> Result<Value, PacketError> {
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
fn time_value(what: &str, b: &[u8]) -> Result<Value, PacketError> {
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

/// Encodes a COM_STMT_EXECUTE body (after the command byte) as a client would: `params`
/// are the values with the types they are sent as; `send_types` is the new-params-bound
/// flag. The decoder's round-trip tests and fuzz checks use it.
///
/// Values are written in their type's binary form; a value of another variant than the
/// type calls for is written as its text in a length-encoded string (so pair them well).
pub fn encode_execute(stmt_id: u32, params: &[(ParamType, Value)], send_types: bool) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend_from_slice(&stmt_id.to_le_bytes());
    buf.push(0);
    buf.extend_from_slice(&1u32.to_le_bytes());
    if params.is_empty() {
        return buf;
    }
    let mut bitmap = vec![0u8; params.len().div_ceil(8)];
    for (i, (_, v)) in params.iter().enumerate() {
        if matches!(v, Value::Null) {
            bitmap[i / 8] |= 1 << (i % 8);
        }
    }
    buf.extend_from_slice(&bitmap);
    buf.push(u8::from(send_types));
    if send_types {
        for (t, _) in params {
            buf.push(t.ty);
            buf.push(if t.unsigned { UNSIGNED } else { 0 });
        }
    }
    for (t, v) in params {
        put_param(&mut buf, *t, v);
    }
    buf
}

/// Appends one parameter value of type `t`.
fn put_param(buf: &mut Vec<u8>, t: ParamType, v: &Value) {
    use ColumnType as C;
    let width = match ColumnType::try_from(t.ty) {
        Ok(C::MYSQL_TYPE_TINY) => Some(1),
        Ok(C::MYSQL_TYPE_SHORT | C::MYSQL_TYPE_YEAR) => Some(2),
        Ok(C::MYSQL_TYPE_LONG | C::MYSQL_TYPE_INT24) => Some(4),
        Ok(C::MYSQL_TYPE_LONGLONG) => Some(8),
        _ => None,
    };
    match (v, width) {
        (Value::Null, _) => {}
        (&Value::Int(i), Some(w)) => buf.extend_from_slice(&i.to_le_bytes()[..w]),
        (&Value::UInt(u), Some(w)) => buf.extend_from_slice(&u.to_le_bytes()[..w]),
        (&Value::Double(f), _) if t.ty == C::MYSQL_TYPE_FLOAT as u8 => {
            buf.extend_from_slice(&(f as f32).to_le_bytes());
        }
        (&Value::Double(f), _) if t.ty == C::MYSQL_TYPE_DOUBLE as u8 => {
            buf.extend_from_slice(&f.to_le_bytes());
        }
        (&Value::Date { year, month, day }, _) => {
            buf.push(4);
            buf.extend_from_slice(&year.to_le_bytes());
            buf.extend_from_slice(&[month, day]);
        }
        (
            &Value::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micro,
            },
            _,
        ) => {
            buf.push(11);
            buf.extend_from_slice(&year.to_le_bytes());
            buf.extend_from_slice(&[month, day, hour, minute, second]);
            buf.extend_from_slice(&micro.to_le_bytes());
        }
        _ => {
            put_lenenc_bytes(buf, &v.to_text().unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType as C;

    fn p(ty: ColumnType) -> ParamType {
        ParamType::new(ty)
    }

    #[test]
    fn reexecution_without_types_reuses_the_bound_ones() {
        let params = [
            (p(C::MYSQL_TYPE_LONG), Value::Int(-7)),
            (p(C::MYSQL_TYPE_VAR_STRING), Value::Bytes(b"abc".to_vec())),
            (
                ParamType::unsigned(C::MYSQL_TYPE_LONGLONG),
                Value::UInt(u64::MAX),
            ),
        ];
        let mut bound = None;
        let first = encode_execute(1, &params, true);
        let got = decode_execute_params(&first, 3, &mut bound, &[]).unwrap();
        assert_eq!(
            got,
            params.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>()
        );
        assert_eq!(bound.as_ref().map(Vec::len), Some(3));

        let again = [
            (p(C::MYSQL_TYPE_LONG), Value::Int(5)),
            (p(C::MYSQL_TYPE_VAR_STRING), Value::Null),
            (ParamType::unsigned(C::MYSQL_TYPE_LONGLONG), Value::UInt(9)),
        ];
        let second = encode_execute(1, &again, false);
        let got = decode_execute_params(&second, 3, &mut bound, &[]).unwrap();
        assert_eq!(got, vec![Value::Int(5), Value::Null, Value::UInt(9)]);

        // Without types bound before, new-params-bound = 0 is an error, not a guess.
        let err = decode_execute_params(&second, 3, &mut None, &[]).unwrap_err();
        assert!(err.to_string().contains("no parameter types"), "{err}");
    }

    #[test]
    fn widths_signs_dates_and_long_data() {
        let body = encode_execute(
            2,
            &[
                (p(C::MYSQL_TYPE_TINY), Value::Int(-1)),
                (ParamType::unsigned(C::MYSQL_TYPE_TINY), Value::UInt(255)),
                (p(C::MYSQL_TYPE_SHORT), Value::Int(-300)),
                (p(C::MYSQL_TYPE_DOUBLE), Value::Double(0.25)),
                (p(C::MYSQL_TYPE_FLOAT), Value::Double(1.5)),
                (
                    p(C::MYSQL_TYPE_DATE),
                    Value::Date {
                        year: 2026,
                        month: 12,
                        day: 2,
                    },
                ),
                (
                    p(C::MYSQL_TYPE_NEWDECIMAL),
                    Value::Bytes(b"-12.50".to_vec()),
                ),
                (p(C::MYSQL_TYPE_BLOB), Value::Null),
            ],
            true,
        );
        let long = [
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some(b"long".to_vec()),
        ];
        let got = decode_execute_params(&body, 8, &mut None, &long).unwrap();
        assert_eq!(
            got,
            vec![
                Value::Int(-1),
                Value::UInt(255),
                Value::Int(-300),
                Value::Double(0.25),
                Value::Double(1.5),
                Value::Date {
                    year: 2026,
                    month: 12,
                    day: 2
                },
                Value::Decimal(Decimal {
                    digits: -1250,
                    scale: 2
                }),
                Value::Bytes(b"long".to_vec()),
            ]
        );
    }

    #[test]
    fn malformed_bodies_name_what_is_wrong() {
        let good = encode_execute(3, &[(p(C::MYSQL_TYPE_LONGLONG), Value::Int(1))], true);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![1, 2], "9-byte head"),
            (
                good[..good.len() - 3].to_vec(),
                "parameter 0 (type 0x08) needs 8 bytes",
            ),
            (
                {
                    let mut b = good.clone();
                    b[10] = 7;
                    b
                },
                "new-params-bound flag 7",
            ),
            (
                {
                    let mut b = good.clone();
                    b[11] = 0xF0;
                    b
                },
                "unknown type",
            ),
            (
                encode_execute(
                    3,
                    &[(p(C::MYSQL_TYPE_NEWDECIMAL), Value::Bytes(b"1e5".to_vec()))],
                    true,
                ),
                "not a decimal",
            ),
            (
                encode_execute(
                    3,
                    &[(
                        p(C::MYSQL_TYPE_DATETIME),
                        Value::DateTime {
                            year: 2026,
                            month: 13,
                            day: 1,
                            hour: 0,
                            minute: 0,
                            second: 0,
                            micro: 0,
                        },
                    )],
                    true,
                ),
                "invalid date",
            ),
        ];
        for (body, needle) in cases {
            let err = decode_execute_params(&body, 1, &mut None, &[]).unwrap_err();
            assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        }
    }

    #[test]
    fn decimals_parse() {
        let d = |s: &str| parse_decimal(s.as_bytes());
        assert_eq!(
            d("-0.005"),
            Some(Decimal {
                digits: -5,
                scale: 3
            })
        );
        assert_eq!(
            d("12"),
            Some(Decimal {
                digits: 12,
                scale: 0
            })
        );
        assert_eq!(
            d(".5"),
            Some(Decimal {
                digits: 5,
                scale: 1
            })
        );
        for bad in ["", "-", ".", "1.2.3", "abc", "1e5", &"9".repeat(39)] {
            assert_eq!(d(bad), None, "{bad}");
        }
    }
}
