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
use super::param_values::{date_value, decimal_value, long_value, time_value};
use crate::sql::Value;

pub(crate) const WHAT: &str = "COM_STMT_EXECUTE";

/// The unsigned bit of a parameter's flag byte.
pub(crate) const UNSIGNED: u8 = 0x80;

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

#[cfg(test)]
#[path = "params_test.rs"]
mod params_test;
