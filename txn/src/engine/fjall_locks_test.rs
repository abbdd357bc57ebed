//! Unit tests of a [`FjallRegion`]'s in-memory lock column family: checkpoints, what a
//! reopen resumes from, the log replay over data ahead of the record, snapshots, splits.

use proptest::prelude::*;

use super::fjall_locks::CHECKPOINT_EVERY;
use super::fjall_region_test::{all, apply, open, put, record};
use super::*;
use crate::MemEngine;
use crate::engine::key_codec::encode_key_with_ts;

fn delete(cf: Cf, key: Vec<u8>) -> Modify {
    Modify::Delete { cf, key }
}

fn lock(view: &FjallRegion, key: &[u8], value: &[u8], index: u64) {
    apply(view, vec![put(Cf::Lock, encode_key(key), value)], index);
}

#[test]
fn locks_reach_the_disk_only_at_a_checkpoint_and_a_reopen_resumes_from_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        view.set_region(&record(b"", b"", b"s"), 1).unwrap();
        lock(&view, b"a", b"at 2", 2);
        assert_eq!(view.applied_index(), 2);
        assert_eq!(
            view.snapshot().get(Cf::Lock, &encode_key(b"a")),
            Some(b"at 2".to_vec())
        );
        assert_eq!(view.durable_region(), Some((1, record(b"", b"", b"s"))));
    }
    {
        // No checkpoint after index 1: the lock is the log's to replay.
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        assert_eq!(view.durable_region(), Some((1, record(b"", b"", b"s"))));
        assert_eq!(view.snapshot().get(Cf::Lock, &encode_key(b"a")), None);
        lock(&view, b"a", b"at 2", 2);
        lock(&view, b"b", b"at 3", 3);
        view.checkpoint()().unwrap();
        assert_eq!(view.durable_region(), Some((3, record(b"", b"", b"s"))));
        // A later write changes memory only.
        view.write(&WriteBatch {
            modifies: vec![delete(Cf::Lock, encode_key(b"a"))],
            applied_index: 4,
        })
        .unwrap();
    }
    let engine = open(dir.path());
    let view = engine.region(1, b"", b"").unwrap();
    assert_eq!(view.durable_region(), Some((3, record(b"", b"", b"s"))));
    let snap = view.snapshot();
    assert_eq!(
        all(&*snap, Cf::Lock),
        vec![
            (encode_key(b"a"), b"at 2".to_vec()),
            (encode_key(b"b"), b"at 3".to_vec())
        ],
        "the locks as of the checkpoint"
    );
}

#[test]
fn every_checkpoint_every_entries_a_write_is_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let last = 1 + CHECKPOINT_EVERY + 3;
    {
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        view.set_region(&record(b"", b"", b""), 1).unwrap();
        for index in 2..=last {
            lock(&view, format!("k{index:04}").as_bytes(), b"l", index);
        }
    }
    let engine = open(dir.path());
    let view = engine.region(1, b"", b"").unwrap();
    let (index, _) = view.durable_region().unwrap();
    assert_eq!(index, 1 + CHECKPOINT_EVERY);
    assert_eq!(
        all(&*view.snapshot(), Cf::Lock).len() as u64,
        CHECKPOINT_EVERY
    );
}

/// Two checkpoint closures of the same view, run in the opposite order to the one they
/// were taken in (the snapshot thread may run one late): the older one finds a newer
/// checkpoint on disk and writes nothing, so neither the record nor the locks go back.
#[test]
fn a_checkpoint_taken_earlier_and_run_later_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        view.set_region(&record(b"", b"", b"s"), 1).unwrap();
        lock(&view, b"a", b"at 2", 2);
        let older = view.checkpoint();
        apply(
            &*view,
            vec![
                delete(Cf::Lock, encode_key(b"a")),
                put(Cf::Lock, encode_key(b"b"), b"at 3"),
            ],
            3,
        );
        let newer = view.checkpoint();
        newer().unwrap();
        older().unwrap();
        assert_eq!(view.durable_region(), Some((3, record(b"", b"", b"s"))));
    }
    let engine = open(dir.path());
    let view = engine.region(1, b"", b"").unwrap();
    assert_eq!(view.durable_region(), Some((3, record(b"", b"", b"s"))));
    assert_eq!(
        all(&*view.snapshot(), Cf::Lock),
        vec![(encode_key(b"b"), b"at 3".to_vec())],
        "the locks of the newer checkpoint"
    );
}

#[test]
fn a_snapshot_keeps_the_locks_of_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let view = engine.region(1, b"", b"").unwrap();
    lock(&view, b"a", b"1", 1);
    let before = view.snapshot();
    view.write(&WriteBatch {
        modifies: vec![
            delete(Cf::Lock, encode_key(b"a")),
            put(Cf::Lock, encode_key(b"b"), b"2"),
            put(Cf::Write, encode_key_with_ts(b"a", 5), b"w"),
        ],
        applied_index: 2,
    })
    .unwrap();
    assert_eq!(before.applied_index(), 1);
    assert_eq!(
        all(&*before, Cf::Lock),
        vec![(encode_key(b"a"), b"1".to_vec())]
    );
    assert!(all(&*before, Cf::Write).is_empty());
    let after = view.snapshot();
    assert_eq!(after.applied_index(), 2);
    assert_eq!(
        all(&*after, Cf::Lock),
        vec![(encode_key(b"b"), b"2".to_vec())]
    );
    assert_eq!(all(&*after, Cf::Write).len(), 1);
}

#[test]
fn a_split_checkpoints_both_halves_locks() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let parent = engine.region(1, b"", b"").unwrap();
        parent.set_region(&record(b"", b"", b""), 1).unwrap();
        for (i, key) in [b"b", b"d", b"g", b"k"].iter().enumerate() {
            lock(&parent, *key, key.as_slice(), 2 + i as u64);
        }
        let child = parent
            .split_region(
                &encode_key(b"f"),
                &record(b"", b"f", b"p"),
                7,
                2,
                &record(b"f", b"", b"c"),
                7,
            )
            .unwrap();
        let keys = |v: &dyn Engine| -> Vec<Vec<u8>> {
            all(&*v.snapshot(), Cf::Lock)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(keys(&*parent), vec![encode_key(b"b"), encode_key(b"d")]);
        assert_eq!(keys(&*child), vec![encode_key(b"g"), encode_key(b"k")]);
    }
    let engine = open(dir.path());
    for (id, start, end, want) in [
        (1, &b""[..], &b"f"[..], [b"b", b"d"]),
        (2, b"f", b"", [b"g", b"k"]),
    ] {
        let view = engine.region(id, start, end).unwrap();
        assert_eq!(
            view.durable_region().map(|(i, _)| i),
            Some(7),
            "region {id}"
        );
        let got: Vec<Vec<u8>> = all(&*view.snapshot(), Cf::Lock)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(got, want.map(|k| encode_key(k)).to_vec(), "region {id}");
    }
}

/// One applied entry of the property below: blind puts and deletes over a few keys.
fn entry() -> impl Strategy<Value = Vec<(u8, u8, Option<u8>)>> {
    prop::collection::vec((0u8..3, 0u8..6, prop::option::of(any::<u8>())), 1..5)
}

fn modifies(ops: &[(u8, u8, Option<u8>)]) -> Vec<Modify> {
    ops.iter()
        .map(|&(cf, key, value)| {
            let cf = Cf::ALL[cf as usize];
            let key = match cf {
                Cf::Lock => encode_key(&[b'k', key]),
                _ => encode_key_with_ts(&[b'k', key], 7),
            };
            match value {
                Some(v) => put(cf, key, &[v]),
                None => delete(cf, key),
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A restart resumes from the record's index and replays the log after it, while the
    /// write and default keyspaces already hold every batch written (here: all of them,
    /// as a process that wrote them and stopped leaves them): the result equals a
    /// `MemEngine` that applied each entry once.
    #[test]
    fn replaying_after_the_checkpoint_over_data_ahead_of_it_is_exact(
        entries in prop::collection::vec(entry(), 1..40),
        checkpoint_at in prop::collection::vec(any::<bool>(), 40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let want = MemEngine::new();
        {
            let engine = open(dir.path());
            let view = engine.region(1, b"", b"").unwrap();
            for (i, ops) in entries.iter().enumerate() {
                let batch = WriteBatch { modifies: modifies(ops), applied_index: 1 + i as u64 };
                view.write(&batch).unwrap();
                want.write(&batch).unwrap();
                if checkpoint_at[i] {
                    view.checkpoint()().unwrap();
                }
            }
        }
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        let from = view.durable_region().map_or(0, |(i, _)| i);
        for (i, ops) in entries.iter().enumerate().skip(from as usize) {
            view.write(&WriteBatch { modifies: modifies(ops), applied_index: 1 + i as u64 }).unwrap();
        }
        for cf in Cf::ALL {
            prop_assert_eq!(all(&*view.snapshot(), cf), all(&*want.snapshot(), cf), "{}", cf);
        }
    }
}

/// A restart that replays a split whose child recovered on its own (`split_off`): the
/// parent gives up the upper locks without writing into the child's range, which the
/// child's view owns (here: a lock it checkpointed that the parent never knew of stays).
#[test]
fn split_off_leaves_the_childs_range_to_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let child = engine.region(2, b"f", b"").unwrap();
    child.set_region(&record(b"f", b"", b""), 1).unwrap();
    lock(&child, b"h", b"child's", 2);
    child.checkpoint()().unwrap();
    // The parent, replaying from before the split, still covers the whole range.
    let parent = engine.region(1, b"", b"").unwrap();
    parent.set_region(&record(b"", b"", b""), 1).unwrap();
    lock(&parent, b"b", b"lb", 2);
    lock(&parent, b"g", b"lg", 3);
    drop(parent.split_off(&encode_key(b"f")));
    assert_eq!(
        all(&*parent.snapshot(), Cf::Lock),
        vec![(encode_key(b"b"), b"lb".to_vec())]
    );
    assert_eq!(
        parent.durable_region().map(|(i, r)| (i, r.end)),
        Some((3, b"f".to_vec()))
    );
    assert!(engine.lock_on_disk(&encode_key(b"b")));
    assert!(
        !engine.lock_on_disk(&encode_key(b"g")),
        "written into the child's range"
    );
    assert!(
        engine.lock_on_disk(&encode_key(b"h")),
        "the child's lock deleted"
    );
    assert_eq!(
        all(&*child.snapshot(), Cf::Lock),
        vec![(encode_key(b"h"), b"child's".to_vec())]
    );
}
