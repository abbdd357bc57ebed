//! Real MariaDB 10.11.19 files (testdata/, see its README): our reader decodes every event
//! at the offsets `mariadb-binlog -vv` printed, and re-encoding gives the same bytes.

use std::path::PathBuf;

use surge_binlog::{
    ChecksumAlg, EventBody, EventType, FLAG_BINLOG_IN_USE, KvRow, MARIADB_POST_HEADER_LENS,
    RowsKind, kv_table_map, read_file_events,
};

use crate::common::at_offsets;

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn end_log_positions(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| l.split("end_log_pos ").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .filter_map(|n| n.parse().ok())
        .collect()
}

#[test]
fn every_event_of_every_fixture_decodes_at_the_printed_offsets() {
    for n in 1..=3 {
        let name = format!("mdb-bin.00000{n}");
        let events = read_file_events(testdata(&name)).unwrap();
        let vv = std::fs::read(testdata(&format!("{name}.vv.txt"))).unwrap();
        let vv = String::from_utf8_lossy(&vv);
        let offsets: Vec<u64> = events.iter().map(|(o, _)| *o).collect();
        assert_eq!(offsets, at_offsets(&vv), "{name}");
        let ends: Vec<u32> = events.iter().map(|(_, e)| e.header.log_pos).collect();
        assert_eq!(ends, end_log_positions(&vv), "{name}");
        let len = std::fs::metadata(testdata(&name)).unwrap().len();
        let (last_off, last) = events.last().unwrap();
        assert_eq!(last_off + u64::from(last.header.event_size), len);
    }
}

#[test]
fn re_encoding_fixture_events_gives_identical_bytes() {
    for n in 1..=3 {
        let name = format!("mdb-bin.00000{n}");
        let bytes = std::fs::read(testdata(&name)).unwrap();
        for (off, ev) in read_file_events(testdata(&name)).unwrap() {
            let again = ev.encode(ChecksumAlg::Crc32);
            let o = off as usize;
            assert_eq!(again, bytes[o..o + again.len()], "{name} at {off}");
        }
    }
}

#[test]
fn fixture_contents_are_what_the_session_did() {
    let events = read_file_events(testdata("mdb-bin.000001")).unwrap();
    let EventBody::FormatDescription(fd) = &events[0].1.body else {
        panic!("first event is not a Format_description")
    };
    assert_eq!(fd.post_header_lens, MARIADB_POST_HEADER_LENS.to_vec());
    assert_eq!(fd.checksum_alg, ChecksumAlg::Crc32);
    let mut gtids = Vec::new();
    let mut xids = Vec::new();
    let mut rows = Vec::new();
    for (_, ev) in &events {
        match &ev.body {
            EventBody::Gtid(g) => gtids.push((g.domain_id, ev.header.server_id, g.seq_no)),
            EventBody::Xid(x) => xids.push(*x),
            EventBody::TableMap(t) => {
                let mut ours = kv_table_map(t.table_id);
                ours.table_id = 60;
                assert_eq!(*t, ours, "our kv Table_map matches MariaDB's");
            }
            EventBody::Rows(r) => rows.push((r.kind, r.kv_rows().unwrap())),
            _ => {}
        }
    }
    assert_eq!(gtids, (1..=6).map(|s| (0, 1, s)).collect::<Vec<_>>());
    assert_eq!(xids, vec![606_898, 606_900, 606_904]);
    let row = |k: &[u8], v: &[u8]| KvRow {
        key: k.to_vec(),
        value: Some(v.to_vec()),
    };
    assert_eq!(
        rows[0],
        (
            RowsKind::Write,
            vec![row(b"alpha", b"1"), row(b"beta", b"2")]
        )
    );
    assert_eq!(
        rows[1],
        (RowsKind::Write, vec![row(b"gamma", &[b'x'; 300])])
    );
    assert_eq!(
        rows[2],
        (
            RowsKind::Update,
            vec![row(b"beta", b"2"), row(b"beta", b"20")]
        )
    );
    assert_eq!(rows[3], (RowsKind::Delete, vec![row(b"alpha", b"1")]));
    assert_eq!(
        rows[4],
        (RowsKind::Write, vec![row(&[0, 0xff, 0x10], &[1, 2])])
    );
    let EventBody::Rotate(r) = &events.last().unwrap().1.body else {
        panic!("last event is not a Rotate")
    };
    assert_eq!((r.position, r.next_file.as_str()), (4, "mdb-bin.000002"));
}

#[test]
fn in_use_flag_of_the_open_fixture_is_seen_and_its_crc_still_holds() {
    let events = read_file_events(testdata("mdb-bin.000003")).unwrap();
    assert_eq!(events[0].1.header.event_type, EventType::FormatDescription);
    assert_ne!(events[0].1.header.flags & FLAG_BINLOG_IN_USE, 0);
    let closed = read_file_events(testdata("mdb-bin.000002")).unwrap();
    assert_eq!(closed[0].1.header.flags & FLAG_BINLOG_IN_USE, 0);
    let EventBody::GtidList(l) = &closed[1].1.body else {
        panic!("second event is not a Gtid_list")
    };
    assert_eq!(l.gtids.len(), 1);
    assert_eq!(l.gtids[0].to_string(), "0-1-6");
}

#[test]
fn damaged_fixture_bytes_give_errors_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read(testdata("mdb-bin.000002")).unwrap();
    // (mutation, expected offset of the error)
    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(Mutation, u64, &str)> = vec![
        (Box::new(|b: &mut Vec<u8>| b[0] = b'x'), 0, "bad magic"),
        (Box::new(|b: &mut Vec<u8>| b[360] ^= 0x40), 340, "checksum"),
        (
            Box::new(|b: &mut Vec<u8>| b.truncate(600)),
            577,
            "truncated",
        ),
        (
            Box::new(|b: &mut Vec<u8>| b[340 + 4] = 99),
            340,
            "unknown event type 99",
        ),
        (
            Box::new(|b: &mut Vec<u8>| b[340 + 9..340 + 13].copy_from_slice(&3u32.to_le_bytes())),
            340,
            "bad event length",
        ),
    ];
    for (i, (mutate, offset, text)) in cases.into_iter().enumerate() {
        let mut b = src.clone();
        mutate(&mut b);
        let p = dir.path().join(format!("bad{i}"));
        std::fs::write(&p, &b).unwrap();
        let err = read_file_events(&p).unwrap_err();
        let msg = err.to_string();
        match &err {
            surge_binlog::Error::Corrupt {
                file, offset: o, ..
            } => {
                assert_eq!((file, *o), (&p, offset), "case {i}: {msg}");
            }
            other => panic!("case {i}: {other}"),
        }
        assert!(
            msg.contains(text) && msg.contains(&format!("bad{i}")),
            "case {i}: {msg}"
        );
        let (o, _) = surge_binlog::decode_file_bytes(&b).unwrap_err();
        assert_eq!(o, offset, "in-memory decoder, case {i}");
    }
}
