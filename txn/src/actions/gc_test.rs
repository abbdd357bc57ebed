use proptest::prelude::*;

use super::*;
use crate::engine::{
    Cf, Engine, MemEngine, Modify, WriteBatch, decode_key, encode_key_with_ts, split_ts,
};

/// One committed history step of a key: `(kind, start_ts, commit_ts, long value?)`.
type Step = (WriteType, u64, u64, bool);

/// The engine changes that commit `step` on `key` (a long put's value in the default CF).
fn committed(key: &[u8], (kind, start_ts, commit_ts, long): Step) -> Vec<Modify> {
    let value = if long {
        vec![b'v'; crate::SHORT_VALUE_MAX_LEN + 1 + (start_ts % 7) as usize]
    } else {
        format!("v{start_ts}").into_bytes()
    };
    let mut out = Vec::new();
    let write = match kind {
        WriteType::Rollback => Write::rollback(start_ts, false),
        WriteType::Put if long => {
            out.push(Modify::Put {
                cf: Cf::Default,
                key: encode_key_with_ts(key, start_ts),
                value,
            });
            Write::new(kind, start_ts, None)
        }
        WriteType::Put => Write::new(kind, start_ts, Some(value)),
        _ => Write::new(kind, start_ts, None),
    };
    let at = if kind == WriteType::Rollback {
        start_ts
    } else {
        commit_ts
    };
    out.push(Modify::Put {
        cf: Cf::Write,
        key: encode_key_with_ts(key, at),
        value: write.to_bytes(),
    });
    out
}

fn engine_with(history: &[(Vec<u8>, Vec<Step>)]) -> MemEngine {
    let engine = MemEngine::new();
    let modifies = history
        .iter()
        .flat_map(|(key, steps)| steps.iter().flat_map(|s| committed(key, *s)))
        .collect();
    engine
        .write(&WriteBatch {
            modifies,
            applied_index: 1,
        })
        .expect("write");
    engine
}

/// Runs [`gc`] on every key of `keys` at `safe_point` and applies the result.
fn collect(engine: &MemEngine, keys: &[Vec<u8>], safe_point: u64) -> GcStats {
    collect_at_most(engine, keys, safe_point, 0)
}

/// As [`collect`], at most `limit` records per key.
fn collect_at_most(engine: &MemEngine, keys: &[Vec<u8>], safe_point: u64, limit: u64) -> GcStats {
    let mut txn = MvccTxn::new(safe_point);
    let mut total = GcStats::default();
    {
        // The snapshot goes before the write (a MemEngine snapshot holds its read lock).
        let snap = engine.snapshot();
        let reader = MvccReader::new(&*snap, None);
        for key in keys {
            total.add(gc(&mut txn, &reader, key, safe_point, limit).expect("gc"));
        }
    }
    let mut batch = txn.into_writes().into_batch();
    batch.applied_index = 2;
    engine.write(&batch).expect("apply gc");
    total
}

/// Every `(key, commit_ts)` of the write CF, and the number of default-CF values.
fn contents(engine: &MemEngine) -> (Vec<(Vec<u8>, u64)>, usize) {
    let snap = engine.snapshot();
    let mut writes = Vec::new();
    snap.scan(Cf::Write, &[], None, &mut |k, _| {
        let (encoded, ts) = split_ts(k).expect("key");
        writes.push((decode_key(encoded).expect("key").0, ts));
        true
    });
    let mut values = 0;
    snap.scan(Cf::Default, &[], None, &mut |_, _| {
        values += 1;
        true
    });
    (writes, values)
}

#[test]
fn keeps_the_newest_put_at_or_below_the_safe_point_and_everything_above() {
    use WriteType::*;
    let key = b"k".to_vec();
    let engine = engine_with(&[(
        key.clone(),
        vec![
            (Put, 1, 2, true),
            (Put, 3, 4, false),
            (Rollback, 5, 5, false),
            (Put, 6, 7, true),
            (Lock, 8, 9, false),
            (Put, 10, 11, false),
        ],
    )]);
    let stats = collect(&engine, std::slice::from_ref(&key), 9);
    // Gone: the Lock at 9, the Rollback at 5, the puts at 4 and 2 (and 2's long value).
    assert_eq!(
        stats,
        GcStats {
            records: 4,
            values: 1
        }
    );
    let (writes, values) = contents(&engine);
    assert_eq!(writes, vec![(key.clone(), 11), (key.clone(), 7)]);
    assert_eq!(values, 1, "the kept put's long value stays");
    {
        let snap = engine.snapshot();
        let reader = MvccReader::new(&*snap, None);
        assert_eq!(
            reader.get(&key, 9).unwrap().map(|v| v.len()),
            Some(crate::SHORT_VALUE_MAX_LEN + 1 + 6)
        );
        assert_eq!(reader.get(&key, 11).unwrap(), Some(b"v10".to_vec()));
    }
    // Again: nothing left to remove.
    assert_eq!(collect(&engine, &[key], 9), GcStats::default());
}

#[test]
fn a_limit_cuts_a_keys_garbage_into_parts_that_each_keep_reads_intact() {
    use WriteType::*;
    let key = b"h".to_vec();
    let steps: Vec<Step> = (0..7u64)
        .map(|i| (Put, 10 * i + 1, 10 * i + 2, i % 2 == 1))
        .collect();
    let engine = engine_with(&[(key.clone(), steps)]);
    let mut parts = Vec::new();
    loop {
        let removed = collect_at_most(&engine, std::slice::from_ref(&key), 100, 2);
        if removed.records == 0 {
            break;
        }
        parts.push(removed.records);
        let snap = engine.snapshot();
        let reader = MvccReader::new(&*snap, None);
        assert_eq!(reader.get(&key, 100).unwrap(), Some(b"v61".to_vec()));
    }
    assert_eq!(parts, vec![2, 2, 2], "six older versions, two at a time");
    assert_eq!(contents(&engine), (vec![(key, 62)], 0));
}

#[test]
fn a_delete_at_the_safe_point_goes_with_everything_older() {
    use WriteType::*;
    let key = b"d".to_vec();
    let engine = engine_with(&[(
        key.clone(),
        vec![(Put, 1, 2, true), (Delete, 3, 4, false), (Put, 5, 6, false)],
    )]);
    let stats = collect(&engine, std::slice::from_ref(&key), 5);
    assert_eq!(stats.records, 2);
    assert_eq!(contents(&engine), (vec![(key.clone(), 6)], 0));
    let snap = engine.snapshot();
    let reader = MvccReader::new(&*snap, None);
    assert_eq!(reader.get(&key, 5).unwrap(), None);
}

#[test]
fn the_scan_names_the_keys_with_garbage_and_resumes_between_keys() {
    use WriteType::*;
    let engine = engine_with(&[
        (b"a".to_vec(), vec![(Put, 1, 2, false)]),
        (b"b".to_vec(), vec![(Put, 1, 2, false), (Put, 3, 4, false)]),
        (b"c".to_vec(), vec![(Rollback, 1, 1, false)]),
        (
            b"d".to_vec(),
            vec![(Put, 1, 2, false), (Put, 30, 31, false)],
        ),
        (b"e".to_vec(), vec![(Delete, 1, 2, false)]),
    ]);
    let snap = engine.snapshot();
    let reader = MvccReader::new(&*snap, None);
    let all = gc_scan(&reader, b"", None, 10, 0, 0).unwrap();
    assert_eq!(all.keys, vec![b"b".to_vec(), b"c".to_vec(), b"e".to_vec()]);
    assert_eq!(all.resume_key, None);
    assert_eq!(all.records_seen, 7);
    let first = gc_scan(&reader, b"", None, 10, 2, 0).unwrap();
    assert_eq!(first.keys, vec![b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(first.resume_key, Some(b"d".to_vec()));
    let rest = gc_scan(&reader, b"d", Some(b"e"), 10, 2, 0).unwrap();
    assert!(rest.keys.is_empty());
    assert_eq!(rest.resume_key, None);
    let bounded = gc_scan(&reader, b"", None, 10, 0, 3).unwrap();
    assert_eq!(bounded.keys, vec![b"b".to_vec()]);
    assert_eq!(bounded.resume_key, Some(b"c".to_vec()));
}

#[test]
fn a_damaged_record_is_an_error_naming_it() {
    let engine = MemEngine::new();
    engine
        .write(&WriteBatch {
            modifies: vec![Modify::Put {
                cf: Cf::Write,
                key: encode_key_with_ts(b"x", 5),
                value: vec![0xff, 0xfe],
            }],
            applied_index: 1,
        })
        .unwrap();
    let snap = engine.snapshot();
    let reader = MvccReader::new(&*snap, None);
    let mut txn = MvccTxn::new(9);
    assert!(matches!(
        gc(&mut txn, &reader, b"x", 9, 0),
        Err(MvccError::Corrupt { .. })
    ));
    assert!(matches!(
        gc_scan(&reader, b"", None, 9, 0, 0),
        Err(MvccError::Corrupt { .. })
    ));
}

fn history() -> impl Strategy<Value = Vec<Step>> {
    // Steps at rising timestamps: a gap, a commit delay, a kind, a long value or not.
    prop::collection::vec((1u64..4, 0u64..3, 0u8..6, any::<bool>()), 0..10).prop_map(|steps| {
        let mut ts = 0;
        steps
            .into_iter()
            .map(|(gap, delay, kind, long)| {
                let start = ts + gap;
                let kind = match kind {
                    0 | 1 => WriteType::Put,
                    2 => WriteType::Delete,
                    3 => WriteType::Lock,
                    _ => WriteType::Rollback,
                };
                let commit = if kind == WriteType::Rollback {
                    start
                } else {
                    start + 1 + delay
                };
                ts = commit;
                (kind, start, commit, long && kind == WriteType::Put)
            })
            .collect()
    })
}

proptest! {
    /// Reads at and above the safe point see the same values after GC; at most one record
    /// (a put) stays at or below it; no default-CF value is left without its record; the
    /// scan names exactly the keys GC changes; a second GC removes nothing.
    #[test]
    fn gc_keeps_every_read_at_or_above_the_safe_point(
        histories in prop::collection::vec(history(), 1..5),
        safe_point in 0u64..40,
    ) {
        let keys: Vec<Vec<u8>> = (0..histories.len()).map(|i| vec![b'k', i as u8]).collect();
        let history: Vec<(Vec<u8>, Vec<Step>)> =
            keys.iter().cloned().zip(histories.iter().cloned()).collect();
        let engine = engine_with(&history);
        let max_ts = 60;
        let reads = |engine: &MemEngine| {
            let snap = engine.snapshot();
            let reader = MvccReader::new(&*snap, None);
            keys.iter()
                .flat_map(|k| (safe_point..=max_ts).map(move |ts| (k.clone(), ts)))
                .map(|(k, ts)| reader.get(&k, ts).expect("read"))
                .collect::<Vec<_>>()
        };
        let before = reads(&engine);
        let scanned = {
            let snap = engine.snapshot();
            let reader = MvccReader::new(&*snap, None);
            gc_scan(&reader, b"", None, safe_point, 0, 0).expect("scan").keys
        };
        let (writes_before, _) = contents(&engine);
        let mut changed = Vec::new();
        for key in &keys {
            if collect(&engine, std::slice::from_ref(key), safe_point).records > 0 {
                changed.push(key.clone());
            }
        }
        prop_assert_eq!(scanned, changed);
        prop_assert_eq!(reads(&engine), before);
        let (writes, values) = contents(&engine);
        let snap = engine.snapshot();
        let reader = MvccReader::new(&*snap, None);
        let mut long_puts = 0;
        for key in &keys {
            let below: Vec<u64> = writes
                .iter()
                .filter(|(k, ts)| k == key && *ts <= safe_point)
                .map(|(_, ts)| *ts)
                .collect();
            prop_assert!(below.len() <= 1, "{:?} keeps {:?} at or below {}", key, below, safe_point);
            if let Some(&ts) = below.first() {
                let (_, w) = reader.seek_write(key, ts).expect("seek").expect("record");
                prop_assert_eq!(w.write_type, WriteType::Put);
            }
            reader.for_each_version(key, u64::MAX, |_, w| {
                if w.write_type == WriteType::Put && w.short_value.is_none() {
                    long_puts += 1;
                }
                Ok(true)
            }).expect("versions");
        }
        drop(snap);
        prop_assert_eq!(values, long_puts);
        // Records above the safe point are all still there.
        let above = |w: &[(Vec<u8>, u64)]| w.iter().filter(|(_, ts)| *ts > safe_point).count();
        prop_assert_eq!(above(&writes), above(&writes_before));
        let again: u64 = keys.iter().map(|k| collect(&engine, std::slice::from_ref(k), safe_point).records).sum();
        prop_assert_eq!(again, 0);
    }
}
