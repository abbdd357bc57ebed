//! Crash tests with a real child process killed by SIGKILL at each step of both commit
//! paths. The child is this test binary re-run on one test with `SURGE_CRASH_AT` naming
//! the point; it prints `committed <xid>` after every commit that returned and stops at
//! the point (printing `reached`). The parent kills it, reopens the log and checks: every
//! returned commit is present exactly once, nothing partial is reported complete, no
//! `ML_` file is left, and mariadb-binlog accepts every file.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use surge_binlog::{Binlog, CACHE_DIR_NAME, CRASH_ENV, CRASH_SKIP_ENV, crash_points};
use surge_testkit::CrashChild;

use crate::common::{all_events, binlog_files, groups, test_config, verify_with_mariadb};

const DIR_ENV: &str = "SURGE_BINLOG_CRASH_DIR";

/// Child side: small commits, then a big one through the path the crash point is on.
fn child_work(dir: &Path, point: &str) {
    let rename = point.starts_with("binlog.rename");
    let mut cfg = test_config(dir).with_commit_by_rename(rename);
    if point == crash_points::RENAME_BEFORE_OLD_CLOSED {
        // The renamed file (2.5 MiB) is full at once: rotated under the same lock.
        cfg = cfg.with_max_binlog_size(1 << 20);
    }
    let log = Binlog::open(cfg).unwrap();
    for xid in 1..=5u64 {
        let mut c = log.new_cache();
        c.put(&xid.to_le_bytes(), b"small").unwrap();
        log.commit(c, xid).unwrap();
        println!("committed {xid}");
    }
    let mut big = log.new_cache();
    let v = vec![7u8; 64 << 10];
    for i in 0..40u32 {
        big.put(&i.to_le_bytes(), &v).unwrap();
    }
    if point == crash_points::COPY_BEFORE_SYNC || point == crash_points::COPY_AFTER_SYNC {
        // Small group path for these two.
        big = log.new_cache();
        big.put(b"last", b"small").unwrap();
    }
    log.commit(big, 100).unwrap();
    println!("committed 100");
    println!("finished without reaching the crash point");
}

/// The group-path points are passed by each of the five small commits first.
fn skip_for(point: &str) -> u64 {
    if point == crash_points::COPY_BEFORE_SYNC || point == crash_points::COPY_AFTER_SYNC {
        5
    } else {
        0
    }
}

/// Parent side: runs the child until `reached` (or, with `kill_after`, until that many
/// commits returned), kills it and returns the acknowledged xids.
fn run_child(test: &str, dir: &Path, point: &str, kill_after: Option<usize>) -> BTreeSet<u64> {
    run_child_skipping(test, dir, point, skip_for(point), kill_after)
}

/// As [`run_child`], the point passed `skip` times before it stops the child.
fn run_child_skipping(
    test: &str,
    dir: &Path,
    point: &str,
    skip: u64,
    kill_after: Option<usize>,
) -> BTreeSet<u64> {
    let skip = skip.to_string();
    let mut child = CrashChild::spawn(
        test,
        [
            (CRASH_ENV, OsStr::new(point)),
            (CRASH_SKIP_ENV, OsStr::new(&skip)),
            (DIR_ENV, dir.as_os_str()),
        ],
    );
    let mut acked = BTreeSet::new();
    let mut track = |line: &str| {
        if let Some(x) = line.strip_prefix("committed ") {
            acked.insert(x.trim().parse::<u64>().unwrap());
        }
        acked.len()
    };
    match kill_after {
        Some(n) => child.wait_until(&format!("{n} acknowledged commits"), |l| track(l) >= n),
        None => child.wait_reached(|l| {
            track(l);
        }),
    }
    child.kill();
    acked
}

/// Reopens after the kill and checks the invariants. Returns the recovery report.
fn check_after_crash(dir: &Path, acked: &BTreeSet<u64>) -> surge_binlog::RecoveryReport {
    let log = Binlog::open(test_config(dir)).unwrap();
    let report = log.recovery_report().clone();
    assert!(report.crashed(), "the killed writer left its file in use");
    let ml: Vec<_> = std::fs::read_dir(dir.join(CACHE_DIR_NAME))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ML_"))
        .collect();
    assert!(ml.is_empty(), "ML files left: {ml:?}");
    let (complete, incomplete) = groups(&all_events(dir).unwrap());
    let xids: Vec<u64> = complete.iter().map(|c| c.1).collect();
    let unique: BTreeSet<u64> = xids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        xids.len(),
        "a transaction is present twice: {xids:?}"
    );
    for x in acked {
        assert!(
            unique.contains(x),
            "acknowledged xid {x} lost; log has {xids:?}"
        );
    }
    // What recovery calls complete has its Xid in the log; what it calls incomplete does not.
    for t in &report.complete {
        assert!(
            complete
                .iter()
                .any(|c| c.0 == t.gtid.seq_no && Some(c.1) == t.xid)
        );
    }
    for t in &report.incomplete {
        assert!(incomplete.contains(&t.gtid.seq_no));
        assert!(!complete.iter().any(|c| c.0 == t.gtid.seq_no));
    }
    // The log continues: a new commit gets a fresh GTID, and MariaDB reads every file.
    let max_seq = complete
        .iter()
        .map(|c| c.0)
        .chain(incomplete.iter().copied())
        .max()
        .unwrap_or(0);
    let info = log.commit(log.new_cache(), 5000).unwrap();
    assert!(info.gtid.seq_no > max_seq);
    log.close().unwrap();
    for f in binlog_files(dir) {
        verify_with_mariadb(&f);
    }
    report
}

fn crash_test(test: &str, point: &str) -> surge_binlog::RecoveryReport {
    if let Ok(dir) = std::env::var(DIR_ENV) {
        child_work(Path::new(&dir), point);
        // Not reached: the parent kills the child at the crash point.
        std::process::exit(3);
    }
    let dir = tempfile::tempdir().unwrap();
    let acked = run_child(test, dir.path(), point, None);
    assert_eq!(
        acked,
        (1..=5).collect(),
        "small commits returned before the point"
    );
    check_after_crash(dir.path(), &acked)
}

#[test]
fn crash_mid_copy() {
    let r = crash_test("crash::crash_mid_copy", crash_points::COPY_MID);
    assert_eq!(
        r.incomplete.len(),
        1,
        "the big copied transaction is incomplete"
    );
    assert_eq!(r.complete.len(), 5);
}

#[test]
fn crash_after_group_write_before_sync() {
    let r = crash_test(
        "crash::crash_after_group_write_before_sync",
        crash_points::COPY_BEFORE_SYNC,
    );
    // Written but not acknowledged: complete in the file, reported so the caller decides.
    assert_eq!(r.complete.len(), 6);
    assert!(r.incomplete.is_empty());
}

#[test]
fn crash_after_group_sync() {
    let r = crash_test(
        "crash::crash_after_group_sync",
        crash_points::COPY_AFTER_SYNC,
    );
    assert_eq!(r.complete.len(), 6);
}

#[test]
fn crash_rename_after_rotate() {
    let r = crash_test(
        "crash::crash_rename_after_rotate",
        crash_points::RENAME_AFTER_ROTATE,
    );
    assert_eq!(
        r.removed_cache_files.len(),
        1,
        "the cache file was left and is deleted"
    );
    assert!(
        r.incomplete.is_empty(),
        "nothing of the big transaction is in the log"
    );
    assert_eq!(r.complete.len(), 5);
}

#[test]
fn crash_rename_after_rename() {
    let r = crash_test(
        "crash::crash_rename_after_rename",
        crash_points::RENAME_AFTER_RENAME,
    );
    assert_eq!(r.adopted_files, vec!["surge-bin.000002".to_string()]);
    assert_eq!(r.incomplete.len(), 1);
    assert_eq!(r.incomplete[0].file, "surge-bin.000002");
    assert!(r.removed_cache_files.is_empty());
}

#[test]
fn crash_rename_before_xid() {
    let r = crash_test(
        "crash::crash_rename_before_xid",
        crash_points::RENAME_BEFORE_XID,
    );
    assert!(r.adopted_files.is_empty());
    assert_eq!(r.incomplete.len(), 1);
    assert_eq!(r.incomplete[0].file, "surge-bin.000002");
    // The old file is marked closed only after the commit's lock is released.
    assert_eq!(
        r.in_use_files,
        vec![
            "surge-bin.000001".to_string(),
            "surge-bin.000002".to_string()
        ]
    );
}

#[test]
fn crash_rename_before_old_file_closed() {
    let r = crash_test(
        "crash::crash_rename_before_old_file_closed",
        crash_points::RENAME_BEFORE_OLD_CLOSED,
    );
    // The renamed file 2 was rotated at once (closed by that rotation); file 1 was still
    // waiting to be marked closed and file 3 was the current one: both are in use, though
    // file 1 is neither of the last two.
    assert_eq!(
        r.in_use_files,
        vec![
            "surge-bin.000001".to_string(),
            "surge-bin.000003".to_string()
        ]
    );
    assert!(r.incomplete.is_empty());
    assert_eq!(r.complete.len(), 5, "the small commits of file 1");
}

/// Child side of the batch tests: five small commits (groups of one), then one
/// `commit_many` batch of xids 100..=103 whose third transaction is spilled (copied: a
/// batch is never renamed).
fn batch_child_work(dir: &Path) {
    let log = Binlog::open(test_config(dir)).unwrap();
    for xid in 1..=5u64 {
        let mut c = log.new_cache();
        c.put(&xid.to_le_bytes(), b"small").unwrap();
        log.commit(c, xid).unwrap();
        println!("committed {xid}");
    }
    let batch = (100..=103u64)
        .map(|xid| {
            let mut c = log.new_cache();
            c.put(&xid.to_le_bytes(), b"member").unwrap();
            if xid == 102 {
                for i in 0..24u32 {
                    c.put(&i.to_le_bytes(), &[9u8; 64 << 10]).unwrap();
                }
            }
            (c, xid)
        })
        .collect();
    for info in log.commit_many(batch).unwrap() {
        println!("committed {}", info.xid);
    }
    println!("finished without reaching the crash point");
}

/// Kills the batch child at `point` after `skip` passes; checks recovery keeps whole
/// transactions only, and returns the xids of the log's complete transactions.
fn batch_crash_test(test: &str, point: &str, skip: u64) -> Vec<u64> {
    if let Ok(dir) = std::env::var(DIR_ENV) {
        batch_child_work(Path::new(&dir));
        std::process::exit(3);
    }
    let dir = tempfile::tempdir().unwrap();
    let acked = run_child_skipping(test, dir.path(), point, skip, None);
    assert_eq!(acked, (1..=5).collect(), "only the small commits returned");
    let report = check_after_crash(dir.path(), &acked);
    assert!(
        report.incomplete.is_empty(),
        "a partial transaction: {:?}",
        report.incomplete
    );
    let (complete, incomplete) = groups(&all_events(dir.path()).unwrap());
    assert!(incomplete.is_empty());
    // The batch's transactions in the log are a prefix of it, in order, with
    // consecutive GTIDs right after the small commits (5000: the check's own commit).
    let xids: Vec<u64> = complete
        .iter()
        .map(|c| c.1)
        .filter(|x| *x != 5000)
        .collect();
    let seqs: Vec<u64> = (1..=xids.len() as u64).collect();
    assert_eq!(
        complete
            .iter()
            .map(|c| c.0)
            .take(xids.len())
            .collect::<Vec<_>>(),
        seqs
    );
    xids
}

#[test]
fn crash_between_the_first_two_transactions_of_a_batch() {
    let xids = batch_crash_test(
        "crash::crash_between_the_first_two_transactions_of_a_batch",
        crash_points::COPY_BETWEEN_TXNS,
        0,
    );
    assert_eq!(xids, vec![1, 2, 3, 4, 5, 100]);
}

#[test]
fn crash_inside_a_batch_after_its_spilled_transaction() {
    let xids = batch_crash_test(
        "crash::crash_inside_a_batch_after_its_spilled_transaction",
        crash_points::COPY_BETWEEN_TXNS,
        2,
    );
    assert_eq!(xids, vec![1, 2, 3, 4, 5, 100, 101, 102]);
}

#[test]
fn crash_after_a_batch_is_written_before_its_fsync() {
    let xids = batch_crash_test(
        "crash::crash_after_a_batch_is_written_before_its_fsync",
        crash_points::COPY_BEFORE_SYNC,
        5,
    );
    assert_eq!(xids, vec![1, 2, 3, 4, 5, 100, 101, 102, 103]);
}

/// Kills a child running 3 threads of single commits and 2 threads of `commit_many`
/// batches (3 transactions each) after a seeded number of acknowledged commits. After
/// reopen: every acknowledged batch is in the log whole, contiguous and in order; a batch
/// the kill interrupted left a prefix of itself (whole transactions), never a gap.
#[test]
fn crash_at_random_points_under_concurrent_batches() {
    const TEST: &str = "crash::crash_at_random_points_under_concurrent_batches";
    const BATCH: u64 = 3;
    if let Ok(dir) = std::env::var(DIR_ENV) {
        let log = Arc::new(
            Binlog::open(test_config(Path::new(&dir)).with_max_binlog_size(64 << 10)).unwrap(),
        );
        let threads: Vec<_> = (0..5u64)
            .map(|t| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    for i in 0.. {
                        if t < 3 {
                            let xid = t * 1_000_000 + i;
                            let mut c = log.new_cache();
                            c.put(&xid.to_le_bytes(), &[1u8; 200]).unwrap();
                            log.commit(c, xid).unwrap();
                            println!("committed {xid}");
                            continue;
                        }
                        let batch = (0..BATCH)
                            .map(|j| {
                                let xid = t * 1_000_000 + i * 10 + j;
                                let mut c = log.new_cache();
                                c.put(&xid.to_le_bytes(), &[2u8; 300]).unwrap();
                                (c, xid)
                            })
                            .collect();
                        for info in log.commit_many(batch).unwrap() {
                            println!("committed {}", info.xid);
                        }
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|h| h.join().unwrap());
        std::process::exit(3);
    }
    kill_rounds(TEST, 0xba7c, |round, dir| {
        let (complete, _) = groups(&all_events(dir).unwrap());
        let xids: Vec<u64> = complete.iter().map(|c| c.1).collect();
        assert!(
            xids.iter().any(|x| *x >= 3_000_000 && x % 10 == BATCH - 1),
            "round {round}: no whole batch in the log"
        );
        // Batch members (threads 3 and 4, xid ending in 0, 1, 2 within a batch): each
        // one after the first follows its predecessor directly, so what is in the log of
        // a batch is a prefix of it, contiguous and in order.
        for (at, x) in xids.iter().enumerate() {
            if *x >= 3_000_000 && x % 10 != 0 {
                assert!(
                    at > 0 && xids[at - 1] == x - 1,
                    "round {round}: batch member {x} does not follow {} in {xids:?}",
                    x - 1
                );
            }
        }
    });
}

/// After recovery and a clean close, no file of the log is marked in use.
#[test]
fn no_file_is_left_in_use_after_recovery_at_any_rename_point() {
    for point in [
        crash_points::RENAME_AFTER_RENAME,
        crash_points::RENAME_BEFORE_XID,
        crash_points::RENAME_BEFORE_OLD_CLOSED,
    ] {
        let test = "crash::no_file_is_left_in_use_after_recovery_at_any_rename_point";
        if let Ok(dir) = std::env::var(DIR_ENV) {
            if std::env::var(CRASH_ENV).as_deref() == Ok(point) {
                child_work(Path::new(&dir), point);
                std::process::exit(3);
            }
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let acked = run_child(test, dir.path(), point, None);
        check_after_crash(dir.path(), &acked);
        for f in binlog_files(dir.path()) {
            let ev = surge_binlog::read_file_events(&f).unwrap();
            assert_eq!(
                ev[0].1.header.flags & surge_binlog::FLAG_BINLOG_IN_USE,
                0,
                "{point}: {} still in use",
                f.display()
            );
        }
    }
}

/// Kills a child running 4 committing threads after a seeded number of acknowledged commits.
#[test]
fn crash_at_random_points_under_concurrent_commits() {
    const TEST: &str = "crash::crash_at_random_points_under_concurrent_commits";
    if let Ok(dir) = std::env::var(DIR_ENV) {
        let log = Arc::new(
            Binlog::open(test_config(Path::new(&dir)).with_max_binlog_size(64 << 10)).unwrap(),
        );
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    for i in 0.. {
                        let xid = t * 1_000_000 + i;
                        let mut c = log.new_cache();
                        c.put(&xid.to_le_bytes(), &[1u8; 200]).unwrap();
                        if i % 50 == 7 {
                            c.put(b"bigger", &vec![2u8; 1 << 20]).unwrap();
                            c.put(b"bigger2", &vec![2u8; 1 << 19]).unwrap();
                        }
                        log.commit(c, xid).unwrap();
                        println!("committed {xid}");
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|h| h.join().unwrap());
        std::process::exit(3);
    }
    kill_rounds(TEST, 0x5eed, |_, _| {});
}

/// Three rounds of: run the child of `test` until a seeded number (20..220) of its commits
/// returned, kill it, check the reopened log ([`check_after_crash`]), then `more(round,
/// dir)`. The seed is `SURGE_BINLOG_CRASH_SEED`, else `default_seed`.
fn kill_rounds(test: &str, default_seed: u64, more: impl Fn(usize, &Path)) {
    let mut seed: u64 = std::env::var("SURGE_BINLOG_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seed);
    for round in 0..3 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = 20 + (seed >> 33) as usize % 200;
        let dir = tempfile::tempdir().unwrap();
        let acked = run_child(test, dir.path(), "none", Some(n));
        eprintln!(
            "round {round}: seed {seed:#x}, killed after {} acknowledged commits",
            acked.len()
        );
        check_after_crash(dir.path(), &acked);
        more(round, dir.path());
    }
}
