//! Property tests for the MySQL server's decoders: the packet framing and the
//! COM_STMT_EXECUTE parameter decoder never panic on any bytes, and what their encoders
//! write decodes back. The same checks run under the fuzzers (`fuzz/fuzz_targets/mysql_*.rs`).
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use surgedb::mysql::binary_row;
use surgedb::mysql::checks::{check_execute, check_packets};
use surgedb::mysql::{
    PacketError, ParamType, decode_execute_params, decode_packets, encode_execute, encode_packets,
};
use surgedb::sql::{ColumnKind, ColumnMeta, Decimal, Value};

use mysql_common::constants::ColumnType as C;

/// A parameter type and a value of it, as a client would send them.
fn typed_param() -> impl Strategy<Value = (ParamType, Value)> {
    prop_oneof![
        any::<i8>().prop_map(|v| (ParamType::new(C::MYSQL_TYPE_TINY), Value::Int(v.into()))),
        any::<u8>().prop_map(|v| (
            ParamType::unsigned(C::MYSQL_TYPE_TINY),
            Value::UInt(v.into())
        )),
        any::<i16>().prop_map(|v| (ParamType::new(C::MYSQL_TYPE_SHORT), Value::Int(v.into()))),
        any::<i32>().prop_map(|v| (ParamType::new(C::MYSQL_TYPE_LONG), Value::Int(v.into()))),
        any::<u32>().prop_map(|v| (
            ParamType::unsigned(C::MYSQL_TYPE_LONG),
            Value::UInt(v.into())
        )),
        any::<i64>().prop_map(|v| (ParamType::new(C::MYSQL_TYPE_LONGLONG), Value::Int(v))),
        any::<u64>().prop_map(|v| (ParamType::unsigned(C::MYSQL_TYPE_LONGLONG), Value::UInt(v))),
        any::<f32>()
            .prop_filter("not NaN", |f| !f.is_nan())
            .prop_map(|v| (ParamType::new(C::MYSQL_TYPE_FLOAT), Value::Double(v.into()))),
        any::<f64>()
            .prop_filter("not NaN", |f| !f.is_nan())
            .prop_map(|v| (ParamType::new(C::MYSQL_TYPE_DOUBLE), Value::Double(v))),
        (any::<i64>(), 0u8..10).prop_map(|(d, s)| (
            ParamType::new(C::MYSQL_TYPE_NEWDECIMAL),
            Value::Decimal(Decimal {
                digits: d.into(),
                scale: s
            })
        )),
        proptest::collection::vec(any::<u8>(), 0..300)
            .prop_map(|b| (ParamType::new(C::MYSQL_TYPE_VAR_STRING), Value::Bytes(b))),
        (65_530usize..65_540, any::<u8>())
            // Around the 3-byte length boundary (65 536); one repeated byte keeps it cheap.
            .prop_map(|(n, b)| (ParamType::new(C::MYSQL_TYPE_BLOB), Value::Bytes(vec![b; n]))),
        (0u16..=9999, 1u8..=12, 1u8..=31).prop_map(|(year, month, day)| (
            ParamType::new(C::MYSQL_TYPE_DATE),
            Value::Date { year, month, day }
        )),
        (
            0u16..=9999,
            1u8..=12,
            1u8..=31,
            0u8..24,
            0u8..60,
            0u8..60,
            0u32..1_000_000
        )
            .prop_map(|(year, month, day, hour, minute, second, micro)| (
                ParamType::new(C::MYSQL_TYPE_DATETIME),
                Value::DateTime {
                    year,
                    month,
                    day,
                    hour,
                    minute,
                    second,
                    micro
                }
            )),
        Just((ParamType::new(C::MYSQL_TYPE_VAR_STRING), Value::Null)),
        Just((ParamType::new(C::MYSQL_TYPE_NULL), Value::Null)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn packet_decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..2048), max in 1usize..4096) {
        check_packets(&data, max).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn packets_round_trip(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..5000), 0..6), seq in any::<u8>()) {
        let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
        let wire = encode_packets(&refs, seq);
        let (decoded, rest) = decode_packets(&wire, seq, 1 << 20).unwrap();
        prop_assert_eq!(rest, 0);
        prop_assert_eq!(&decoded, &payloads);
        // Every cut of the stream decodes a prefix of the packets, never an error.
        let cut = wire.len() / 2;
        let (prefix, _) = decode_packets(&wire[..cut], seq, 1 << 20).unwrap();
        prop_assert!(prefix.len() <= refs.len());
    }

    #[test]
    fn oversized_packets_are_refused(len in 1025usize..100_000) {
        let wire = encode_packets(&[&vec![0u8; len]], 0);
        let err = decode_packets(&wire[..4], 0, 1024).unwrap_err();
        let too_large = matches!(err, PacketError::TooLarge { max: 1024 });
        prop_assert!(too_large, "{}", err);
    }

    #[test]
    fn the_fuzz_check_round_trips_encoder_output(params in proptest::collection::vec(typed_param(), 0..12)) {
        // The layout check_execute reads: count, bound-before flag (0), then the body.
        let mut data = vec![u8::try_from(params.len()).unwrap(), 0];
        data.extend(encode_execute(3, &params, true));
        check_execute(&data).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn execute_decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_execute(&data).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn execute_decoder_never_panics_on_plausible_heads(
        params in 0u16..20,
        types in proptest::collection::vec((any::<u8>(), any::<bool>()), 0..20),
        tail in proptest::collection::vec(any::<u8>(), 0..200),
        bound_flag in 0u8..3,
    ) {
        // A well-formed head so the fuzz reaches the values.
        let mut body = vec![1, 0, 0, 0, 0, 1, 0, 0, 0];
        body.extend(std::iter::repeat_n(0u8, usize::from(params).div_ceil(8)));
        body.push(bound_flag);
        for (t, u) in &types {
            body.push(*t);
            body.push(if *u { 0x80 } else { 0 });
        }
        body.extend_from_slice(&tail);
        let _ = decode_execute_params(&body, params, &mut None, &[]);
    }

    #[test]
    fn execute_round_trips_and_reexecution_reuses_types(
        first in proptest::collection::vec(typed_param(), 1..12),
        seed in any::<u64>(),
    ) {
        let n = u16::try_from(first.len()).unwrap();
        let mut bound = None;
        let body = encode_execute(9, &first, true);
        let got = decode_execute_params(&body, n, &mut bound, &[]).unwrap();
        let want: Vec<Value> = first.iter().map(|(_, v)| v.clone()).collect();
        prop_assert_eq!(&got, &want);
        // Second execution: same types, other values (the NULLs moved), no types sent.
        let second: Vec<(ParamType, Value)> = first
            .iter()
            .enumerate()
            .map(|(i, (t, v))| if (seed >> (i % 64)) & 1 == 1 { (*t, Value::Null) } else { (*t, v.clone()) })
            .collect();
        let body = encode_execute(9, &second, false);
        let got = decode_execute_params(&body, n, &mut bound, &[]).unwrap();
        let want: Vec<Value> = second.iter().map(|(_, v)| v.clone()).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn binary_rows_never_panic(values in proptest::collection::vec(typed_param(), 0..8), kinds in proptest::collection::vec(0usize..15, 0..8)) {
        let all = [
            ColumnKind::Tiny, ColumnKind::Short, ColumnKind::Int24, ColumnKind::Long,
            ColumnKind::LongLong, ColumnKind::Float, ColumnKind::Double, ColumnKind::NewDecimal,
            ColumnKind::String, ColumnKind::VarString, ColumnKind::Blob, ColumnKind::Date,
            ColumnKind::DateTime, ColumnKind::Timestamp, ColumnKind::Null,
        ];
        let columns: Vec<ColumnMeta> = kinds.iter().map(|&k| ColumnMeta::expr("c", all[k])).collect();
        let row: Vec<Value> = values.into_iter().map(|(_, v)| v).take(columns.len()).collect();
        let _ = binary_row(&columns, &row);
    }
}
