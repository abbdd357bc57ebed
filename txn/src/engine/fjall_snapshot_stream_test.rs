//! Tests of a [`FjallRegion`]'s streamed snapshots: the view is the range as of when it was
//! taken, in bounded pieces, stopped by a refusing sink; the apply replaces exactly the
//! range, and one cut short leaves the region marked incomplete until applied again.

use std::io;
use std::sync::Arc;

use super::fjall_region_test::{open, put, record};
use super::*;
use crate::engine::key_codec::encode_key_with_ts;
use crate::engine::snapshot_stream::{SnapshotStreamError, SnapshotStreamWriter};

/// A region beside region 1's `[b, y)` in the test engines, with one key of its own.
struct Neighbour {
    id: u64,
    start: &'static [u8],
    end: &'static [u8],
    key: &'static [u8],
}

/// Regions 2 and 3, around region 1.
const NEIGHBOURS: [Neighbour; 2] = [
    Neighbour {
        id: 2,
        start: b"y",
        end: b"",
        key: b"z",
    },
    Neighbour {
        id: 3,
        start: b"",
        end: b"b",
        key: b"a",
    },
];

/// Every entry of `cf` with a user key in `[start, end)`.
fn in_range(view: &FjallRegion, cf: Cf, start: &[u8], end: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    view.snapshot().scan(
        cf,
        &encode_key(start),
        Some(&encode_key(end)),
        &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            true
        },
    );
    out
}

/// Writes `n` keys `k00000..` into `view` at `index`, in all three column families, the
/// default column's values `value_len` bytes long.
fn fill(view: &FjallRegion, n: u32, value_len: usize, index: u64) {
    let value = vec![b'v'; value_len];
    let keys: Vec<u32> = (0..n).collect();
    for chunk in keys.chunks(1000) {
        let mut modifies = Vec::new();
        for i in chunk {
            let user = format!("k{i:05}").into_bytes();
            if i % 3 == 0 {
                modifies.push(put(Cf::Lock, encode_key(&user), b"lock"));
            }
            modifies.push(put(Cf::Write, encode_key_with_ts(&user, 9), b"write"));
            modifies.push(put(Cf::Default, encode_key_with_ts(&user, 7), &value));
        }
        view.write(&WriteBatch {
            modifies,
            applied_index: index,
        })
        .unwrap();
    }
}

/// Runs `view`'s streamed snapshot under `rec` into `sink`.
fn stream_into(
    view: EntriesView,
    rec: &RegionRecord,
    applied: u64,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> Result<(), EngineError> {
    let mut out = SnapshotStreamWriter::new(sink, applied, rec)?;
    view(&mut |cf, k, v| Ok(out.entry(cf, k, v)?))?;
    Ok(out.finish()?)
}

fn stream(view: &FjallRegion, rec: &RegionRecord) -> Vec<u8> {
    let mut bytes = Vec::new();
    stream_into(
        view.entries_view(),
        rec,
        view.applied_index(),
        &mut |piece| {
            bytes.extend_from_slice(piece);
            Ok(())
        },
    )
    .unwrap();
    bytes
}

fn import(view: &FjallRegion, mut bytes: &[u8], index: u64) -> Result<(), EngineError> {
    let mut reader = SnapshotStreamReader::open(&mut bytes)?;
    view.import_stream(&mut reader, index)
}

/// A source engine whose region 1 covers `[b, y)` with `n` keys, and two neighbours with
/// a key each, all at index 20.
fn source(dir: &std::path::Path, n: u32) -> (Arc<FjallEngine>, Arc<FjallRegion>) {
    let engine = open(dir);
    let view = engine.region(1, b"b", b"y").unwrap();
    view.set_region(&record(b"b", b"y", b"state"), 10).unwrap();
    fill(&view, n, 100, 20);
    for Neighbour {
        id,
        start,
        end,
        key,
    } in NEIGHBOURS
    {
        engine
            .region(id, start, end)
            .unwrap()
            .write(&WriteBatch {
                modifies: vec![put(Cf::Lock, encode_key(key), b"source")],
                applied_index: 20,
            })
            .unwrap();
    }
    (engine, view)
}

#[test]
fn a_streamed_snapshot_replaces_exactly_the_range() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_src_engine, src) = source(a.path(), 3000);
    let rec = record(b"b", b"y", b"state");
    let bytes = stream(&src, &rec);
    {
        let engine = open(b.path());
        let dst = engine.region(1, b"b", b"y").unwrap();
        dst.write(&WriteBatch {
            modifies: vec![
                put(Cf::Lock, encode_key(b"c"), b"stale"),
                put(Cf::Write, encode_key_with_ts(b"k00001", 9), b"stale"),
            ],
            applied_index: 3,
        })
        .unwrap();
        for Neighbour {
            id,
            start,
            end,
            key,
        } in NEIGHBOURS
        {
            let view = engine.region(id, start, end).unwrap();
            view.write(&WriteBatch {
                modifies: vec![put(Cf::Lock, encode_key(key), b"receiver")],
                applied_index: 3,
            })
            .unwrap();
            // A checkpoint: the lock keyspace holds the neighbour's lock from here on.
            view.set_region(&record(start, end, b""), 3).unwrap();
        }
        import(&dst, &bytes, 50).unwrap();
        assert_eq!(dst.durable_region(), Some((50, rec.clone())));
        assert_eq!(dst.size_bytes(), src.size_bytes());
        assert_eq!(dst.snapshot().get(Cf::Lock, &encode_key(b"c")), None);
    }
    let engine = open(b.path());
    let dst = engine.region(1, b"", b"").unwrap();
    assert_eq!(dst.durable_region(), Some((50, rec)), "after a reopen");
    for cf in Cf::ALL {
        let want = in_range(&src, cf, b"b", b"y");
        assert!(!want.is_empty());
        assert_eq!(in_range(&dst, cf, b"b", b"y"), want, "{cf}");
    }
    for Neighbour {
        id,
        start,
        end,
        key,
    } in NEIGHBOURS
    {
        let neighbour = engine.region(id, start, end).unwrap();
        assert_eq!(
            neighbour.snapshot().get(Cf::Lock, &encode_key(key)),
            Some(b"receiver".to_vec()),
            "the neighbours' data stays"
        );
    }
}

#[test]
fn a_cut_or_damaged_stream_leaves_the_region_incomplete_until_applied_again() {
    let a = tempfile::tempdir().unwrap();
    // Enough entries for several batches of inserts before the damage.
    let (_src_engine, src) = source(a.path(), 6000);
    let rec = record(b"b", b"y", b"state");
    let good = stream(&src, &rec);
    let cut = &good[..good.len() * 4 / 5];
    let mut flipped = good.clone();
    let at = good.len() * 3 / 4;
    flipped[at] ^= 0x40;
    for (name, bad) in [("cut", cut), ("flipped", flipped.as_slice())] {
        let dir = tempfile::tempdir().unwrap();
        {
            let engine = open(dir.path());
            let dst = engine.region(1, b"b", b"y").unwrap();
            fill(&dst, 10, 10, 5);
            dst.set_region(&record(b"b", b"y", b""), 5).unwrap();
            assert!(dst.durable_region().is_some());
            let err = import(&dst, bad, 50).unwrap_err();
            assert!(
                matches!(
                    err,
                    EngineError::SnapshotStream(
                        SnapshotStreamError::Truncated { .. }
                            | SnapshotStreamError::Checksum { .. }
                    )
                ),
                "{name}: {err}"
            );
            assert!(err.to_string().contains("byte"), "{name}: {err}");
            assert_eq!(dst.durable_region(), None, "{name}: marked incomplete");
            assert!(
                matches!(
                    dst.write(&WriteBatch::default()),
                    Err(EngineError::Stopped { .. })
                ),
                "{name}: no write lands on a partial range"
            );
        }
        // The restart finds the marker and applies the same snapshot again.
        let engine = open(dir.path());
        let dst = engine.region(1, b"b", b"y").unwrap();
        assert_eq!(dst.durable_region(), None, "{name}: after a reopen");
        import(&dst, &good, 50).unwrap();
        assert_eq!(dst.durable_region(), Some((50, rec.clone())), "{name}");
        for cf in Cf::ALL {
            assert_eq!(
                in_range(&dst, cf, b"b", b"y"),
                in_range(&src, cf, b"b", b"y"),
                "{name}: {cf}"
            );
        }
    }
}

/// A checkpoint closure taken before a snapshot apply and run after it (the snapshot
/// thread may run one late) must not write the region's old record and locks over the
/// apply: after a failed apply it is refused, so the marker stays for the restart (and one
/// taken while the marker is set is refused too); after a complete one it finds the
/// applied index newer than its own and writes nothing.
#[test]
fn a_checkpoint_taken_before_a_snapshot_apply_never_writes_over_it() {
    let a = tempfile::tempdir().unwrap();
    let (_src_engine, src) = source(a.path(), 6000);
    let rec = record(b"b", b"y", b"state");
    let good = stream(&src, &rec);
    let cut = &good[..good.len() * 4 / 5];
    // A region at index 6 with a lock of its own in memory, and a checkpoint taken then.
    let region_at_6 = |engine: &Arc<FjallEngine>| {
        let dst = engine.region(1, b"b", b"y").unwrap();
        dst.set_region(&record(b"b", b"y", b""), 5).unwrap();
        dst.write(&WriteBatch {
            modifies: vec![put(Cf::Lock, encode_key(b"c"), b"old")],
            applied_index: 6,
        })
        .unwrap();
        let late = dst.checkpoint();
        (dst, late)
    };
    let same_as_source = |dst: &FjallRegion| {
        for cf in Cf::ALL {
            assert_eq!(
                in_range(dst, cf, b"b", b"y"),
                in_range(&src, cf, b"b", b"y"),
                "{cf}"
            );
        }
    };

    let failed = tempfile::tempdir().unwrap();
    {
        let engine = open(failed.path());
        let (dst, late) = region_at_6(&engine);
        import(&dst, cut, 50).unwrap_err();
        assert!(late().is_err(), "a checkpoint over a partial apply");
        assert_eq!(dst.durable_region(), None, "the marker stays");
    }
    {
        let engine = open(failed.path());
        let dst = engine.region(1, b"b", b"y").unwrap();
        assert_eq!(
            dst.durable_region(),
            None,
            "the marker stays after a reopen"
        );
        let under_marker = dst.checkpoint();
        import(&dst, &good, 50).unwrap();
        assert!(under_marker().is_err(), "taken while the marker was set");
        assert_eq!(dst.durable_region(), Some((50, rec.clone())));
    }

    let complete = tempfile::tempdir().unwrap();
    {
        let engine = open(complete.path());
        let (dst, late) = region_at_6(&engine);
        import(&dst, &good, 50).unwrap();
        late().unwrap();
        assert_eq!(dst.durable_region(), Some((50, rec.clone())));
    }
    let engine = open(complete.path());
    let dst = engine.region(1, b"b", b"y").unwrap();
    assert_eq!(
        dst.durable_region(),
        Some((50, rec)),
        "not the record of index 6"
    );
    same_as_source(&dst);
}

#[test]
fn the_view_is_the_range_when_taken_and_a_refusing_sink_stops_it() {
    let a = tempfile::tempdir().unwrap();
    let (_engine, src) = source(a.path(), 3000);
    let rec = record(b"b", b"y", b"state");
    let before = stream(&src, &rec);
    let view = src.entries_view();
    fill(&src, 3100, 200, 21);
    let mut taken = Vec::new();
    stream_into(view, &rec, 20, &mut |piece| {
        taken.extend_from_slice(piece);
        Ok(())
    })
    .unwrap();
    assert_eq!(taken, before, "later writes are not in the view");

    let mut calls = 0;
    let err = stream_into(src.entries_view(), &rec, 21, &mut |_| {
        calls += 1;
        if calls == 2 {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"))
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::SnapshotStream(SnapshotStreamError::Sink { .. })
        ),
        "{err}"
    );
    assert_eq!(calls, 2, "the view stops at the refusal");
}

#[test]
fn pieces_stay_bounded_for_a_20_mib_region() {
    let a = tempfile::tempdir().unwrap();
    let engine = open(a.path());
    let view = engine.region(1, b"", b"").unwrap();
    fill(&view, 5200, 4000, 2);
    assert!(view.size_bytes() > 20 << 20, "{}", view.size_bytes());
    let (mut total, mut max, mut pieces) = (0usize, 0usize, 0usize);
    stream_into(
        view.entries_view(),
        &record(b"", b"", b""),
        2,
        &mut |piece| {
            total += piece.len();
            max = max.max(piece.len());
            pieces += 1;
            Ok(())
        },
    )
    .unwrap();
    assert!(total as u64 > view.size_bytes(), "{total}");
    assert!(max <= 2 << 20, "a piece of {max} bytes");
    assert!(pieces >= 20, "{pieces} pieces");
}
