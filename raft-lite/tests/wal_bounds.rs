//! The WAL's bounds: disk use and replay stay bounded by the live log whatever the number
//! of groups, and whatever a write was acknowledged with reopens (record and snapshot
//! limits shared by writer and reader; large writes split, too large ones refused).
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use surge_raft_lite::*;

fn entry(index: u64, len: usize) -> Entry {
    Entry {
        index,
        term: 1,
        kind: EntryKind::Normal,
        data: Bytes::from(vec![(index % 251) as u8; len]),
    }
}

fn hs(commit: u64) -> Option<HardState> {
    Some(HardState {
        term: 1,
        vote: 1,
        commit,
    })
}

/// A write of `entries` with hard state committed to `commit`.
fn put(group: u64, entries: Vec<Entry>, commit: u64) -> GroupWrite {
    GroupWrite {
        group,
        entries,
        hard_state: hs(commit),
        ..GroupWrite::default()
    }
}

/// Bytes and count of the segment files under `dir`.
fn segments_on_disk(fs: &MemFs, dir: &Path) -> (u64, usize) {
    let names: Vec<String> = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    let bytes = names
        .iter()
        .map(|n| fs.read(&dir.join(n)).unwrap().len() as u64)
        .sum();
    (bytes, names.len())
}

/// Regression: with many groups that each snapshot regularly, the live log of all groups
/// together never fell under half a segment, so no segment was ever retired (8 groups,
/// 2 000 rounds: 525 segments of 8 KiB for ~10 KiB of live log) and every restart replayed
/// the whole history. Now disk use stays within a small multiple of the live log.
#[test]
fn many_busy_groups_keep_segments_bounded_by_the_live_log() {
    const GROUPS: u64 = 64;
    const ROUNDS: u64 = 400;
    const SNAPSHOT_EVERY: u64 = 10;
    const SEGMENT: u64 = 8 << 10;
    let fs = MemFs::new();
    let dir = Path::new("/wal");
    let opts = WalOptions::default().with_max_segment_bytes(SEGMENT);
    let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, opts.clone()).unwrap();
    let mut worst = (0u64, 0usize, 0u64);
    for round in 1..=ROUNDS {
        for g in 1..=GROUPS {
            wal.write(&[put(g, vec![entry(round, 200)], round)])
                .unwrap();
            if round % SNAPSHOT_EVERY == 0 {
                wal.write(&[GroupWrite {
                    group: g,
                    snapshot: Some(Snapshot {
                        meta: SnapshotMeta {
                            index: round,
                            term: 1,
                            conf: ConfState::with_voters([1]),
                        },
                        data: Bytes::from_static(b"state"),
                    }),
                    ..GroupWrite::default()
                }])
                .unwrap();
            }
        }
        let (bytes, count) = segments_on_disk(&fs, dir);
        assert_eq!(wal.stats().segment_bytes, bytes);
        assert_eq!(wal.stats().segments, count as u64);
        if bytes > worst.0 {
            worst = (bytes, count, round);
        }
    }
    // Live log: at most SNAPSHOT_EVERY entries of 200 bytes (plus framing) per group.
    let live = GROUPS * (SNAPSHOT_EVERY * (200 + 40) + 64);
    let bound = 3 * live + 2 * SEGMENT;
    assert!(
        worst.0 <= bound,
        "{} bytes in {} segments at round {} for a live log of at most {live} bytes (bound {bound})",
        worst.0,
        worst.1,
        worst.2
    );
    assert!(wal.stats().checkpoints > 0);
    // Written in all: ~64 * 400 * 230 bytes, far above the bound.
    assert!(wal.stats().bytes > 10 * bound);
    // Everything reopens from what is left.
    drop(wal);
    let wal = Wal::open_with(Arc::new(fs.clone()), dir, opts).unwrap();
    for g in 1..=GROUPS {
        let st = wal.load(g).unwrap().unwrap();
        assert_eq!(st.snapshot.as_ref().unwrap().meta.index, ROUNDS);
        assert!(st.entries.is_empty());
        assert_eq!(st.hard_state.commit, ROUNDS);
    }
}

/// A live log much larger than a segment is carried over without piling up segments.
#[test]
fn live_log_larger_than_a_segment_stays_bounded() {
    let fs = MemFs::new();
    let dir = Path::new("/wal");
    let opts = WalOptions::default().with_max_segment_bytes(4 << 10);
    let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, opts.clone()).unwrap();
    // 16 groups that never snapshot their first 20 entries, then write on with snapshots.
    for i in 1..=600u64 {
        for g in 1..=16 {
            wal.write(&[put(g, vec![entry(i, 100)], i)]).unwrap();
        }
    }
    let live = 16 * (600 * (100 + 40) + 64);
    let (bytes, _) = segments_on_disk(&fs, dir);
    assert!(
        bytes <= 3 * live + 2 * (4 << 10),
        "{bytes} bytes for {live}"
    );
    drop(wal);
    let wal = Wal::open_with(Arc::new(fs), dir, opts).unwrap();
    for g in 1..=16 {
        let st = wal.load(g).unwrap().unwrap();
        assert_eq!(st.entries.len(), 600);
        assert_eq!(st.entries[599], entry(600, 100));
    }
}

fn small_records() -> WalOptions {
    WalOptions::default().with_max_record_bytes(4096)
}

/// Regression: a group write above the reader's record limit (17 proposals of 64 MiB in
/// one Ready, scaled down here to a 4 KiB limit) was synced and acknowledged, then cut at
/// open as a torn tail. Now it is split over records within the limit and reopens whole.
#[test]
fn write_above_the_record_limit_is_split_and_reopens() {
    let fs = MemFs::new();
    let dir = Path::new("/wal");
    let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, small_records()).unwrap();
    assert_eq!(wal.max_entry_bytes(), 4096 - 34);
    let big: Vec<Entry> = (1..=17).map(|i| entry(i, 1000)).collect();
    wal.write(&[
        put(1, big.clone(), 17),
        put(2, vec![entry(1, wal.max_entry_bytes())], 1),
    ])
    .unwrap();
    assert!(wal.stats().records > 2, "{:?}", wal.stats());
    drop(wal);
    let wal = Wal::open_with(Arc::new(fs), dir, small_records()).unwrap();
    assert_eq!(wal.stats().truncated_tail_bytes, 0);
    let st = wal.load(1).unwrap().unwrap();
    assert_eq!(st.entries, big);
    assert_eq!(st.hard_state, hs(17).unwrap());
    assert_eq!(wal.load(2).unwrap().unwrap().entries.len(), 1);
}

/// A split write torn at any byte comes back whole or not at all (its parts are applied
/// only with its final record), never as entries without their hard state.
#[test]
fn torn_split_write_is_all_or_nothing() {
    let before: Vec<Entry> = (1..=2).map(|i| entry(i, 100)).collect();
    let big: Vec<Entry> = (3..=12).map(|i| entry(i, 1500)).collect();
    let mut len = None;
    let mut cut = 0;
    loop {
        let fs = MemFs::new();
        let dir = Path::new("/wal");
        let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, small_records()).unwrap();
        wal.write(&[put(1, before.clone(), 2)]).unwrap();
        fs.fail_next_sync();
        let w = GroupWrite {
            group: 1,
            entries: big.clone(),
            hard_state: Some(HardState {
                term: 2,
                vote: 2,
                commit: 12,
            }),
            ..GroupWrite::default()
        };
        assert!(wal.write(&[w]).is_err());
        drop(wal);
        let mut unsynced = 0;
        fs.crash(dir, |n| {
            unsynced = n;
            cut.min(n)
        });
        let total = *len.get_or_insert(unsynced);
        let wal = Wal::open_with(Arc::new(fs), dir, small_records()).unwrap();
        let st = wal.load(1).unwrap().unwrap();
        if cut >= total {
            assert_eq!(st.entries.len(), 12);
            assert_eq!(st.hard_state.term, 2);
            break;
        }
        assert_eq!(st.entries, before, "cut at {cut} of {total}");
        assert_eq!(st.hard_state, hs(2).unwrap(), "cut at {cut} of {total}");
        cut += 97;
    }
}

/// An entry that cannot fit one record is refused before anything is written, and the log
/// stays usable.
#[test]
fn entry_above_the_record_limit_is_refused_cleanly() {
    let fs = MemFs::new();
    let dir = Path::new("/wal");
    let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, small_records()).unwrap();
    let too_big = wal.max_entry_bytes() + 1;
    let err = wal
        .write(&[
            put(2, vec![entry(1, 10)], 1),
            put(1, vec![entry(1, too_big)], 1),
        ])
        .unwrap_err();
    assert!(
        matches!(err, Error::WriteTooLarge { what: "log entry", size, .. } if size == too_big),
        "{err}"
    );
    assert!(err.to_string().contains("exceeds the log's limit"), "{err}");
    assert!(wal.load(1).unwrap().is_none() && wal.load(2).unwrap().is_none());
    wal.write(&[put(1, vec![entry(1, 10)], 1)]).unwrap();
    drop(wal);
    let wal = Wal::open_with(Arc::new(fs), dir, small_records()).unwrap();
    assert_eq!(wal.load(1).unwrap().unwrap().entries, vec![entry(1, 10)]);
    assert!(wal.load(2).unwrap().is_none());
}

/// A log written with a larger record limit is refused, not cut, when reopened with a
/// smaller one: the intact record was acknowledged.
#[test]
fn lowered_record_limit_refuses_instead_of_truncating() {
    let fs = MemFs::new();
    let dir = Path::new("/wal");
    let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, WalOptions::default()).unwrap();
    wal.write(&[put(1, vec![entry(1, 8000)], 1)]).unwrap();
    drop(wal);
    let err = Wal::open_with(Arc::new(fs.clone()), dir, small_records()).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    let wal = Wal::open_with(Arc::new(fs), dir, WalOptions::default()).unwrap();
    assert_eq!(wal.load(1).unwrap().unwrap().entries.len(), 1);
}

/// Regression: a snapshot above `MAX_BYTES_LEN` was written and acknowledged, then its
/// file was refused at open (the node could not restart). Now the write is refused.
#[test]
fn snapshot_above_the_reader_limit_is_refused() {
    let fs = MemFs::new();
    let dir = Path::new("/wal");
    let mut wal = Wal::open_with(Arc::new(fs.clone()), dir, WalOptions::default()).unwrap();
    wal.write(&[put(1, vec![entry(1, 10)], 1)]).unwrap();
    // Zeroed pages from the allocator: not touched unless copied.
    let data = Bytes::from(vec![0u8; MAX_BYTES_LEN + 1]);
    let err = wal
        .write(&[GroupWrite {
            group: 1,
            snapshot: Some(Snapshot {
                meta: SnapshotMeta {
                    index: 1,
                    term: 1,
                    conf: ConfState::with_voters([1]),
                },
                data,
            }),
            ..GroupWrite::default()
        }])
        .unwrap_err();
    assert!(
        matches!(err, Error::WriteTooLarge { what: "snapshot data", limit, .. } if limit == MAX_BYTES_LEN),
        "{err}"
    );
    drop(wal);
    let wal = Wal::open_with(Arc::new(fs), dir, WalOptions::default()).unwrap();
    assert_eq!(wal.load(1).unwrap().unwrap().entries.len(), 1);
}

#[test]
fn record_limit_is_validated() {
    let fs = Arc::new(MemFs::new());
    for bad in [0, 4095, WalOptions::MAX_RECORD_BYTES + 1] {
        let opts = WalOptions::default().with_max_record_bytes(bad);
        assert!(matches!(
            Wal::open_with(fs.clone(), "/wal", opts),
            Err(Error::InvalidConfig {
                field: "max_record_bytes",
                ..
            })
        ));
    }
}
