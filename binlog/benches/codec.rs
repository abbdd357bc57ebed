//! Codec costs: encoding and decoding the events of a small transaction, and decoding a
//! real MariaDB file.
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use surge_binlog::{
    BinlogCharset, BinlogColumn, BinlogDate, BinlogDateTime, BinlogTable, BinlogType, BinlogValue,
    ChecksumAlg, Event, EventBody, GtidEvent, RowsEvent, RowsKind, decode_file_bytes, kv_table_map,
};

/// A sysbench-like `sbtest` row with a decimal and a datetime: 6 columns.
fn sql_table_and_row() -> (BinlogTable, Vec<BinlogValue>) {
    let utf8 = BinlogCharset::Utf8mb4;
    let table = BinlogTable::new(
        "sbtest",
        "sbtest1",
        7,
        vec![
            BinlogColumn::new("id", BinlogType::Int),
            BinlogColumn::new("k", BinlogType::Int),
            BinlogColumn::new(
                "c",
                BinlogType::Char {
                    len: 120,
                    charset: utf8,
                },
            ),
            BinlogColumn::new(
                "pad",
                BinlogType::Char {
                    len: 60,
                    charset: utf8,
                },
            ),
            BinlogColumn::new(
                "price",
                BinlogType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            ),
            BinlogColumn::new("at", BinlogType::DateTime { fsp: 3 }).nullable(),
        ],
    )
    .expect("valid table");
    let row = vec![
        BinlogValue::Int(42),
        BinlogValue::Int(5_000),
        BinlogValue::text(&"83868641912-".repeat(10)),
        BinlogValue::text(&"67847967377-".repeat(5)),
        BinlogValue::Decimal("12345.67".to_string()),
        BinlogValue::DateTime(BinlogDateTime::new(
            BinlogDate::new(2026, 12, 2),
            1,
            2,
            3,
            456_000,
        )),
    ];
    (table, row)
}

fn small_rows() -> Event {
    // One 200-byte-ish Write_rows for surgedb.kv: key 8 bytes, value 150 bytes.
    let mut rows = vec![0xfc, 8, 0];
    rows.extend_from_slice(&42u64.to_be_bytes());
    rows.extend_from_slice(&150u32.to_le_bytes());
    rows.extend_from_slice(&[0x61; 150]);
    Event::new(
        EventBody::Rows(RowsEvent {
            kind: RowsKind::Write,
            table_id: 1,
            flags: 1,
            column_count: 2,
            columns_present: vec![3],
            columns_after: None,
            rows,
        }),
        1_700_000_000,
        1,
    )
}

fn codec(c: &mut Criterion) {
    let rows = small_rows();
    let rows_bytes = rows.encode(ChecksumAlg::Crc32);
    let map = Event::new(EventBody::TableMap(kv_table_map(1)), 1_700_000_000, 1);
    let gtid = Event::new(
        EventBody::Gtid(GtidEvent::transactional(0, 12_345)),
        1_700_000_000,
        1,
    );
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(rows_bytes.len() as u64));
    g.bench_function("encode_write_rows_200B", |b| {
        let mut out = Vec::with_capacity(512);
        b.iter(|| {
            out.clear();
            black_box(&rows).encode_into(&mut out, ChecksumAlg::Crc32)
        })
    });
    g.bench_function("decode_write_rows_200B", |b| {
        b.iter(|| Event::decode(black_box(&rows_bytes), ChecksumAlg::Crc32))
    });
    g.bench_function("encode_txn_gtid_map_rows_xid", |b| {
        let xid = Event::new(EventBody::Xid(7), 1_700_000_000, 1);
        let mut out = Vec::with_capacity(1024);
        b.iter(|| {
            out.clear();
            for e in [&gtid, &map, &rows, &xid] {
                e.encode_into(&mut out, ChecksumAlg::Crc32);
            }
            black_box(out.len())
        })
    });
    g.finish();

    let (table, row) = sql_table_and_row();
    let mut image = Vec::new();
    table.encode_row(&row, &mut image).expect("fits");
    let mut g = c.benchmark_group("sql_row");
    g.throughput(Throughput::Bytes(image.len() as u64));
    g.bench_function("encode_sbtest_row", |b| {
        let mut out = Vec::with_capacity(512);
        b.iter(|| {
            out.clear();
            table.encode_row(black_box(&row), &mut out)
        })
    });
    g.bench_function("decode_sbtest_row", |b| {
        b.iter(|| table.decode_row(black_box(&image)).map(|(r, _)| r.len()))
    });
    g.bench_function("table_map", |b| b.iter(|| black_box(&table).table_map()));
    g.finish();

    let fixture = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/mdb-bin.000001"
    ))
    .expect("fixture file");
    let mut g = c.benchmark_group("file");
    g.throughput(Throughput::Bytes(fixture.len() as u64));
    g.bench_function("decode_mariadb_fixture", |b| {
        b.iter(|| decode_file_bytes(black_box(&fixture)).map(|v| v.len()))
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
