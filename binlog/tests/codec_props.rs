//! Property tests of the codec: every body round-trips; any corruption of an encoded event
//! is an error; random bytes never panic the decoders.

use proptest::prelude::*;
use surge_binlog::{
    BinlogCheckpoint, ChecksumAlg, Event, EventBody, FormatDescription, Gtid, GtidEvent, GtidList,
    KvRow, QueryEvent, Rotate, RowsEvent, RowsKind, TableMap, decode_file_bytes,
};

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9_]{0,40}"
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn gtid() -> impl Strategy<Value = Gtid> {
    (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(d, s, n)| Gtid {
        domain_id: d,
        server_id: s,
        seq_no: n,
    })
}

fn body() -> impl Strategy<Value = EventBody> {
    prop_oneof![
        (any::<u32>(), any::<bool>()).prop_map(|(ts, crc)| {
            let alg = if crc {
                ChecksumAlg::Crc32
            } else {
                ChecksumAlg::Off
            };
            EventBody::FormatDescription(FormatDescription::mariadb(alg, ts))
        }),
        (0u8..16, proptest::collection::vec(gtid(), 0..20))
            .prop_map(|(flags, gtids)| EventBody::GtidList(GtidList { flags, gtids })),
        name().prop_map(|file| EventBody::BinlogCheckpoint(BinlogCheckpoint { file })),
        (any::<u64>(), any::<u32>(), any::<u8>(), 6usize..600).prop_map(|(s, d, f, pad)| {
            EventBody::Gtid(GtidEvent {
                seq_no: s,
                domain_id: d,
                flags2: f,
                tail: vec![0; pad],
            })
        }),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u16>(),
            bytes(60),
            "[a-z]{0,20}",
            bytes(300)
        )
            .prop_map(|(t, e, c, sv, db, q)| {
                EventBody::Query(QueryEvent {
                    thread_id: t,
                    exec_time: e,
                    error_code: c,
                    status_vars: sv,
                    database: db.into_bytes(),
                    query: q,
                })
            }),
        bytes(200).prop_map(EventBody::AnnotateRows),
        (
            0u64..(1 << 48),
            any::<u16>(),
            name(),
            name(),
            bytes(300),
            bytes(40),
            bytes(20)
        )
            .prop_map(|(id, fl, db, t, types, meta, opt)| {
                let nb = types.len().div_ceil(8);
                EventBody::TableMap(TableMap {
                    table_id: id,
                    flags: fl,
                    database: db,
                    table: t,
                    null_bitmap: vec![0x5a; nb],
                    column_types: types,
                    metadata: meta,
                    optional_metadata: opt,
                })
            }),
        (
            0usize..3,
            0u64..(1 << 48),
            any::<u16>(),
            0u64..300,
            bytes(500)
        )
            .prop_map(|(k, id, fl, cols, rows)| {
                let kind = [RowsKind::Write, RowsKind::Update, RowsKind::Delete][k];
                let w = cols.div_ceil(8) as usize;
                EventBody::Rows(RowsEvent {
                    kind,
                    table_id: id,
                    flags: fl,
                    column_count: cols,
                    columns_present: vec![0xa5; w],
                    columns_after: (kind == RowsKind::Update).then(|| vec![0x3c; w]),
                    rows,
                })
            }),
        any::<u64>().prop_map(EventBody::Xid),
        (any::<u64>(), name()).prop_map(|(p, n)| EventBody::Rotate(Rotate {
            position: p,
            next_file: n
        })),
    ]
}

fn alg() -> impl Strategy<Value = ChecksumAlg> {
    prop_oneof![Just(ChecksumAlg::Crc32), Just(ChecksumAlg::Off)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_body_round_trips(b in body(), ts in any::<u32>(), sid in any::<u32>(),
                              pos in any::<u32>(), alg in alg()) {
        let mut ev = Event::new(b, ts, sid);
        ev.header.log_pos = pos;
        let bytes = ev.encode(alg);
        let back = Event::decode(&bytes, alg).unwrap();
        prop_assert_eq!(back.header.event_size as usize, bytes.len());
        prop_assert_eq!(&back.body, &ev.body);
        prop_assert_eq!((back.header.timestamp, back.header.server_id, back.header.log_pos),
                        (ts, sid, pos));
        prop_assert_eq!(back.encode(alg), bytes);
    }

    #[test]
    fn a_borrowed_body_encodes_as_an_owned_one(b in body(), ts in any::<u32>(),
                                               sid in any::<u32>(), offset in any::<u64>(),
                                               alg in alg(), prefix in bytes(8)) {
        // After bytes already in the buffer, as a writer appends them.
        let mut want = prefix.clone();
        let size = Event::new(b.clone(), ts, sid).encode_at(offset, alg, &mut want);
        let mut got = prefix;
        prop_assert_eq!(Event::encode_body_at(&b, ts, sid, offset, alg, &mut got), size);
        prop_assert_eq!(got, want);
    }

    #[test]
    fn any_flipped_byte_is_an_error(b in body(), at in any::<prop::sample::Index>(),
                                    bit in 0u8..8) {
        let is_fd = matches!(b, EventBody::FormatDescription(_));
        prop_assume!(!is_fd);
        let mut bytes = Event::new(b, 1, 1).encode(ChecksumAlg::Crc32);
        let i = at.index(bytes.len());
        bytes[i] ^= 1 << bit;
        prop_assert!(Event::decode(&bytes, ChecksumAlg::Crc32).is_err());
    }

    #[test]
    fn cut_events_are_errors(b in body(), at in any::<prop::sample::Index>()) {
        let bytes = Event::new(b, 1, 1).encode(ChecksumAlg::Crc32);
        let n = at.index(bytes.len());
        prop_assert!(Event::decode(&bytes[..n], ChecksumAlg::Crc32).is_err());
    }

    #[test]
    fn random_bytes_never_panic(data in bytes(400), alg in alg()) {
        if let Ok(ev) = Event::decode(&data, alg) {
            let again = Event::decode(&ev.encode(alg), alg).unwrap();
            prop_assert_eq!(again.body, ev.body);
        }
        let mut file = surge_binlog::BINLOG_MAGIC.to_vec();
        file.extend_from_slice(&data);
        let _ = decode_file_bytes(&file);
    }

    #[test]
    fn random_bodies_behind_valid_headers_never_panic(code in prop::sample::select(
            vec![2u8, 4, 15, 16, 19, 23, 24, 25, 160, 161, 162, 163]), body in bytes(300)) {
        // A correct header and CRC around arbitrary body bytes: the body parsers must
        // reject or accept without panicking.
        let mut b = vec![0u8; 19];
        b[4] = code;
        b.extend_from_slice(&body);
        let size = (b.len() + 4) as u32;
        b[9..13].copy_from_slice(&size.to_le_bytes());
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        let _ = Event::decode(&b, ChecksumAlg::Crc32);
    }
}

/// One kv statement: 0 insert, 1 update, 2 delete; key; value (up to 12 KB, so caches spill
/// and statements are cut into several rows events).
fn kv_statement() -> impl Strategy<Value = (u8, Vec<u8>, Vec<u8>)> {
    (0u8..3, bytes(80), bytes(12_000))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn kv_statements_decode_to_the_rows_written(
        stmts in proptest::collection::vec(kv_statement(), 1..25)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = surge_binlog::Binlog::open(crate::common::test_config(dir.path())).unwrap();
        let mut cache = log.new_cache();
        let mut want = Vec::new();
        for (kind, key, value) in &stmts {
            let row = |value: Option<&Vec<u8>>| KvRow { key: key.clone(), value: value.cloned() };
            match kind {
                0 => {
                    cache.put(key, value).unwrap();
                    want.push((RowsKind::Write, row(Some(value))));
                }
                1 => {
                    cache.update(key, value).unwrap();
                    want.push((RowsKind::Update, row(None)));
                    want.push((RowsKind::Update, row(Some(value))));
                }
                _ => {
                    cache.delete(key).unwrap();
                    want.push((RowsKind::Delete, row(None)));
                }
            }
        }
        log.commit(cache, 1).unwrap();
        let got: Vec<(RowsKind, KvRow)> = log
            .reader()
            .unwrap()
            .map(|r| r.unwrap().1.body)
            .filter_map(|b| match b {
                EventBody::Rows(r) => Some(r),
                _ => None,
            })
            .flat_map(|r| r.kv_rows().unwrap().into_iter().map(move |row| (r.kind, row)))
            .collect();
        prop_assert_eq!(got, want);
    }
}
