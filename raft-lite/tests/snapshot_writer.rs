//! A group's own snapshots are written to their own file by the node's background
//! snapshot writer: the other groups of the node keep committing meanwhile, the log refers
//! to the file only once it is durable, replay reads each group's latest file, and files
//! nobody needs any more are deleted.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use surge_raft_lite::*;

mod snap_support;
use snap_support::{HookFs, Set, put, snapshot_files, wait_until};

const BIG: u64 = 1;
const SMALL: u64 = 2;

fn options(snapshot_every: u64) -> NodeOptions {
    let mut o = NodeOptions::new(1);
    o.tick = Duration::from_millis(5);
    o.snapshot_every = snapshot_every;
    o
}

/// A single-node node over a WAL in `dir` on `fs`, hosting `groups` (id, state machine).
fn start(dir: &Path, fs: &HookFs, snapshot_every: u64, groups: &[(u64, &Set)]) -> Node {
    let wal = Wal::open_with(Arc::new(fs.clone()), dir, WalOptions::default()).unwrap();
    let node = Node::start(options(snapshot_every), Box::new(wal), MemNetwork::new(1)).unwrap();
    for (g, sm) in groups {
        node.add_group(*g, ConfState::with_voters([1]), Box::new((*sm).clone()))
            .unwrap();
        node.campaign(*g).unwrap();
    }
    node
}

fn std_fs() -> HookFs {
    HookFs::new(Arc::new(StdFs))
}

/// Regression: the driver wrote a group's snapshot (file and fsync) itself, so every
/// group of the node stopped until it was durable (about 100 ms for 16 MiB, all client
/// traffic of the node stalled). With the write held indefinitely, the other group must
/// still commit, and the snapshot must not be recorded before its file is durable.
#[test]
fn other_groups_commit_while_a_snapshot_file_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let (big, small) = (Set::with_pad(8 << 20), Set::default());
    let node = start(dir.path(), &fs, 20, &[(BIG, &big), (SMALL, &small)]);
    fs.hold();
    for x in 0..25 {
        put(&node, BIG, x);
    }
    wait_until("the snapshot write starts", || fs.started() == 1);
    let t0 = Instant::now();
    for x in 0..50 {
        put(&node, SMALL, x);
    }
    let small_done = t0.elapsed();
    // Still held after the 50 commits (so they did not wait for it): nothing recorded,
    // nothing compacted, the file not there.
    assert_eq!(fs.written(), 0);
    assert_eq!(node.stats().snapshots, 0);
    assert_eq!(snapshot_files(dir.path()), Vec::<(u64, u64)>::new());
    fs.release();
    // The other group may have queued a snapshot of its own behind this one.
    wait_until("the snapshot is recorded", || {
        node.stats().snapshots >= 1 && snapshot_files(dir.path()).iter().any(|f| f.0 == BIG)
    });
    let files = snapshot_files(dir.path());
    assert!(files.iter().any(|&(g, i)| g == BIG && i >= 20), "{files:?}");
    println!("50 commits of another group in {small_done:?} while the snapshot was held");
}

/// Many snapshots of one group: only the latest file stays, and a restart replays from
/// it (the log's older references to deleted files do not matter).
#[test]
fn restart_replays_from_the_latest_snapshot_file_and_superseded_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let set = Set::with_pad(1 << 20);
    let node = start(dir.path(), &fs, 10, &[(BIG, &set)]);
    for x in 0..75 {
        put(&node, BIG, x);
    }
    wait_until("several snapshots", || node.stats().snapshots >= 3);
    drop(node);
    let files = snapshot_files(dir.path());
    assert_eq!(files.len(), 1, "superseded files deleted: {files:?}");
    let (g, index) = files[0];
    assert_eq!(g, BIG);

    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    let st = wal.load(BIG).unwrap().unwrap();
    let snap = st.snapshot.unwrap();
    assert_eq!(snap.meta.index, index);
    assert_eq!(snap.data.len(), 8 + 8 * (index as usize - 1) + (1 << 20));
    drop(wal);

    let again = Set::default();
    let node = start(dir.path(), &fs, 10, &[(BIG, &again)]);
    wait_until("replayed", || again.len() == 75);
    put(&node, BIG, 1000);
    assert!((0..75).chain([1000]).all(|x| again.contains(x)));
}

/// The latest snapshot file damaged or missing: open refuses the log with an error that
/// names the file (the entries it covers are gone from the log).
#[test]
fn a_damaged_or_missing_latest_snapshot_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let set = Set::default();
    let node = start(dir.path(), &fs, 10, &[(BIG, &set)]);
    for x in 0..15 {
        put(&node, BIG, x);
    }
    wait_until("a snapshot", || node.stats().snapshots == 1);
    drop(node);
    let snap_dir = dir.path().join("snap");
    let name = std::fs::read_dir(&snap_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let path = snap_dir.join(&name);
    let good = std::fs::read(&path).unwrap();

    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let err = Wal::open(dir.path(), WalOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { path: p, .. } if *p == path),
        "{err}"
    );
    assert!(err.to_string().contains(&*name.to_string_lossy()), "{err}");

    std::fs::remove_file(&path).unwrap();
    let err = Wal::open(dir.path(), WalOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::Corrupt { path: p, reason, .. } if *p == path && reason.contains("missing")),
        "{err}"
    );

    std::fs::write(&path, &good).unwrap();
    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    assert!(wal.load(BIG).unwrap().unwrap().snapshot.is_some());
}

/// A snapshot whose group was removed while its file was written is discarded, file
/// and all, and nothing is recorded.
#[test]
fn a_snapshot_of_a_group_removed_meanwhile_is_discarded() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let (big, small) = (Set::default(), Set::default());
    let node = start(dir.path(), &fs, 10, &[(BIG, &big), (SMALL, &small)]);
    fs.hold();
    for x in 0..12 {
        put(&node, BIG, x);
    }
    wait_until("the snapshot write starts", || fs.started() == 1);
    node.remove_group(BIG).unwrap();
    fs.release();
    wait_until("discarded", || node.stats().snapshots_discarded == 1);
    assert_eq!(node.stats().snapshots, 0);
    assert_eq!(snapshot_files(dir.path()), Vec::<(u64, u64)>::new());
    // The group's log is whole: it comes back with every entry.
    let back = Set::default();
    node.add_group(BIG, ConfState::with_voters([1]), Box::new(back.clone()))
        .unwrap();
    node.campaign(BIG).unwrap();
    wait_until("replayed", || back.len() == 12);
}

/// With `snapshot_log_percent`, a state machine whose snapshot is large next to its
/// entries is not encoded again every `snapshot_every` entries: after the first snapshot,
/// the next waits until the log holds that share of its bytes (or the entry cap). Without
/// it, every `snapshot_every` entries re-encode the whole state.
#[test]
fn a_large_snapshot_waits_until_the_log_holds_its_share_of_bytes() {
    for percent in [0, 75] {
        let dir = tempfile::tempdir().unwrap();
        let fs = std_fs();
        let big = Set::with_pad(1 << 20);
        let wal = Wal::open_with(Arc::new(fs.clone()), dir.path(), WalOptions::default()).unwrap();
        let opts = options(10).with_snapshot_log_percent(percent);
        let node = Node::start(opts, Box::new(wal), MemNetwork::new(1)).unwrap();
        node.add_group(BIG, ConfState::with_voters([1]), Box::new(big.clone()))
            .unwrap();
        node.campaign(BIG).unwrap();
        for x in 0..120 {
            put(&node, BIG, x);
        }
        if percent == 0 {
            wait_until("a snapshot per few entries", || node.stats().snapshots >= 5);
        } else {
            wait_until("the first snapshot", || node.stats().snapshots >= 1);
            // 110 small entries since are far below 3/4 of a 1 MiB snapshot, and far
            // below the entry cap.
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(node.stats().snapshots, 1, "re-encoded before the log grew");
        }
        drop(node);
    }
}
