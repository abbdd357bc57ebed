//! Table-driven tests of the COM_STMT_EXECUTE decoder.

use super::*;
use crate::mysql::execute_encoder::encode_execute;
use crate::mysql::param_values::parse_decimal;
use crate::sql::Decimal;
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
