//! Comparison, arithmetic and LIKE over [`Value`]s.

use std::cmp::Ordering;

use sqlparser::ast::BinaryOperator;

use crate::sql::output::SqlError;
use crate::sql::types::{
    rescale, string_as_double, to_datetime, to_decimal, to_double, to_integer, trim_number_spaces,
};
use crate::sql::value::{Decimal, Value};

fn is_number(v: &Value) -> bool {
    matches!(
        v,
        Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_)
    )
}

/// `v` as the integer it is exactly, if it is one within BIGINT's signed and unsigned
/// range: an integer, a double with no fraction, or a string of an optional sign and
/// digits (spaces around it allowed). `None` for anything else (`'1e3'`, `'2.0'` and
/// fractions compare as doubles, as before).
pub(crate) fn exact_integer(v: &Value) -> Option<i128> {
    let n = match v {
        Value::Int(i) => i128::from(*i),
        Value::UInt(u) => i128::from(*u),
        Value::Double(f) if f.fract() == 0.0 && f.abs() < 2e19 => {
            #[allow(clippy::cast_possible_truncation)] // integral and below 2^65 in size
            let n = *f as i128;
            n
        }
        // i128's parser takes exactly an optional sign and digits.
        Value::Bytes(b) => std::str::from_utf8(trim_number_spaces(b))
            .ok()?
            .parse::<i128>()
            .ok()?,
        _ => return None,
    };
    (i128::from(i64::MIN)..=i128::from(u64::MAX))
        .contains(&n)
        .then_some(n)
}

/// Orders two non-NULL values as MySQL compares them (`None` when either is NULL or they
/// do not compare). Strings compare bytewise (a binary collation).
pub(crate) fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => None,
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Int(_) | Value::UInt(_), Value::Int(_) | Value::UInt(_)) => {
            Some(to_integer(a)?.cmp(&to_integer(b)?))
        }
        // An integer against a double or string that is exactly an integer compares as
        // integers: MySQL converts such a constant to the integer column's type
        // (`convert_const_to_int`), and past 2^53 a double comparison would make
        // neighbouring integers equal (and disagree with the key order of an index).
        (Value::Int(_) | Value::UInt(_), Value::Double(_) | Value::Bytes(_))
        | (Value::Double(_) | Value::Bytes(_), Value::Int(_) | Value::UInt(_)) => {
            match (exact_integer(a), exact_integer(b)) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => compare_as_doubles(a, b),
            }
        }
        (Value::Date { .. } | Value::DateTime { .. }, _)
        | (_, Value::Date { .. } | Value::DateTime { .. }) => {
            let key = |v: &Value| match to_datetime(v)? {
                Value::Date { year, month, day } => Some((year, month, day, 0, 0, 0, 0)),
                Value::DateTime {
                    year,
                    month,
                    day,
                    hour,
                    minute,
                    second,
                    micro,
                } => Some((year, month, day, hour, minute, second, micro)),
                _ => None,
            };
            Some(key(a)?.cmp(&key(b)?))
        }
        _ if matches!(a, Value::Double(_))
            || matches!(b, Value::Double(_))
            || !is_number(a)
            || !is_number(b) =>
        {
            compare_as_doubles(a, b)
        }
        _ => {
            let (x, y) = (to_decimal(a)?, to_decimal(b)?);
            let s = x.scale.max(y.scale);
            Some(rescale(x, s)?.digits.cmp(&rescale(y, s)?.digits))
        }
    }
}

/// `a` against `b` as doubles; a string reads as its numeric prefix, as in MySQL.
fn compare_as_doubles(a: &Value, b: &Value) -> Option<Ordering> {
    let num = |v: &Value| match v {
        Value::Bytes(b) => Some(string_as_double(b)),
        other => to_double(other),
    };
    num(a)?.partial_cmp(&num(b)?)
}

fn overflow(op: &str, a: &Value, b: &Value) -> SqlError {
    let t = |v: &Value| String::from_utf8_lossy(&v.to_text().unwrap_or_default()).into_owned();
    SqlError::new(
        1690,
        "22003",
        format!("BIGINT value is out of range in '({} {op} {})'", t(a), t(b)),
    )
}

/// `a op b` for an arithmetic operator.
///
/// # Errors
/// 1690 on integer or decimal overflow.
pub(crate) fn arith(op: &BinaryOperator, a: &Value, b: &Value) -> Result<Value, SqlError> {
    if *a == Value::Null || *b == Value::Null {
        return Ok(Value::Null);
    }
    let sym = op.to_string();
    // Strings in arithmetic are numbers (doubles), as MySQL converts them.
    let num = |v: &Value| match v {
        Value::Bytes(b) => Value::Double(string_as_double(b)),
        Value::Date { .. } | Value::DateTime { .. } => Value::Double(to_double(v).unwrap_or(0.0)),
        other => other.clone(),
    };
    let (a, b) = (num(a), num(b));
    if matches!(a, Value::Double(_)) || matches!(b, Value::Double(_)) {
        let (x, y) = (to_double(&a).unwrap_or(0.0), to_double(&b).unwrap_or(0.0));
        return Ok(match op {
            BinaryOperator::Plus => Value::Double(x + y),
            BinaryOperator::Minus => Value::Double(x - y),
            BinaryOperator::Multiply => Value::Double(x * y),
            BinaryOperator::Divide if y == 0.0 => Value::Null,
            BinaryOperator::Divide => Value::Double(x / y),
            BinaryOperator::Modulo if y == 0.0 => Value::Null,
            BinaryOperator::Modulo => Value::Double(x % y),
            BinaryOperator::MyIntegerDivide if y == 0.0 => Value::Null,
            #[allow(clippy::cast_possible_truncation)] // DIV truncates, as MySQL's
            BinaryOperator::MyIntegerDivide => Value::Int((x / y).trunc() as i64),
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        });
    }
    if matches!(a, Value::Decimal(_))
        || matches!(b, Value::Decimal(_))
        || matches!(op, BinaryOperator::Divide)
    {
        let (x, y) = (
            to_decimal(&a).ok_or_else(|| overflow(&sym, &a, &b))?,
            to_decimal(&b).ok_or_else(|| overflow(&sym, &a, &b))?,
        );
        let err = || overflow(&sym, &a, &b);
        let d = match op {
            BinaryOperator::Plus | BinaryOperator::Minus => {
                let s = x.scale.max(y.scale);
                let (p, q) = (
                    rescale(x, s).ok_or_else(err)?,
                    rescale(y, s).ok_or_else(err)?,
                );
                let digits = if matches!(op, BinaryOperator::Plus) {
                    p.digits.checked_add(q.digits)
                } else {
                    p.digits.checked_sub(q.digits)
                };
                Decimal {
                    digits: digits.ok_or_else(err)?,
                    scale: s,
                }
            }
            BinaryOperator::Multiply => {
                let d = Decimal {
                    digits: x.digits.checked_mul(y.digits).ok_or_else(err)?,
                    scale: x.scale + y.scale,
                };
                if d.scale > 30 {
                    rescale(d, 30).ok_or_else(err)?
                } else {
                    d
                }
            }
            BinaryOperator::Divide => {
                if y.digits == 0 {
                    return Ok(Value::Null);
                }
                // MySQL's div_precision_increment: the dividend's scale plus 4.
                let scale = (x.scale + 4).min(30);
                let num = rescale(x, scale + y.scale + 1).ok_or_else(err)?;
                let q = Decimal {
                    digits: num.digits / y.digits,
                    scale: scale + 1,
                };
                rescale(q, scale).ok_or_else(err)?
            }
            BinaryOperator::Modulo | BinaryOperator::MyIntegerDivide => {
                if y.digits == 0 {
                    return Ok(Value::Null);
                }
                let s = x.scale.max(y.scale);
                let (p, q) = (
                    rescale(x, s).ok_or_else(err)?,
                    rescale(y, s).ok_or_else(err)?,
                );
                if matches!(op, BinaryOperator::Modulo) {
                    Decimal {
                        digits: p.digits % q.digits,
                        scale: s,
                    }
                } else {
                    return Ok(Value::Int(
                        i64::try_from(p.digits / q.digits).map_err(|_| err())?,
                    ));
                }
            }
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        };
        return Ok(Value::Decimal(d));
    }
    // Both integers: exact, signed unless both are unsigned.
    let (x, y) = (to_integer(&a).unwrap_or(0), to_integer(&b).unwrap_or(0));
    let r = match op {
        BinaryOperator::Plus => x + y,
        BinaryOperator::Minus => x - y,
        BinaryOperator::Multiply => x.checked_mul(y).ok_or_else(|| overflow(&sym, &a, &b))?,
        BinaryOperator::Modulo | BinaryOperator::MyIntegerDivide if y == 0 => {
            return Ok(Value::Null);
        }
        BinaryOperator::Modulo => x % y,
        BinaryOperator::MyIntegerDivide => x / y,
        other => return Err(SqlError::unsupported(format!("operator {other}"))),
    };
    let unsigned = matches!(a, Value::UInt(_)) && matches!(b, Value::UInt(_));
    if unsigned {
        u64::try_from(r)
            .map(Value::UInt)
            .map_err(|_| overflow(&sym, &a, &b))
    } else {
        i64::try_from(r)
            .map(Value::Int)
            .map_err(|_| overflow(&sym, &a, &b))
    }
}

/// Whether `text` matches the LIKE `pattern` (`%` any run, `_` one character, `\` escapes).
/// Case-insensitive for ASCII letters, as MySQL's default collation.
pub(crate) fn like(text: &[u8], pattern: &[u8]) -> bool {
    fn go(t: &[u8], p: &[u8]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((b'%', rest)) => (0..=t.len()).any(|i| go(&t[i..], rest)),
            Some((b'_', rest)) => !t.is_empty() && go(&t[1..], rest),
            Some((b'\\', rest)) if !rest.is_empty() => {
                !t.is_empty() && t[0].eq_ignore_ascii_case(&rest[0]) && go(&t[1..], &rest[1..])
            }
            Some((c, rest)) => !t.is_empty() && t[0].eq_ignore_ascii_case(c) && go(&t[1..], rest),
        }
    }
    go(text, pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_is_exact_and_checked() {
        assert_eq!(
            arith(&BinaryOperator::Plus, &Value::Int(2), &Value::Int(3)).unwrap(),
            Value::Int(5)
        );
        assert_eq!(
            arith(
                &BinaryOperator::Multiply,
                &Value::Int(i64::MAX),
                &Value::Int(2)
            )
            .unwrap_err()
            .code,
            1690
        );
        assert_eq!(
            arith(&BinaryOperator::Divide, &Value::Int(1), &Value::Int(3))
                .unwrap()
                .to_text()
                .unwrap(),
            b"0.3333"
        );
        assert_eq!(
            arith(&BinaryOperator::Divide, &Value::Int(1), &Value::Int(0)).unwrap(),
            Value::Null
        );
        assert_eq!(
            arith(&BinaryOperator::Plus, &Value::Null, &Value::Int(1)).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn comparisons_across_types() {
        assert_eq!(
            compare(&Value::Int(2), &Value::UInt(2)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare(&Value::Int(10), &Value::Bytes(b"9".to_vec())),
            Some(Ordering::Greater)
        );
        let d = Value::Decimal(Decimal {
            digits: 150,
            scale: 2,
        });
        assert_eq!(compare(&d, &Value::Int(1)), Some(Ordering::Greater));
        assert_eq!(compare(&Value::Null, &Value::Int(1)), None);
    }

    #[test]
    fn like_patterns() {
        assert!(like(b"Group_update_leader_count", b"%group_update%"));
        assert!(like(b"abc", b"a_c"));
        assert!(!like(b"abc", b"a_"));
        assert!(like(b"a%c", b"a\\%c"));
    }
}
