//! Tests of the snapshot stream's codec: round trips, every kind of damage named with its
//! offset, bounded pieces, a refusing sink, and a property test that no prefix or bit flip
//! of a valid stream panics or decodes to anything but the original.

use std::io;

use proptest::prelude::*;

use super::format::{MAGIC, TAG_END, TAG_ENTRY, TAG_HEADER};
use super::*;
use crate::engine::cf::Cf;
use crate::engine::key_codec::{encode_key, encode_key_with_ts};
use crate::engine::region_record::RegionRecord;

type Entries = Vec<(Cf, Vec<u8>, Vec<u8>)>;

fn record(start: &[u8], end: &[u8]) -> RegionRecord {
    RegionRecord {
        start: start.to_vec(),
        end: end.to_vec(),
        state: b"region state".to_vec(),
    }
}

/// The stream of `entries` under `rec` at applied index 42.
fn encode(rec: &RegionRecord, entries: &Entries) -> Vec<u8> {
    let mut out = Vec::new();
    let mut sink = |piece: &[u8]| -> io::Result<()> {
        out.extend_from_slice(piece);
        Ok(())
    };
    let mut w = SnapshotStreamWriter::new(&mut sink, 42, rec).unwrap();
    for (cf, k, v) in entries {
        w.entry(*cf, k, v).unwrap();
    }
    w.finish().unwrap();
    out
}

fn decode(mut bytes: &[u8]) -> Result<(SnapshotStreamHeader, Entries), SnapshotStreamError> {
    let mut r = SnapshotStreamReader::open(&mut bytes)?;
    let mut out = Vec::new();
    while let Some(e) = r.next_entry()? {
        out.push((e.cf, e.key.to_vec(), e.value.to_vec()));
    }
    assert_eq!(r.next_entry(), Ok(None), "the end stays the end");
    Ok((r.header().clone(), out))
}

fn sample() -> Entries {
    vec![
        (Cf::Lock, encode_key(b"c"), b"lock".to_vec()),
        (Cf::Write, encode_key_with_ts(b"c", 9), b"w".to_vec()),
        (Cf::Default, encode_key_with_ts(b"d", 7), vec![7u8; 300]),
        (Cf::Default, encode_key_with_ts(b"e", 7), Vec::new()),
    ]
}

/// One record of `tag` with a correct CRC.
fn raw_record(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Offsets of the records of a valid stream (after the magic), by walking their lengths.
fn record_offsets(stream: &[u8]) -> Vec<usize> {
    let mut at = MAGIC.len();
    let mut out = Vec::new();
    while at < stream.len() {
        out.push(at);
        let len = u32::from_le_bytes(stream[at + 1..at + 5].try_into().unwrap()) as usize;
        at += 5 + len + 4;
    }
    out
}

#[test]
fn entries_round_trip_with_the_header() {
    let rec = record(b"b", b"x");
    for entries in [Vec::new(), sample()] {
        let (header, back) = decode(&encode(&rec, &entries)).unwrap();
        assert_eq!(
            header,
            SnapshotStreamHeader {
                applied_index: 42,
                record: rec.clone()
            }
        );
        assert_eq!(back, entries);
    }
}

/// A reader that gives at most three bytes per call, and is interrupted every other call.
struct Trickle<'a> {
    bytes: &'a [u8],
    calls: usize,
}

impl io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls.is_multiple_of(2) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = buf.len().min(3).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn a_reader_giving_a_few_bytes_at_a_time_reads_the_same() {
    let rec = record(b"b", b"x");
    let bytes = encode(&rec, &sample());
    let mut input = Trickle {
        bytes: &bytes,
        calls: 0,
    };
    let mut r = SnapshotStreamReader::open(&mut input).unwrap();
    let mut back = Vec::new();
    while let Some(e) = r.next_entry().unwrap() {
        back.push((e.cf, e.key.to_vec(), e.value.to_vec()));
    }
    assert_eq!(back, sample());
    assert_eq!(r.offset(), bytes.len() as u64);
}

#[test]
fn every_damage_is_an_error_naming_its_offset() {
    let rec = record(b"b", b"x");
    let good = encode(&rec, &sample());
    let offsets = record_offsets(&good);
    let (header_at, first_entry, end_at) = (offsets[0], offsets[1], *offsets.last().unwrap());
    let with = |at: usize, byte: u8| {
        let mut s = good.clone();
        s[at] = byte;
        s
    };
    // The end record rebuilt with `payload` (its own CRC correct).
    let with_end = |payload: &[u8]| {
        let mut s = good[..end_at].to_vec();
        s.extend(raw_record(TAG_END, payload));
        s
    };
    let end_payload = good[end_at + 5..good.len() - 4].to_vec();
    let mut wrong_stream_crc = end_payload.clone();
    wrong_stream_crc[16] ^= 1;
    let mut wrong_count = end_payload.clone();
    wrong_count[0] += 1;
    let out_of_range = {
        let mut s = good[..first_entry].to_vec();
        let mut p = vec![0u8];
        let key = encode_key(b"z");
        p.extend_from_slice(&(key.len() as u32).to_le_bytes());
        p.extend_from_slice(&key);
        s.extend(raw_record(TAG_ENTRY, &p));
        s
    };
    let second_header = {
        let mut s = good[..first_entry].to_vec();
        s.extend_from_slice(&good[header_at..first_entry]);
        s
    };
    let bad_cf = {
        let mut s = good[..first_entry].to_vec();
        s.extend(raw_record(TAG_ENTRY, &[7, 0, 0, 0, 0]));
        s
    };
    let mut oversized = good.clone();
    oversized[first_entry + 1..first_entry + 5].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut trailing = good.clone();
    trailing.push(0);
    let cases: Vec<(&str, Vec<u8>, SnapshotStreamError)> = vec![
        (
            "bad magic",
            with(0, b'X'),
            SnapshotStreamError::BadMagic {
                found: *b"XGSNAPS1",
            },
        ),
        (
            "empty",
            Vec::new(),
            SnapshotStreamError::Truncated {
                offset: 0,
                what: "magic",
            },
        ),
        (
            "no header",
            MAGIC.to_vec(),
            SnapshotStreamError::Truncated {
                offset: 8,
                what: "header record",
            },
        ),
        (
            "cut inside an entry",
            good[..first_entry + 7].to_vec(),
            SnapshotStreamError::Truncated {
                offset: first_entry as u64,
                what: "record payload",
            },
        ),
        (
            "cut before the end record",
            good[..end_at].to_vec(),
            SnapshotStreamError::Truncated {
                offset: end_at as u64,
                what: "stream (no end record)",
            },
        ),
        (
            "unknown record type",
            with(first_entry, 9),
            SnapshotStreamError::UnknownRecord {
                offset: first_entry as u64,
                tag: 9,
            },
        ),
        (
            "oversized length",
            oversized,
            SnapshotStreamError::Oversized {
                offset: first_entry as u64,
                len: u64::from(u32::MAX),
                max: u64::from(SNAPSHOT_STREAM_MAX_RECORD),
            },
        ),
        (
            "flipped value byte",
            with(first_entry + 5 + 5 + 9, good[first_entry + 19] ^ 0x10),
            SnapshotStreamError::Checksum {
                offset: first_entry as u64,
                what: "record",
                stored: 0,
                computed: 0,
            },
        ),
        (
            "wrong stream CRC",
            with_end(&wrong_stream_crc),
            SnapshotStreamError::Checksum {
                offset: end_at as u64,
                what: "stream",
                stored: 0,
                computed: 0,
            },
        ),
        (
            "wrong entry count",
            with_end(&wrong_count),
            SnapshotStreamError::CountMismatch {
                offset: end_at as u64,
                what: "entries",
                stored: 5,
                found: 4,
            },
        ),
        (
            "end payload too short",
            with_end(&end_payload[..19]),
            SnapshotStreamError::Malformed {
                offset: end_at as u64,
                what: "end",
                reason: "payload is not 20 bytes",
            },
        ),
        (
            "key outside the range",
            out_of_range,
            SnapshotStreamError::OutOfRange {
                offset: first_entry as u64,
            },
        ),
        (
            "second header",
            second_header,
            SnapshotStreamError::OutOfOrder {
                offset: first_entry as u64,
                found: "header",
                expected: "entry or end",
            },
        ),
        (
            "unknown column family",
            bad_cf,
            SnapshotStreamError::Malformed {
                offset: first_entry as u64,
                what: "entry",
                reason: "unknown column family",
            },
        ),
        (
            "trailing bytes",
            trailing,
            SnapshotStreamError::TrailingBytes {
                offset: good.len() as u64,
            },
        ),
        (
            "entry first",
            [MAGIC.as_slice(), &good[first_entry..]].concat(),
            SnapshotStreamError::OutOfOrder {
                offset: 8,
                found: "entry",
                expected: "header",
            },
        ),
        (
            "header too short",
            [MAGIC.as_slice(), &raw_record(TAG_HEADER, &[0; 15])].concat(),
            SnapshotStreamError::Malformed {
                offset: 8,
                what: "header",
                reason: "shorter than its fixed fields",
            },
        ),
    ];
    for (name, bytes, want) in cases {
        let got = decode(&bytes).expect_err(name);
        match (&got, &want) {
            // The CRC values themselves are not worth spelling out.
            (
                SnapshotStreamError::Checksum { offset, what, .. },
                SnapshotStreamError::Checksum {
                    offset: o, what: w, ..
                },
            ) => assert_eq!((offset, what), (o, w), "{name}: {got}"),
            _ => assert_eq!(got, want, "{name}"),
        }
        assert!(got.to_string().contains("byte"), "{name}: {got}");
    }
}

#[test]
fn pieces_stay_bounded_for_a_20_mib_stream_and_a_large_record() {
    let rec = record(b"", b"");
    let mut pieces = Vec::new();
    let mut total = 0usize;
    let mut sink = |piece: &[u8]| -> io::Result<()> {
        pieces.push(piece.len());
        total += piece.len();
        Ok(())
    };
    let mut w = SnapshotStreamWriter::new(&mut sink, 1, &rec).unwrap();
    let value = vec![5u8; 4096];
    for i in 0..5120u32 {
        w.entry(
            Cf::Default,
            &encode_key_with_ts(&i.to_be_bytes(), 1),
            &value,
        )
        .unwrap();
    }
    w.entry(Cf::Default, &encode_key(b"big"), &vec![1u8; 3 << 20])
        .unwrap();
    w.finish().unwrap();
    assert!(total > 23 << 20, "{total}");
    let max = pieces.iter().copied().max().unwrap();
    assert!(max <= SNAPSHOT_STREAM_MAX_PIECE, "a piece of {max} bytes");
    assert!(pieces.len() > 20, "{} pieces", pieces.len());
}

#[test]
fn a_refusing_sink_stops_the_writer() {
    let rec = record(b"", b"");
    let mut calls = 0;
    let mut sink = |_: &[u8]| -> io::Result<()> {
        calls += 1;
        if calls == 2 {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "follower gone"))
        } else {
            Ok(())
        }
    };
    let mut w = SnapshotStreamWriter::new(&mut sink, 1, &rec).unwrap();
    let value = vec![0u8; 64 << 10];
    let mut refused = None;
    for i in 0..100u32 {
        if let Err(e) = w.entry(Cf::Write, &encode_key_with_ts(&i.to_be_bytes(), 1), &value) {
            refused = Some((i, e));
            break;
        }
    }
    let (at, err) = refused.expect("the sink's error reaches the writer");
    assert!(at < 20, "stopped at entry {at}");
    assert!(
        matches!(&err, SnapshotStreamError::Sink { detail, .. } if detail.contains("follower gone")),
        "{err}"
    );
    assert!(matches!(
        w.entry(Cf::Write, &encode_key(b"x"), b""),
        Err(SnapshotStreamError::Sink { .. })
    ));
    assert!(matches!(w.finish(), Err(SnapshotStreamError::Sink { .. })));
    assert_eq!(calls, 2, "nothing is handed on after a refusal");
}

fn entries() -> impl Strategy<Value = Entries> {
    let cf = prop_oneof![Just(Cf::Lock), Just(Cf::Write), Just(Cf::Default)];
    proptest::collection::vec(
        (
            cf,
            proptest::collection::vec(any::<u8>(), 0..12),
            0u64..4,
            proptest::collection::vec(any::<u8>(), 0..40),
        )
            .prop_map(|(cf, k, ts, v)| {
                let key = if ts == 0 {
                    encode_key(&k)
                } else {
                    encode_key_with_ts(&k, ts)
                };
                (cf, key, v)
            }),
        0..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any strict prefix of a valid stream is an error; any single bit flip is an error or
    /// (were a CRC to collide) decodes to exactly the original; nothing panics.
    #[test]
    fn prefixes_and_bit_flips_never_decode_wrong(
        entries in entries(),
        cut in any::<proptest::sample::Index>(),
        flip in any::<proptest::sample::Index>(),
        bit in 0u8..8,
    ) {
        let rec = record(b"", b"");
        let good = encode(&rec, &entries);
        let want = (SnapshotStreamHeader { applied_index: 42, record: rec }, entries);
        prop_assert_eq!(decode(&good), Ok(want.clone()));
        let cut = cut.index(good.len());
        prop_assert!(decode(&good[..cut]).is_err(), "a prefix of {} bytes decoded", cut);
        let mut flipped = good.clone();
        flipped[flip.index(good.len())] ^= 1 << bit;
        if let Ok(got) = decode(&flipped) {
            prop_assert_eq!(got, want);
        }
    }
}
