//! The durable log: round trips, torn tails, corruption, locking, compaction, and a
//! storage conformance suite run against both `MemLogStore` and `Wal`.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::fs;
use std::path::Path;

use bytes::Bytes;
use proptest::prelude::*;
use surge_raft_lite::*;

fn e(index: u64, term: u64, data: &str) -> Entry {
    Entry {
        index,
        term,
        kind: EntryKind::Normal,
        data: Bytes::copy_from_slice(data.as_bytes()),
    }
}

fn w(group: u64, entries: Vec<Entry>, hs: Option<(u64, u64, u64)>) -> GroupWrite {
    GroupWrite {
        group,
        snapshot: None,
        entries,
        hard_state: hs.map(|(term, vote, commit)| HardState { term, vote, commit }),
    }
}

fn segments(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".log"))
        .collect();
    v.sort();
    v
}

/// The contract every `LogStore` keeps.
fn conformance(store: &mut dyn LogStore) {
    store
        .write(&[
            w(
                1,
                vec![e(1, 1, "a"), e(2, 1, "b"), e(3, 1, "c")],
                Some((1, 1, 1)),
            ),
            w(2, vec![e(1, 5, "x")], Some((5, 2, 0))),
        ])
        .unwrap();
    // Entries replace any at the same or higher index.
    store
        .write(&[w(1, vec![e(2, 2, "B")], Some((2, 0, 2)))])
        .unwrap();
    let g1 = store.load(1).unwrap().unwrap();
    assert_eq!(g1.entries, vec![e(1, 1, "a"), e(2, 2, "B")]);
    assert_eq!(
        g1.hard_state,
        HardState {
            term: 2,
            vote: 0,
            commit: 2
        }
    );
    // A hole is refused.
    assert!(store.write(&[w(1, vec![e(9, 2, "hole")], None)]).is_err());
    // A snapshot drops the entries it covers and keeps the rest if the log agrees.
    store.write(&[w(1, vec![e(3, 2, "c")], None)]).unwrap();
    let snap = Snapshot {
        meta: SnapshotMeta {
            index: 2,
            term: 2,
            conf: ConfState::with_voters([1, 2, 3]),
        },
        data: Bytes::from_static(b"state"),
    };
    store
        .write(&[GroupWrite {
            group: 1,
            snapshot: Some(snap.clone()),
            ..Default::default()
        }])
        .unwrap();
    let g1 = store.load(1).unwrap().unwrap();
    assert_eq!(g1.snapshot, Some(snap));
    assert_eq!(g1.entries, vec![e(3, 2, "c")]);
    // A snapshot that disagrees with the log replaces it entirely.
    let snap2 = Snapshot {
        meta: SnapshotMeta {
            index: 3,
            term: 7,
            conf: ConfState::with_voters([1]),
        },
        data: Bytes::from_static(b"s2"),
    };
    store
        .write(&[GroupWrite {
            group: 1,
            snapshot: Some(snap2),
            ..Default::default()
        }])
        .unwrap();
    let g1 = store.load(1).unwrap().unwrap();
    assert!(g1.entries.is_empty());
    assert_eq!(g1.last_index(), 3);
    assert_eq!(store.load(3).unwrap(), None);
    let mut gs = store.groups();
    gs.sort();
    assert_eq!(gs, vec![1, 2]);
}

#[test]
fn mem_store_conformance() {
    conformance(&mut MemLogStore::new());
}

#[test]
fn wal_conformance_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let mut wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
        conformance(&mut wal);
        (wal.load(1).unwrap(), wal.load(2).unwrap())
    };
    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    assert_eq!((wal.load(1).unwrap(), wal.load(2).unwrap()), before);
}

#[test]
fn wal_second_process_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let _a = Wal::open(dir.path(), WalOptions::default()).unwrap();
    assert!(matches!(
        Wal::open(dir.path(), WalOptions::default()),
        Err(Error::Locked { .. })
    ));
}

#[test]
fn wal_torn_tail_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
        wal.write(&[w(1, vec![e(1, 1, "a")], Some((1, 0, 0)))])
            .unwrap();
        wal.write(&[w(1, vec![e(2, 1, "b")], Some((1, 0, 1)))])
            .unwrap();
    }
    let seg = segments(dir.path()).pop().unwrap();
    let len = fs::metadata(&seg).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    let st = wal.load(1).unwrap().unwrap();
    assert_eq!(st.entries, vec![e(1, 1, "a")]);
    assert!(wal.stats().truncated_tail_bytes > 0);
    drop(wal);
    // The cut is durable: the next open sees a clean (older) segment.
    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    assert_eq!(wal.stats().truncated_tail_bytes, 0);
}

#[test]
fn wal_bit_flip_in_last_record_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
        wal.write(&[w(1, vec![e(1, 1, "a")], None)]).unwrap();
        wal.write(&[w(1, vec![e(2, 1, "bbbbbbbb")], None)]).unwrap();
    }
    let seg = segments(dir.path()).pop().unwrap();
    let mut b = fs::read(&seg).unwrap();
    let n = b.len();
    b[n - 2] ^= 0x40;
    fs::write(&seg, b).unwrap();
    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    assert_eq!(wal.load(1).unwrap().unwrap().entries, vec![e(1, 1, "a")]);
}

#[test]
fn wal_corruption_in_older_segment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
        wal.write(&[w(1, vec![e(1, 1, "aaaa")], None)]).unwrap();
        wal.write(&[w(1, vec![e(2, 1, "bbbb")], None)]).unwrap();
    }
    // Reopening starts a new segment, so the written one is no longer the last.
    {
        let mut wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
        wal.write(&[w(1, vec![e(3, 1, "c")], None)]).unwrap();
    }
    let first = segments(dir.path()).remove(0);
    let mut b = fs::read(&first).unwrap();
    b[30] ^= 1;
    fs::write(&first, b).unwrap();
    match Wal::open(dir.path(), WalOptions::default()) {
        Err(Error::Corrupt { path, offset, .. }) => {
            assert_eq!(path, first);
            assert!(offset >= 16, "offset {offset} names the damaged record");
        }
        other => panic!("expected corruption error, got {other:?}"),
    }
}

#[test]
fn wal_compaction_deletes_old_segments() {
    let dir = tempfile::tempdir().unwrap();
    let opts = WalOptions::default().with_max_segment_bytes(8192);
    {
        let mut wal = Wal::open(dir.path(), opts.clone()).unwrap();
        let big = "x".repeat(200);
        for i in 1..=100u64 {
            wal.write(&[w(7, vec![e(i, 1, &big)], Some((1, 0, i)))])
                .unwrap();
            if i % 10 == 0 {
                let snap = Snapshot {
                    meta: SnapshotMeta {
                        index: i,
                        term: 1,
                        conf: ConfState::with_voters([1]),
                    },
                    data: Bytes::from(format!("upto{i}")),
                };
                wal.write(&[GroupWrite {
                    group: 7,
                    snapshot: Some(snap),
                    ..Default::default()
                }])
                .unwrap();
            }
        }
        assert!(
            wal.stats().segments <= 3,
            "segments: {}",
            wal.stats().segments
        );
    }
    assert!(segments(dir.path()).len() <= 4);
    let wal = Wal::open(dir.path(), opts).unwrap();
    let st = wal.load(7).unwrap().unwrap();
    assert_eq!(st.snapshot.as_ref().unwrap().meta.index, 100);
    assert_eq!(st.snapshot.unwrap().data, Bytes::from_static(b"upto100"));
    assert_eq!(st.hard_state.commit, 100);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Recovery after a cut anywhere in the last segment yields exactly the batches that
    /// were completely on disk: nothing acknowledged before the cut is lost, nothing
    /// unwritten appears.
    #[test]
    fn wal_recovers_every_complete_batch(n in 1usize..12, cut_frac in 0.0f64..1.0) {
        let dir = tempfile::tempdir().unwrap();
        let mut ends = Vec::new();
        let mut states = Vec::new();
        {
            let mut wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
            for i in 1..=n as u64 {
                wal.write(&[
                    w(1, vec![e(i, 1, &format!("g1-{i}"))], Some((1, 0, i - 1))),
                    w(2, vec![e(i, 3, &format!("g2-{i}"))], None),
                ]).unwrap();
                let seg = segments(dir.path()).pop().unwrap();
                ends.push(fs::metadata(&seg).unwrap().len());
                states.push((wal.load(1).unwrap(), wal.load(2).unwrap()));
            }
        }
        let seg = segments(dir.path()).pop().unwrap();
        let len = fs::metadata(&seg).unwrap().len();
        let cut = 16 + ((len - 16) as f64 * cut_frac) as u64;
        fs::OpenOptions::new().write(true).open(&seg).unwrap().set_len(cut).unwrap();
        let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
        let complete = ends.iter().filter(|&&end| end <= cut).count();
        let g1 = wal.load(1).unwrap();
        let g2 = wal.load(2).unwrap();
        if complete == 0 {
            // Group 1's record of the first batch may have survived alone.
            prop_assert!(g1.as_ref().is_none_or(|s| s.entries.len() <= 1));
        } else {
            let (w1, w2) = &states[complete - 1];
            // Group 2's record of the next batch may also have landed; never less.
            prop_assert!(g1.as_ref().unwrap().entries.len() >= w1.as_ref().unwrap().entries.len());
            prop_assert!(g1.unwrap().entries.len() <= complete + 1);
            prop_assert!(g2.unwrap().entries.len() >= w2.as_ref().unwrap().entries.len());
        }
    }
}

/// Found by the simulation: commit-only batches are not synced by themselves; if a
/// rotation left them unsynced in an older segment, a power loss tore a segment that was
/// no longer the last one and the log refused to open.
#[test]
fn regression_unsynced_bytes_never_left_behind_by_rotation() {
    let fs = MemFs::new();
    let opts = WalOptions::default().with_max_segment_bytes(300);
    let open = || Wal::open_with(std::sync::Arc::new(fs.clone()), "/d", opts.clone());
    {
        let mut wal = open().unwrap();
        wal.write(&[w(1, vec![e(1, 1, &"a".repeat(400))], Some((1, 1, 0)))])
            .unwrap();
        for c in 1..30 {
            wal.write(&[w(1, vec![], Some((1, 1, c)))]).unwrap(); // commit only: no sync
        }
        wal.write(&[w(1, vec![e(2, 1, "b")], Some((1, 1, 30)))])
            .unwrap();
        wal.write(&[w(1, vec![], Some((1, 1, 31)))]).unwrap();
    }
    fs.crash(Path::new("/d"), |unsynced| unsynced / 2);
    let wal = open().unwrap();
    let st = wal.load(1).unwrap().unwrap();
    assert_eq!(st.entries, vec![e(1, 1, &"a".repeat(400)), e(2, 1, "b")]);
    assert!(
        st.hard_state.commit >= 30,
        "synced commit kept: {:?}",
        st.hard_state
    );
}

#[test]
fn failed_fsync_poisons_the_log() {
    let fs = MemFs::new();
    let mut wal =
        Wal::open_with(std::sync::Arc::new(fs.clone()), "/p", WalOptions::default()).unwrap();
    fs.fail_next_sync();
    assert!(matches!(
        wal.write(&[w(1, vec![e(1, 1, "a")], None)]),
        Err(Error::Io { .. })
    ));
    // No retry after a failed fsync (the page cache state is unknown).
    assert!(wal.write(&[w(1, vec![e(1, 1, "a")], None)]).is_err());
    drop(wal);
    fs.crash(Path::new("/p"), |_| 0);
    let wal = Wal::open_with(std::sync::Arc::new(fs), "/p", WalOptions::default()).unwrap();
    assert_eq!(wal.load(1).unwrap(), None, "the unsynced write is gone");
}

/// Found by the SIGKILL cluster test: retiring old segments oldest-first and dying midway
/// left a later segment without its predecessors, and the log refused to open.
#[test]
fn regression_partial_segment_retirement_still_opens() {
    for allowed in 0..4 {
        let fs = MemFs::new();
        let opts = WalOptions::default().with_max_segment_bytes(2048);
        let open = || Wal::open_with(std::sync::Arc::new(fs.clone()), "/r", opts.clone());
        let big = "y".repeat(300);
        let mut wal = open().unwrap();
        // Large live data: segments pile up without checkpoints.
        for i in 1..=20u64 {
            wal.write(&[w(1, vec![e(i, 1, &big)], Some((1, 0, i)))])
                .unwrap();
        }
        // A snapshot makes the live data small: the next rotation checkpoints and retires
        // every older segment; the process dies after `allowed` removals.
        let snap = Snapshot {
            meta: SnapshotMeta {
                index: 20,
                term: 1,
                conf: ConfState::with_voters([1]),
            },
            data: Bytes::from_static(b"s20"),
        };
        wal.write(&[GroupWrite {
            group: 1,
            snapshot: Some(snap),
            ..Default::default()
        }])
        .unwrap();
        fs.fail_removes_after(allowed);
        let mut i = 21u64;
        // Hard-state writes fill the segment without adding live data.
        while wal.write(&[w(1, vec![], Some((2, 0, i)))]).is_ok() {
            i += 1;
            assert!(i < 500, "no rotation happened");
        }
        drop(wal);
        fs.crash(Path::new("/r"), |u| u);
        let wal = open().unwrap_or_else(|e| panic!("after {allowed} removals: {e}"));
        let st = wal.load(1).unwrap().unwrap();
        assert_eq!(st.snapshot.as_ref().unwrap().meta.index, 20);
        assert_eq!(st.last_index(), 20);
        assert_eq!(st.hard_state.term, 2, "acknowledged hard state kept");
    }
}
