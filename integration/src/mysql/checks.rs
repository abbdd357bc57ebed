//! The decoder checks the fuzz targets (`fuzz/fuzz_targets/mysql_*.rs`) and
//! `tests/mysql_codec_props.rs` share: nothing panics, and whatever decodes encodes back to
//! what was read. Not an API.

use mysql_common::constants::ColumnType;

use super::execute_encoder::encode_execute;
use super::packet::{decode_packets, encode_packets};
use super::params::{ParamType, decode_execute_params};
use crate::sql::Value;

/// `data` as a client's packet stream: decoding must not panic, and the packets it yields
/// must frame back to exactly the bytes consumed.
///
/// # Errors
/// A description of the mismatch.
pub fn check_packets(data: &[u8], max_allowed_packet: usize) -> Result<(), String> {
    let Ok((packets, rest)) = decode_packets(data, 0, max_allowed_packet) else {
        return Ok(());
    };
    let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
    let framed = encode_packets(&refs, 0);
    let consumed = &data[..data.len() - rest];
    if framed != consumed {
        return Err(format!(
            "{} packets re-frame to {} bytes, {} were read",
            packets.len(),
            framed.len(),
            consumed.len()
        ));
    }
    Ok(())
}

/// `data` as a COM_STMT_EXECUTE: the first byte picks the parameter count (0..=31), the
/// second says whether types were bound before (then the next `count` bytes are their type
/// bytes), the rest is the body. Decoding must not panic; values decoded with types sent
/// must survive [`encode_execute`] and decode again to the same values, with and without
/// the types resent.
///
/// # Errors
/// A description of the mismatch.
pub fn check_execute(data: &[u8]) -> Result<(), String> {
    let [count, bound_flag, rest @ ..] = data else {
        return Ok(());
    };
    let count = count % 32;
    let n = usize::from(count);
    let (mut bound, body) = if bound_flag & 1 == 1 && rest.len() >= n {
        let types = rest[..n]
            .iter()
            .map(|&ty| ParamType {
                ty,
                unsigned: ty & 1 == 1,
            })
            .collect();
        (Some(types), &rest[n..])
    } else {
        (None, rest)
    };
    let before = bound.clone();
    let Ok(values) = decode_execute_params(body, u16::from(count), &mut bound, &[]) else {
        if bound != before {
            return Err("a failed decode changed the bound types".into());
        }
        return Ok(());
    };
    let Some(types) = bound else {
        return if n == 0 {
            Ok(())
        } else {
            Err("a decode with parameters left no types bound".into())
        };
    };
    // TIME values come back as text: resend them as strings.
    let pairs: Vec<(ParamType, Value)> = types
        .iter()
        .zip(values.iter())
        .map(|(t, v)| {
            let t = if t.ty == ColumnType::MYSQL_TYPE_TIME as u8 {
                ParamType::new(ColumnType::MYSQL_TYPE_VAR_STRING)
            } else {
                *t
            };
            (t, v.clone())
        })
        .collect();
    for send_types in [true, false] {
        let mut rebound = Some(pairs.iter().map(|(t, _)| *t).collect::<Vec<_>>());
        let again = encode_execute(7, &pairs, send_types);
        let decoded = decode_execute_params(&again, u16::from(count), &mut rebound, &[])
            .map_err(|e| format!("re-encoded body does not decode: {e}"))?;
        if !same_values(&decoded, &values) {
            return Err(format!("round trip: {values:?} became {decoded:?}"));
        }
    }
    Ok(())
}

/// Equality with NaN equal to itself (a double parameter may be any bit pattern).
fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Value::Double(x), Value::Double(y)) => {
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
            }
            _ => x == y,
        })
}
