//! The disk engine's newest-write index ([`super::newest_writes::NewestWrites`]) through
//! [`FjallRegion`]: noted by applies, snapshot applies and merges, its floor written with
//! every checkpoint and read back by a reopen.

use super::fjall_region_test::{apply, open, put, record};
use super::*;
use crate::MemEngine;
use crate::engine::key_codec::encode_key_with_ts;

/// The bound a reader of `view` gets for user key `key`.
fn bound(view: &FjallRegion, key: &[u8]) -> u64 {
    view.snapshot().newest_write_bound(&encode_key(key))
}

fn write(view: &FjallRegion, key: &[u8], ts: u64, index: u64) {
    apply(
        view,
        vec![put(Cf::Write, encode_key_with_ts(key, ts), b"w")],
        index,
    );
}

#[test]
fn a_checkpoint_keeps_the_newest_timestamp_for_the_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        assert_eq!(bound(&view, b"k"), 0, "a new directory holds no record");
        write(&view, b"k", 20, 1);
        assert_eq!(bound(&view, b"k"), 20);
        assert_eq!(bound(&view, b"other"), 0);
        view.set_region(&record(b"", b"", b""), 2).unwrap();
        // After the checkpoint: in the engine, not in its stored floor; the log replays it.
        write(&view, b"m", 30, 3);
    }
    let engine = open(dir.path());
    let view = engine.region(1, b"", b"").unwrap();
    for key in [&b"k"[..], b"m", b"other"] {
        assert_eq!(
            bound(&view, key),
            20,
            "{key:?}: the floor of the last checkpoint"
        );
    }
    // The replay of index 3 notes its record again.
    write(&view, b"m", 30, 3);
    assert_eq!(bound(&view, b"m"), 30);
}

#[test]
fn a_directory_without_the_timestamp_bounds_nothing_and_a_damaged_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        write(&view, b"k", 20, 1);
        view.set_region(&record(b"", b"", b""), 2).unwrap();
        // As an engine written before the index existed.
        engine.regions.remove(b"newest-write").unwrap();
    }
    {
        let engine = open(dir.path());
        let view = engine.region(1, b"", b"").unwrap();
        assert_eq!(bound(&view, b"k"), u64::MAX, "every check must seek");
        engine.regions.insert(b"newest-write", b"abc").unwrap();
    }
    let err = FjallEngine::open(
        dir.path(),
        &crate::engine::fjall_engine::EngineIdentity::new("c1", 1),
        crate::engine::fjall_options::FjallOptions::default(),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("newest write timestamp"), "{text}");
    assert!(text.contains(&dir.path().display().to_string()), "{text}");
}

#[test]
fn a_snapshot_apply_and_a_merge_note_the_records_they_bring() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let left = engine.region(1, b"", b"m").unwrap();
    let right = engine.region(2, b"m", b"").unwrap();
    let leader = MemEngine::new();
    apply(
        &leader,
        vec![
            put(Cf::Write, encode_key_with_ts(b"a", 40), b"w"),
            put(Cf::Write, encode_key_with_ts(b"b", 50), b"w"),
        ],
        9,
    );
    left.import_region(&leader.export(), 9, &record(b"", b"m", b""))
        .unwrap();
    assert_eq!(bound(&left, b"a"), 40);
    assert_eq!(bound(&left, b"b"), 50);
    let source = MemEngine::new();
    apply(
        &source,
        vec![put(Cf::Write, encode_key_with_ts(b"x", 60), b"w")],
        3,
    );
    right
        .ingest(&source.export(), &encode_key(b"m"), None)
        .unwrap();
    assert_eq!(bound(&right, b"x"), 60);
    // One index per node: a view of the other range reads the same bounds.
    assert_eq!(bound(&left, b"x"), 60);
}
