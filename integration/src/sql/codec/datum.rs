//! Memcomparable datums: a value's bytes sort as the value does, so an index range is a
//! key range.
//!
//! Each datum starts with a flag (NULL 0 sorts first; bytes 1, int 3, uint 4, double 5,
//! decimal 6, date-time 7). Integers are sign-flipped big-endian; bytes go in 8-byte
//! groups, each followed by a marker `0xFF - padding`, so a prefix sorts before its
//! extensions; a double's bits are flipped so negative numbers sort first; a decimal is
//! its unscaled value at the column's scale (fixed per column) as a sign-flipped i128.

use crate::sql::value::{Decimal, Value};

const NIL: u8 = 0;
const BYTES: u8 = 1;
const INT: u8 = 3;
const UINT: u8 = 4;
const FLOAT: u8 = 5;
const DECIMAL: u8 = 6;
const TIME: u8 = 7;
const GROUP: usize = 8;
const MARKER: u8 = 0xFF;

/// `v` sign-flipped, big-endian: signed order becomes byte order.
pub fn encode_int(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

fn decode_int(b: [u8; 8]) -> i64 {
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

/// Appends `v`'s memcomparable form to `out`. Decimals must all have one scale (the
/// column's) for their order to hold.
pub fn encode_datum(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(NIL),
        Value::Int(i) => {
            out.push(INT);
            out.extend_from_slice(&encode_int(*i));
        }
        Value::UInt(u) => {
            out.push(UINT);
            out.extend_from_slice(&u.to_be_bytes());
        }
        Value::Double(f) => {
            out.push(FLOAT);
            let bits = f.to_bits();
            let bits = if *f >= 0.0 { bits | (1 << 63) } else { !bits };
            out.extend_from_slice(&bits.to_be_bytes());
        }
        Value::Decimal(d) => {
            out.push(DECIMAL);
            out.push(d.scale);
            out.extend_from_slice(&((d.digits as u128) ^ (1 << 127)).to_be_bytes());
        }
        Value::Bytes(b) => {
            out.push(BYTES);
            for chunk in b.chunks(GROUP).chain(
                // An exact multiple of the group size still ends with an all-pad group.
                (b.len() % GROUP == 0).then_some(&[][..]),
            ) {
                out.extend_from_slice(chunk);
                let pad = GROUP - chunk.len();
                out.extend(std::iter::repeat_n(0, pad));
                #[allow(clippy::cast_possible_truncation)] // pad <= 8
                out.push(MARKER - pad as u8);
            }
        }
        Value::Date { year, month, day } => {
            out.push(TIME);
            out.extend_from_slice(&pack_time(*year, *month, *day, 0, 0, 0, 0).to_be_bytes());
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
            out.push(TIME);
            out.extend_from_slice(
                &pack_time(*year, *month, *day, *hour, *minute, *second, *micro).to_be_bytes(),
            );
        }
    }
}

fn pack_time(y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, us: u32) -> u64 {
    let date = (u64::from(y) * 13 + u64::from(mo)) * 32 + u64::from(d);
    let secs = (u64::from(h) * 60 + u64::from(mi)) * 60 + u64::from(s);
    ((date * 86_400 + secs) << 20) | u64::from(us)
}

fn unpack_time(v: u64) -> Value {
    let us = (v & 0xF_FFFF) as u32;
    let rest = v >> 20;
    let secs = rest % 86_400;
    let date = rest / 86_400;
    let (d, ym) = ((date % 32) as u8, date / 32);
    let (mo, y) = ((ym % 13) as u8, (ym / 13) as u16);
    Value::DateTime {
        year: y,
        month: mo,
        day: d,
        hour: (secs / 3600) as u8,
        minute: (secs / 60 % 60) as u8,
        second: (secs % 60) as u8,
        micro: us,
    }
}

/// Decodes consecutive datums (a DATE decodes as a DATETIME at midnight).
///
/// # Errors
/// A description of the first malformed datum.
pub fn decode_datums(mut b: &[u8]) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    while let Some((&flag, rest)) = b.split_first() {
        b = rest;
        let take8 = |b: &mut &[u8]| -> Result<[u8; 8], String> {
            let (head, tail) = b
                .split_first_chunk::<8>()
                .ok_or_else(|| format!("datum flag {flag} truncated"))?;
            *b = tail;
            Ok(*head)
        };
        let v = match flag {
            NIL => Value::Null,
            INT => Value::Int(decode_int(take8(&mut b)?)),
            UINT => Value::UInt(u64::from_be_bytes(take8(&mut b)?)),
            FLOAT => {
                let bits = u64::from_be_bytes(take8(&mut b)?);
                let bits = if bits & (1 << 63) != 0 {
                    bits & !(1 << 63)
                } else {
                    !bits
                };
                Value::Double(f64::from_bits(bits))
            }
            DECIMAL => {
                let (&scale, rest) = b.split_first().ok_or("decimal scale truncated")?;
                let (digits, tail) = rest
                    .split_first_chunk::<16>()
                    .ok_or("decimal digits truncated")?;
                b = tail;
                Value::Decimal(Decimal {
                    digits: (u128::from_be_bytes(*digits) ^ (1 << 127)) as i128,
                    scale,
                })
            }
            TIME => unpack_time(u64::from_be_bytes(take8(&mut b)?)),
            BYTES => {
                let mut bytes = Vec::new();
                loop {
                    let (group, tail) =
                        b.split_first_chunk::<9>().ok_or("bytes group truncated")?;
                    b = tail;
                    let pad = usize::from(MARKER - group[8]);
                    if pad > GROUP {
                        return Err(format!("bytes group marker {:#x} invalid", group[8]));
                    }
                    bytes.extend_from_slice(&group[..GROUP - pad]);
                    if pad > 0 {
                        break;
                    }
                }
                Value::Bytes(bytes)
            }
            other => return Err(format!("unknown datum flag {other}")),
        };
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode_datum(&mut out, v);
        out
    }

    #[test]
    fn bytes_layout_is_tidbs() {
        assert_eq!(
            enc(&Value::Bytes(vec![1, 2, 3])),
            vec![1, 1, 2, 3, 0, 0, 0, 0, 0, 0xFA]
        );
        assert_eq!(
            enc(&Value::Bytes(vec![])),
            vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0xF7]
        );
    }

    proptest! {
        #[test]
        fn int_order_is_byte_order(a: i64, b: i64) {
            prop_assert_eq!(a.cmp(&b), enc(&Value::Int(a)).cmp(&enc(&Value::Int(b))));
            prop_assert_eq!(decode_datums(&enc(&Value::Int(a))).unwrap(), vec![Value::Int(a)]);
        }

        #[test]
        fn uint_order_is_byte_order(a: u64, b: u64) {
            prop_assert_eq!(a.cmp(&b), enc(&Value::UInt(a)).cmp(&enc(&Value::UInt(b))));
        }

        #[test]
        fn bytes_order_is_byte_order(a: Vec<u8>, b: Vec<u8>) {
            prop_assert_eq!(a.cmp(&b), enc(&Value::Bytes(a.clone())).cmp(&enc(&Value::Bytes(b.clone()))));
            prop_assert_eq!(decode_datums(&enc(&Value::Bytes(a.clone()))).unwrap(), vec![Value::Bytes(a)]);
        }

        #[test]
        fn double_order_is_byte_order(a in -1e300f64..1e300, b in -1e300f64..1e300) {
            let ord = a.partial_cmp(&b).unwrap();
            prop_assert_eq!(ord, enc(&Value::Double(a)).cmp(&enc(&Value::Double(b))));
            prop_assert_eq!(decode_datums(&enc(&Value::Double(a))).unwrap(), vec![Value::Double(a)]);
        }

        #[test]
        fn decimal_order_is_byte_order(a: i64, b: i64) {
            let d = |x: i64| Value::Decimal(Decimal { digits: i128::from(x), scale: 2 });
            prop_assert_eq!(a.cmp(&b), enc(&d(a)).cmp(&enc(&d(b))));
            prop_assert_eq!(decode_datums(&enc(&d(a))).unwrap(), vec![d(a)]);
        }

        #[test]
        fn tuples_sort_by_first_then_second(a: (Option<i64>, Vec<u8>), b: (Option<i64>, Vec<u8>)) {
            let e = |t: &(Option<i64>, Vec<u8>)| {
                let mut out = enc(&t.0.map_or(Value::Null, Value::Int));
                encode_datum(&mut out, &Value::Bytes(t.1.clone()));
                out
            };
            prop_assert_eq!(a.cmp(&b), e(&a).cmp(&e(&b)));
        }

        #[test]
        fn datetimes_order(a in (0u16..9999, 1u8..13, 1u8..32, 0u8..24, 0u8..60, 0u8..60, 0u32..1_000_000),
                           b in (0u16..9999, 1u8..13, 1u8..32, 0u8..24, 0u8..60, 0u8..60, 0u32..1_000_000)) {
            let v = |t: (u16, u8, u8, u8, u8, u8, u32)| Value::DateTime {
                year: t.0, month: t.1, day: t.2, hour: t.3, minute: t.4, second: t.5, micro: t.6 };
            prop_assert_eq!(a.cmp(&b), enc(&v(a)).cmp(&enc(&v(b))));
            prop_assert_eq!(decode_datums(&enc(&v(a))).unwrap(), vec![v(a)]);
        }
    }
}
