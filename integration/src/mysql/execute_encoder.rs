//! A client's side of COM_STMT_EXECUTE: [`encode_execute`] writes the body a driver sends,
//! for the decoder's round-trip properties, the fuzz checks and tests that speak the
//! protocol by hand.

use mysql_common::constants::ColumnType;

use super::ok_err_eof::put_lenenc_bytes;
use super::params::{ParamType, UNSIGNED};
use crate::sql::Value;

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
