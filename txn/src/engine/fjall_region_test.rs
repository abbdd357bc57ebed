//! Unit tests of [`FjallRegion`]: the same answers as [`crate::MemEngine`], records that
//! survive a reopen, splits that move no data, identities refused.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::MemEngine;
use crate::engine::fjall_engine::EngineIdentity;
use crate::engine::fjall_options::FjallOptions;
use crate::engine::key_codec::encode_key_with_ts;

fn small() -> FjallOptions {
    FjallOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(1 << 20)
        .with_worker_threads(1)
}

pub(super) fn open(dir: &std::path::Path) -> Arc<FjallEngine> {
    FjallEngine::open(dir, &EngineIdentity::new("c1", 1), small()).unwrap()
}

pub(super) fn all(snap: &dyn Snapshot, cf: Cf) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    snap.scan(cf, b"", None, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        true
    });
    out
}

pub(super) fn put(cf: Cf, key: Vec<u8>, value: &[u8]) -> Modify {
    Modify::Put {
        cf,
        key,
        value: value.to_vec(),
    }
}

/// Applies `modifies` to `engine` as one batch at `index`.
pub(super) fn apply(engine: &dyn Engine, modifies: Vec<Modify>, index: u64) {
    engine
        .write(&WriteBatch {
            modifies,
            applied_index: index,
        })
        .unwrap();
}

pub(super) fn record(start: &[u8], end: &[u8], state: &[u8]) -> RegionRecord {
    RegionRecord {
        start: start.to_vec(),
        end: end.to_vec(),
        state: state.to_vec(),
    }
}

#[test]
fn batches_and_records_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let view = engine.region(7, b"", b"").unwrap();
        assert_eq!(view.durable_region(), None, "nothing written yet");
        view.set_region(&record(b"", b"", b"state"), 3).unwrap();
        // `a` locked and released in one batch, `b` locked and kept: a checkpoint
        // writes `b`'s lock only.
        apply(
            &*view,
            vec![
                put(Cf::Lock, encode_key(b"a"), b"lock"),
                put(Cf::Write, encode_key_with_ts(b"a", 5), b"w"),
                Modify::Delete {
                    cf: Cf::Lock,
                    key: encode_key(b"a"),
                },
                put(Cf::Lock, encode_key(b"b"), b"kept"),
            ],
            4,
        );
        view.checkpoint()().unwrap();
        // After the checkpoint: `c`'s lock and record stay in memory and the data
        // keyspace only, for the log to replay.
        apply(
            &*view,
            vec![
                put(Cf::Lock, encode_key(b"c"), b"later"),
                put(Cf::Write, encode_key_with_ts(b"c", 6), b"w"),
            ],
            5,
        );
        assert_eq!(view.applied_index(), 5);
        assert_eq!(view.snapshot().applied_index(), 5);
        assert_eq!(
            view.snapshot().get(Cf::Lock, &encode_key(b"c")),
            Some(b"later".to_vec())
        );
    }
    let engine = open(dir.path());
    let view = engine.region(7, b"x", b"y").unwrap();
    // The record is as of its last checkpoint (index 4); the log replays 5 over data that
    // may hold part of it already, which blind writes allow.
    assert_eq!(
        view.durable_region(),
        Some((4, record(b"", b"", b"state"))),
        "the stored record wins over the range given"
    );
    let snap = view.snapshot();
    assert_eq!(snap.get(Cf::Lock, &encode_key(b"a")), None, "released");
    assert_eq!(
        snap.get(Cf::Lock, &encode_key(b"b")),
        Some(b"kept".to_vec()),
        "held at the checkpoint"
    );
    assert_eq!(
        snap.get(Cf::Lock, &encode_key(b"c")),
        None,
        "taken after the checkpoint: the log's to replay"
    );
    assert_eq!(
        snap.get(Cf::Write, &encode_key_with_ts(b"a", 5)),
        Some(b"w".to_vec())
    );
}

#[test]
fn another_cluster_or_node_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    for id in [EngineIdentity::new("c2", 1), EngineIdentity::new("c1", 2)] {
        let err = FjallEngine::open(dir.path(), &id, small()).unwrap_err();
        assert!(matches!(err, EngineError::Identity { .. }), "{id:?}: {err}");
        assert!(err.to_string().contains("c1/1"), "{err}");
    }
    open(dir.path());
}

#[test]
fn a_damaged_record_is_an_error_naming_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    engine
        .regions
        .insert(FjallRegion::record_key(9), b"\xff\xff\xff".as_slice())
        .unwrap();
    let err = engine.region(9, b"", b"").unwrap_err();
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    assert!(err.to_string().contains("region 9"), "{err}");
}

/// Region 1 over everything, with write records of the keys `a` to `j` at index 6.
fn ten_keys(engine: &Arc<FjallEngine>) -> Arc<FjallRegion> {
    let parent = engine.region(1, b"", b"").unwrap();
    let modifies = (0u8..10)
        .map(|i| put(Cf::Write, encode_key_with_ts(&[b'a' + i], 1), b"v"))
        .collect();
    parent
        .write(&WriteBatch {
            modifies,
            applied_index: 6,
        })
        .unwrap();
    parent
}

#[test]
fn split_moves_no_data_and_both_records_persist() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let parent = ten_keys(&engine);
        let at = encode_key(b"f");
        let child = parent
            .split_region(
                &at,
                &record(b"", b"f", b"p"),
                7,
                2,
                &record(b"f", b"", b"c"),
                5,
            )
            .unwrap();
        assert_eq!(child.applied_index(), 5);
        assert_eq!(parent.applied_index(), 7);
        // Each export holds its own half.
        let p = MemEngine::new();
        p.import(&parent.export(), 7).unwrap();
        assert_eq!(all(&*p.snapshot(), Cf::Write).len(), 5);
        let c = MemEngine::new();
        c.import(&child.export(), 5).unwrap();
        let keys = all(&*c.snapshot(), Cf::Write);
        assert_eq!(keys.len(), 5);
        assert!(keys.iter().all(|(k, _)| k.as_slice() >= at.as_slice()));
        assert_eq!(
            parent.size_bytes() + child.size_bytes(),
            10 * (encode_key_with_ts(b"a", 1).len() as u64 + 1)
        );
    }
    let engine = open(dir.path());
    let child = engine.region(2, b"", b"").unwrap();
    assert_eq!(child.durable_region(), Some((5, record(b"f", b"", b"c"))));
    let parent = engine.region(1, b"", b"").unwrap();
    assert_eq!(parent.durable_region(), Some((7, record(b"", b"f", b"p"))));
    assert_eq!(
        parent.middle_key(),
        Some(b"c".to_vec()),
        "the middle of its own half"
    );
}

#[test]
fn split_off_narrows_the_range_and_leaves_the_entries_under_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let parent = ten_keys(&engine);
    let before = parent.size_bytes();
    let export = parent.split_off(&encode_key(b"f"));
    // Nothing was collected: an empty export at the parent's index.
    let e = MemEngine::new();
    e.import(&export, 6).unwrap();
    assert!(all(&*e.snapshot(), Cf::Write).is_empty());
    assert_eq!(parent.size_bytes(), before - before / 2);
    assert_eq!(
        parent.durable_region().map(|(_, r)| r.end),
        Some(b"f".to_vec())
    );
    // The upper half is still in the node's keyspaces, for the region that covers it;
    // the parent's view ends at the split.
    let halves = |region: &dyn Engine| {
        let m = MemEngine::new();
        m.import(&region.export(), 6).unwrap();
        all(&*m.snapshot(), Cf::Write).len()
    };
    let child = engine.region(2, b"f", b"").unwrap();
    assert_eq!(halves(&*child), 5);
    assert_eq!(halves(&*parent), 5);
}

#[test]
fn import_replaces_the_range_only() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let left = engine.region(1, b"", b"m").unwrap();
    let right = engine.region(2, b"m", b"").unwrap();
    for (view, key) in [(&left, b"a"), (&right, b"x")] {
        view.write(&WriteBatch {
            modifies: vec![put(Cf::Lock, encode_key(key), b"old")],
            applied_index: 6,
        })
        .unwrap();
        // In the lock keyspace, where the import's range delete could reach it.
        view.checkpoint()().unwrap();
    }
    let src = MemEngine::new();
    src.write(&WriteBatch {
        modifies: vec![put(Cf::Lock, encode_key(b"b"), b"new")],
        applied_index: 9,
    })
    .unwrap();
    left.import_region(&src.export(), 9, &record(b"", b"m", b"s"))
        .unwrap();
    assert_eq!(left.durable_region(), Some((9, record(b"", b"m", b"s"))));
    let snap = left.snapshot();
    assert_eq!(snap.get(Cf::Lock, &encode_key(b"a")), None);
    assert_eq!(snap.get(Cf::Lock, &encode_key(b"b")), Some(b"new".to_vec()));
    assert!(
        engine.lock_on_disk(&encode_key(b"x")),
        "the other region's data stays"
    );
    assert!(
        !engine.lock_on_disk(&encode_key(b"a")),
        "the range replaced"
    );
    assert!(matches!(
        left.import_region(b"junk", 10, &record(b"", b"m", b"")),
        Err(EngineError::BadExport { .. })
    ));
    assert_eq!(left.applied_index(), 9, "a refused import changes nothing");
}

/// One step of the model test.
#[derive(Debug, Clone)]
enum Op {
    Put(Cf, Vec<u8>, Vec<u8>),
    Delete(Cf, Vec<u8>),
}

fn cf() -> impl Strategy<Value = Cf> {
    prop_oneof![Just(Cf::Lock), Just(Cf::Write), Just(Cf::Default)]
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    (proptest::collection::vec(0u8..4, 0..3), 0u64..3).prop_map(|(k, ts)| {
        if ts == 0 {
            encode_key(&k)
        } else {
            encode_key_with_ts(&k, ts)
        }
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (cf(), key(), proptest::collection::vec(any::<u8>(), 0..4))
            .prop_map(|(c, k, v)| Op::Put(c, k, v)),
        (cf(), key()).prop_map(|(c, k)| Op::Delete(c, k)),
    ]
}

/// The disk engine's size after `batch`, by its counting rule, from `before` and the
/// engine state in `mem` before the batch: the lock column family is not counted, a put adds
/// its key and value (an overwrite of an older batch's entry counts twice), a delete
/// subtracts what it removes, and a key changed twice in one batch counts once.
fn counted_size(mem: &MemEngine, batch: &WriteBatch, before: u64) -> u64 {
    let snap = mem.snapshot();
    let mut size = i128::from(before);
    let mut seen: std::collections::HashMap<(Cf, Vec<u8>), i128> = Default::default();
    for m in batch.modifies.iter().filter(|m| m.cf() != Cf::Lock) {
        let slot = (m.cf(), m.key().to_vec());
        let old = seen.get(&slot).copied();
        let new = match m {
            Modify::Put { key, value, .. } => {
                size += (key.len() + value.len()) as i128 - old.unwrap_or(0);
                (key.len() + value.len()) as i128
            }
            Modify::Delete { key, .. } => {
                let stored = || {
                    snap.get(m.cf(), key)
                        .map_or(0, |v| (key.len() + v.len()) as i128)
                };
                size -= old.unwrap_or_else(stored);
                0
            }
        };
        seen.insert(slot, new);
    }
    u64::try_from(size.max(0)).unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random batches give the same gets, scans, snapshots (as of the batch they were
    /// taken at), and exports as `MemEngine`, and the size its counting rule gives.
    #[test]
    fn answers_like_mem_engine(
        batches in proptest::collection::vec(proptest::collection::vec(op(), 0..6), 1..8),
        probes in proptest::collection::vec((cf(), key(), key()), 4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let disk = engine.region(1, b"", b"").unwrap();
        let mem = MemEngine::new();
        let mut old = None;
        let mut expected_size = 0u64;
        for (i, ops) in batches.iter().enumerate() {
            let batch = WriteBatch {
                modifies: ops
                    .iter()
                    .map(|o| match o {
                        Op::Put(c, k, v) => put(*c, k.clone(), v),
                        Op::Delete(c, k) => Modify::Delete { cf: *c, key: k.clone() },
                    })
                    .collect(),
                applied_index: i as u64 + 1,
            };
            expected_size = counted_size(&mem, &batch, expected_size);
            disk.write(&batch).unwrap();
            mem.write(&batch).unwrap();
            if i == batches.len() / 2 {
                old = Some((disk.export(), mem.export()));
            }
        }
        let (ds, ms) = (disk.snapshot(), mem.snapshot());
        for c in Cf::ALL {
            prop_assert_eq!(all(&*ds, c), all(&*ms, c));
        }
        for (c, a, b) in &probes {
            prop_assert_eq!(ds.get(*c, a), ms.get(*c, a));
            let (mut x, mut y) = (Vec::new(), Vec::new());
            ds.scan(*c, a, Some(b), &mut |k, _| { x.push(k.to_vec()); x.len() < 3 });
            ms.scan(*c, a, Some(b), &mut |k, _| { y.push(k.to_vec()); y.len() < 3 });
            prop_assert_eq!(x, y);
        }
        prop_assert_eq!(ds.applied_index(), ms.applied_index());
        drop((ds, ms));
        prop_assert_eq!(disk.export(), mem.export());
        prop_assert_eq!(disk.size_bytes(), expected_size);
        prop_assert_eq!(disk.middle_key(), mem.middle_key());
        if let Some((d, m)) = old {
            prop_assert_eq!(d, m);
        }
    }
}

/// `ingest` makes the given range exactly the export, in every column family, and leaves
/// the rest of the shared keyspaces alone: the node's lagging replica of a merge's source
/// left a lock under the source's keys that the source's leader had removed since, and
/// another region's keys lie beyond the range.
#[test]
fn ingest_replaces_the_range_with_the_export_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let lagging = engine.region(2, b"", b"m").unwrap();
    let target = engine.region(3, b"m", b"").unwrap();
    lagging
        .write(&WriteBatch {
            modifies: vec![
                put(Cf::Lock, encode_key(b"a"), b"stale lock"),
                put(Cf::Write, encode_key_with_ts(b"a", 4), b"old record"),
                put(Cf::Default, encode_key_with_ts(b"b", 3), b"stale value"),
            ],
            applied_index: 5,
        })
        .unwrap();
    target
        .write(&WriteBatch {
            modifies: vec![put(Cf::Lock, encode_key(b"x"), b"target lock")],
            applied_index: 7,
        })
        .unwrap();
    let leader = MemEngine::new();
    apply(
        &leader,
        vec![
            put(Cf::Write, encode_key_with_ts(b"a", 4), b"old record"),
            put(Cf::Write, encode_key_with_ts(b"a", 6), b"commit"),
        ],
        9,
    );
    target
        .ingest(&leader.export(), &encode_key(b""), Some(&encode_key(b"m")))
        .unwrap();
    let snap = target.snapshot();
    assert_eq!(
        all(&*snap, Cf::Lock),
        vec![(encode_key(b"x"), b"target lock".to_vec())],
        "the stale lock stayed, or the target's own went"
    );
    assert_eq!(
        all(&*snap, Cf::Write),
        vec![
            (encode_key_with_ts(b"a", 6), b"commit".to_vec()),
            (encode_key_with_ts(b"a", 4), b"old record".to_vec()),
        ]
    );
    assert!(all(&*snap, Cf::Default).is_empty());
    assert_eq!(target.applied_index(), 7, "the applied index moved");
    assert!(target.ingest(b"not an export", b"", None).is_err());
}
