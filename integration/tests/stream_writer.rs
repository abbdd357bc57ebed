//! The replica stream's writer: the same history gives the same bytes whatever the
//! batching, the files have MariaDB's shape, and a writer killed at each crash point and
//! reopened goes on to exactly the bytes of a run that was never stopped.

mod common;

use std::path::Path;
use std::process::Command;

use surgedb::binlog::{EventBody, EventType, QueryEvent, read_file_events};
use surgedb::stream::{
    StreamConfig, StreamError, StreamWriter, StreamedGroup, StreamedTxn, crash_points,
};

use common::stream_file_bytes;

const CHILD_DIR: &str = "SURGE_STREAM_TEST_DIR";

/// A deterministic history: DDL, small transactions, hot-row-like multi-group
/// transactions and, every 17th, a large one.
fn history(n: u64) -> Vec<StreamedTxn> {
    (1..=n)
        .map(|i| {
            let commit_ts = (1_700_000_000_000 + i * 37) << 18 | (i % 5);
            let groups = if i % 23 == 1 {
                vec![StreamedGroup {
                    standalone: true,
                    events: vec![EventBody::Query(QueryEvent::new(
                        "d",
                        &format!("create table t{i} (id int primary key)"),
                    ))],
                }]
            } else {
                let size = if i % 17 == 0 {
                    40_000
                } else {
                    50 + (i as usize * 13) % 700
                };
                let members = if i % 7 == 0 { 3 } else { 1 };
                (0..members)
                    .map(|m| StreamedGroup {
                        standalone: false,
                        events: vec![EventBody::AnnotateRows(
                            format!("txn {i} member {m} ")
                                .repeat(size / 16 + 1)
                                .into_bytes(),
                        )],
                    })
                    .collect()
            };
            StreamedTxn {
                commit_ts,
                start_ts: commit_ts - 1000,
                groups,
            }
        })
        .collect()
}

fn config(dir: &Path) -> StreamConfig {
    StreamConfig::new(dir)
        .with_max_file_size(16 << 10)
        .with_large_group(32 << 10)
}

/// Feeds `txns` in batches of `batch`, each batch's watermark its last commit_ts + 1.
fn feed(w: &mut StreamWriter, txns: &[StreamedTxn], batch: usize) {
    for chunk in txns.chunks(batch.max(1)) {
        let done = chunk.last().map_or(0, |t| t.commit_ts + 1);
        w.append(chunk, done, 0).expect("append");
    }
}

fn reference(txns: &[StreamedTxn]) -> (tempfile::TempDir, Vec<(String, Vec<u8>)>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = StreamWriter::open(config(dir.path())).expect("open");
    feed(&mut w, txns, 1);
    let snap = stream_file_bytes(dir.path());
    (dir, snap)
}

#[test]
fn batching_does_not_change_a_byte() {
    let txns = history(120);
    let (_d, want) = reference(&txns);
    assert!(want.len() > 5, "expected several files, got {}", want.len());
    for batch in [2, 7, 50, 120] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = StreamWriter::open(config(dir.path())).expect("open");
        feed(&mut w, &txns, batch);
        assert_eq!(stream_file_bytes(dir.path()), want, "batch {batch}");
        let files = w.files();
        let groups: usize = txns.iter().map(|t| t.groups.len()).sum();
        assert_eq!(files.last_seq(), groups as u64);
        assert_eq!(files.done_ts(), txns.last().map_or(0, |t| t.commit_ts + 1));
        assert_eq!(files.files().len(), want.len());
        let (end_file, end_off) = files.end();
        assert_eq!(Some(&end_file), want.last().map(|(n, _)| n));
        assert_eq!(end_off, want.last().map_or(0, |(_, b)| b.len() as u64));
        // Reopened without a crash: same bytes, and it goes on from where it was.
        drop(w);
        let w = StreamWriter::open(config(dir.path())).expect("reopen");
        assert_eq!(
            w.cursor().done_ts,
            txns.last().map_or(0, |t| t.commit_ts + 1)
        );
        assert_eq!(
            stream_file_bytes(dir.path()),
            want,
            "batch {batch} after reopen"
        );
    }
}

/// The bytes of the reference history, pinned (FNV-1a over each file's name and bytes):
/// each node writes its own copy of the stream, so a change to how the writer encodes
/// (buffer sizing, borrowed events) must not move a byte. Taken from the writer before
/// `encode_group` preallocated and stopped cloning events.
#[test]
fn the_reference_bytes_are_pinned() {
    let (_d, files) = reference(&history(120));
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for (name, bytes) in &files {
        for b in name.bytes().chain(bytes.iter().copied()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let total: usize = files.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(
        (files.len(), total, hash),
        (17, 444_327, 665_659_590_987_334_411)
    );
}

#[test]
fn files_have_mariadb_shape() {
    let txns = history(120);
    let (dir, snap) = reference(&txns);
    let groups: usize = txns.iter().map(|t| t.groups.len()).sum();
    let mut seq = 0u64;
    let mut large_files = 0;
    for (i, (name, _)) in snap.iter().enumerate() {
        let ev = read_file_events(dir.path().join(name)).expect("decode");
        let types: Vec<EventType> = ev.iter().map(|(_, e)| e.header.event_type).collect();
        assert_eq!(
            &types[..3],
            &[
                EventType::FormatDescription,
                EventType::GtidList,
                EventType::BinlogCheckpoint
            ],
            "{name}"
        );
        match &ev[1].1.body {
            EventBody::GtidList(l) if seq == 0 => assert!(l.gtids.is_empty(), "{name}"),
            EventBody::GtidList(l) => {
                assert_eq!(l.gtids.len(), 1, "{name}");
                assert_eq!(
                    l.gtids[0].seq_no, seq,
                    "{name}: Gtid_list is the state before"
                );
                assert_eq!(l.gtids[0].server_id, 1000);
            }
            other => panic!("{name}: {other:?}"),
        }
        let mut in_file = 0;
        for (_, e) in &ev {
            if let EventBody::Gtid(g) = &e.body {
                seq += 1;
                in_file += 1;
                assert_eq!(g.seq_no, seq, "{name}: sequence numbers without gaps");
                assert_eq!(g.domain_id, 0);
            }
        }
        let last = i + 1 == snap.len();
        if !last {
            assert_eq!(
                types.last(),
                Some(&EventType::Rotate),
                "{name} ends with a Rotate"
            );
        }
        let big = ev.iter().any(|(_, e)| e.header.event_size > 32 << 10);
        if big {
            large_files += 1;
            assert_eq!(in_file, 1, "{name}: a large group is alone in its file");
        }
    }
    assert_eq!(seq as usize, groups);
    let large_groups = txns
        .iter()
        .flat_map(|t| &t.groups)
        .filter(|g| matches!(&g.events[0], EventBody::AnnotateRows(b) if b.len() > 32 << 10))
        .count();
    assert!(large_groups >= 120 / 17);
    assert_eq!(large_files, large_groups);
}

#[test]
fn out_of_order_and_misplaced_events_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = StreamWriter::open(config(dir.path())).expect("open");
    let txns = history(3);
    w.append(&txns[1..2], txns[1].commit_ts, 0).expect("append");
    let e = w
        .append(&txns[0..1], txns[1].commit_ts + 5, 0)
        .expect_err("late txn");
    assert!(matches!(e, StreamError::OutOfOrder { .. }), "{e}");
    let e = w
        .append(&txns[2..3], txns[2].commit_ts - 1, 0)
        .expect_err("beyond watermark");
    assert!(matches!(e, StreamError::OutOfOrder { .. }), "{e}");
    let mut bad = txns[2].clone();
    bad.groups[0].events.push(EventBody::Xid(9));
    let e = w
        .append(&[bad], txns[2].commit_ts, 0)
        .expect_err("xid inside");
    assert!(e.to_string().contains("Xid"), "{e}");
    // One region's one-phase commits of disjoint keys may share a commit_ts: side by side
    // in one batch they are taken; a batch that goes back is not, nor one at the watermark.
    let more = history(6);
    let mut back = vec![more[4].clone(), more[3].clone()];
    let e = w
        .append(&back, more[4].commit_ts, 0)
        .expect_err("going back");
    assert!(matches!(e, StreamError::OutOfOrder { .. }), "{e}");
    back[1].commit_ts = back[0].commit_ts;
    w.append(&back, back[0].commit_ts, 0).expect("a tie");
    let e = w
        .append(&more[4..5], more[4].commit_ts, 0)
        .expect_err("at the watermark");
    assert!(matches!(e, StreamError::OutOfOrder { .. }), "{e}");
}

/// Child side of the crash test: feed the whole history into `SURGE_STREAM_TEST_DIR`
/// (from where its cursor says), with `SURGE_CRASH_AT` armed by the parent.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let mut w = StreamWriter::open(config(Path::new(&dir))).expect("open");
    let done = w.cursor().done_ts;
    let rest: Vec<_> = history(120)
        .into_iter()
        .filter(|t| t.commit_ts > done)
        .collect();
    feed(&mut w, &rest, 5);
}

#[test]
fn killed_at_every_point_recovers_to_the_same_bytes() {
    let txns = history(120);
    let (_d, want) = reference(&txns);
    for point in crash_points::ALL {
        for skip in [0, 3] {
            let dir = tempfile::tempdir().expect("tempdir");
            let out = Command::new(std::env::current_exe().expect("exe"))
                .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
                .env(CHILD_DIR, dir.path())
                .env("SURGE_CRASH_AT", point)
                .env("SURGE_CRASH_SKIP", skip.to_string())
                .output()
                .expect("spawn child");
            assert!(
                !out.status.success(),
                "{point}/{skip}: the child should have crashed"
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("crash point"), "{point}/{skip}: {stderr}");
            // Reopen (cuts what the crash left) and finish: the bytes of an unstopped run.
            let mut w = StreamWriter::open(config(dir.path())).expect("reopen");
            let done = w.cursor().done_ts;
            let rest: Vec<_> = txns
                .iter()
                .filter(|t| t.commit_ts > done)
                .cloned()
                .collect();
            feed(&mut w, &rest, 5);
            assert_eq!(stream_file_bytes(dir.path()), want, "{point}/{skip}");
        }
    }
}

/// `mariadb-binlog` (when installed) reads every file and sees every GTID.
#[test]
fn mariadb_binlog_reads_the_stream() {
    let Ok(out) = Command::new("mariadb-binlog").arg("--version").output() else {
        assert!(
            std::env::var_os("SURGE_REQUIRE_MARIADB_BINLOG").is_none(),
            "mariadb-binlog is required (SURGE_REQUIRE_MARIADB_BINLOG) but not installed"
        );
        eprintln!("skipped: needs mariadb-client (mariadb-binlog)");
        return;
    };
    assert!(out.status.success());
    let txns = history(60);
    let (dir, snap) = reference(&txns);
    let files: Vec<_> = snap.iter().map(|(n, _)| dir.path().join(n)).collect();
    let out = Command::new("mariadb-binlog")
        .args(&files)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let groups: usize = txns.iter().map(|t| t.groups.len()).sum();
    assert!(
        text.contains(&format!("GTID 0-1000-{groups}")),
        "last GTID missing"
    );
    assert!(text.matches("GTID 0-1000-").count() >= groups);
}

/// Every node's copy must be the same bytes, so the cluster keeps the stream settings the
/// first follower claimed: a follower started with other settings stops with an error that
/// names both, and writes nothing; one with the same settings follows.
#[test]
fn a_follower_with_other_settings_than_the_cluster_stops() {
    use surge_txn::{ClusterConfig, LocalCluster, TxnClient};
    use surgedb::stream::{FollowerConfig, StreamFollower, TxnRecordSource};

    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = LocalCluster::start(ClusterConfig::new(dir.path().join("store")).with_regions(2))
        .expect("cluster");
    let follow = |name: &str, cfg: StreamConfig| {
        let writer = StreamWriter::open(cfg.clone()).expect("open");
        let source = TxnRecordSource::new(TxnClient::new(
            cluster.router(),
            surge_txn::ClientConfig::default(),
        ));
        let f = StreamFollower::start(writer, Box::new(source), FollowerConfig::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while f.status().rounds == 0
            && f.status().stopped.is_none()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        f.status()
    };
    let first = follow("first", config(&dir.path().join("a")));
    assert!(first.stopped.is_none() && first.rounds > 0, "{first:?}");
    let same = follow("same", config(&dir.path().join("b")));
    assert!(same.stopped.is_none() && same.rounds > 0, "{same:?}");
    let other_cfg = config(&dir.path().join("c")).with_max_file_size(1 << 30);
    let other = follow("other", other_cfg);
    let stopped = other
        .stopped
        .expect("the follower with other settings stopped");
    assert!(
        stopped.contains("max_file_size=1073741824") && stopped.contains("differ"),
        "{stopped}"
    );
    assert_eq!(other.rounds, 0);
}

/// `PURGE BINARY LOGS`: files before the target go, oldest first, but never the last one,
/// nor a file a dump has pinned, nor any after it; the writer goes on appending, reopens
/// over the shorter list, and readers see it at once.
#[test]
fn purge_removes_old_files_but_not_the_last_nor_a_pinned_one() {
    use std::time::{Duration, SystemTime};
    use surgedb::mysql::{PurgeTarget, ReplicationError, ReplicationSource};

    let dir = tempfile::tempdir().expect("tempdir");
    let txns = history(120);
    let mut w = StreamWriter::open(config(dir.path())).expect("open");
    feed(&mut w, &txns[..100], 7);
    let files = w.files();
    let names = |f: &surgedb::stream::StreamFiles| -> Vec<String> {
        f.files().into_iter().map(|(n, _)| n).collect()
    };
    let before = names(&files);
    assert!(before.len() >= 6, "{before:?}");
    let name = |i: usize| before[i].clone();

    // A name the stream does not list removes nothing.
    assert!(matches!(
        w.purge(&PurgeTarget::To("surge-stream-bin.999999".into())),
        Err(StreamError::NoSuchFile { .. })
    ));
    assert_eq!(names(&files), before);
    // A dump reading the third file keeps it and every later one.
    let pin = ReplicationSource::pin(&*files, &name(2)).expect("pin");
    let removed = w.purge(&PurgeTarget::To(name(5))).expect("purge");
    assert_eq!(removed, [name(0), name(1)]);
    assert_eq!(names(&files), before[2..]);
    assert!(!dir.path().join(name(0)).exists());
    // A removed file can no longer be pinned.
    assert!(matches!(
        ReplicationSource::pin(&*files, &name(0)),
        Err(ReplicationError::FileGone { .. })
    ));
    drop(pin);
    let removed = w.purge(&PurgeTarget::To(name(5))).expect("purge");
    assert_eq!(removed, [name(2), name(3), name(4)]);

    // Before a time: everything older, but the last file stays.
    let later = SystemTime::now() + Duration::from_secs(3600);
    let removed = w.purge(&PurgeTarget::Before(later)).expect("purge");
    let last = before.last().expect("a file").clone();
    assert_eq!(names(&files), std::slice::from_ref(&last));
    assert_eq!(removed.len(), before.len() - 6);
    // Nothing older than a time long past.
    assert!(
        w.purge(&PurgeTarget::Before(SystemTime::UNIX_EPOCH))
            .expect("purge")
            .is_empty()
    );

    // The writer goes on, and a reopened writer over the shorter list writes the same
    // bytes as one that never purged.
    feed(&mut w, &txns[100..110], 3);
    drop(w);
    let mut w = StreamWriter::open(config(dir.path())).expect("reopen");
    feed(&mut w, &txns[110..], 4);
    let (_ref_dir, whole) = reference(&txns);
    let kept = stream_file_bytes(dir.path());
    assert_eq!(kept.first().map(|(n, _)| n.clone()), Some(last));
    assert!(!kept.is_empty());
    for (n, bytes) in &kept {
        let want = whole
            .iter()
            .find(|(m, _)| m == n)
            .unwrap_or_else(|| panic!("{n} not in the reference"));
        assert_eq!(&want.1, bytes, "{n}");
    }
}
