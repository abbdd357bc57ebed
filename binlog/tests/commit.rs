//! Commits through the group-commit path: content, order under concurrency, rotation,
//! savepoints, spilling, reading back from a position, purge.

use std::sync::Arc;

use surge_binlog::{
    Binlog, BinlogConfig, CACHE_DIR_NAME, CommitMethod, Error, EventBody, KvRow, LogReader,
    Position, RowsKind, SyncPolicy,
};

use crate::common::{all_events, first_row_keys, fresh, groups, test_config, verify_all};

#[test]
fn one_commit_reads_back_as_gtid_rows_xid() {
    let (dir, log) = fresh();
    let mut c = log.new_cache();
    c.annotate("INSERT INTO surgedb.kv VALUES ('k1','v1')")
        .unwrap();
    c.put(b"k1", b"v1").unwrap();
    c.delete(b"k2").unwrap();
    let info = log.commit(c, 7).unwrap();
    assert_eq!(info.method, CommitMethod::Copied);
    assert_eq!(info.gtid.to_string(), "0-1-1");
    let events = all_events(dir.path()).unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|(_, e)| e.header.event_type.name())
        .collect();
    assert_eq!(
        kinds,
        [
            "Format_desc",
            "Gtid_list",
            "Binlog_checkpoint",
            "Gtid",
            "Annotate_rows",
            "Table_map",
            "Write_rows_v1",
            "Table_map",
            "Delete_rows_v1",
            "Xid"
        ]
    );
    let (pos, xid) = events.last().unwrap();
    assert_eq!(xid.body, EventBody::Xid(7));
    assert_eq!(
        pos.offset + u64::from(xid.header.event_size),
        info.end_position
    );
    let rows: Vec<(RowsKind, Vec<KvRow>)> = events
        .iter()
        .filter_map(|(_, e)| match &e.body {
            EventBody::Rows(r) => Some((r.kind, r.kv_rows().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(
        rows[0].1,
        vec![KvRow {
            key: b"k1".to_vec(),
            value: Some(b"v1".to_vec())
        }]
    );
    assert_eq!(
        rows[1],
        (
            RowsKind::Delete,
            vec![KvRow {
                key: b"k2".to_vec(),
                value: None
            }]
        )
    );
    assert_eq!(log.stats().commits, 1);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn concurrent_commits_are_grouped_unique_and_in_gtid_order() {
    let (dir, log) = fresh();
    let log = Arc::new(log);
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                (0..40u64)
                    .map(|i| {
                        let mut c = log.new_cache();
                        c.put(format!("t{t}-{i}").as_bytes(), &[0u8; 200]).unwrap();
                        log.commit(c, t * 1000 + i).unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut infos: Vec<_> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    infos.sort_by_key(|i| i.gtid.seq_no);
    let seqs: Vec<u64> = infos.iter().map(|i| i.gtid.seq_no).collect();
    assert_eq!(seqs, (1..=320).collect::<Vec<_>>());
    let (complete, incomplete) = groups(&all_events(dir.path()).unwrap());
    assert!(incomplete.is_empty());
    // The log holds the transactions in GTID order, each with the xid it was given, and
    // positions grow with the GTID.
    let expect: Vec<(u64, u64)> = infos.iter().map(|i| (i.gtid.seq_no, i.xid)).collect();
    assert_eq!(complete, expect);
    assert!(
        infos
            .windows(2)
            .all(|w| w[0].end_position < w[1].end_position)
    );
    let s = log.stats();
    assert_eq!(s.commits, 320);
    assert!(s.groups <= 320 && s.groups >= 1);
    assert_eq!(s.syncs, s.groups, "EveryGroup syncs once per group");
    drop(log);
    verify_all(dir.path());
}

#[test]
fn sync_policy_every_n_groups_and_never() {
    for (policy, expect) in [
        (
            SyncPolicy::EveryNGroups(std::num::NonZeroU32::new(3).unwrap()),
            3,
        ),
        (SyncPolicy::Never, 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = Binlog::open(test_config(dir.path()).with_sync(policy)).unwrap();
        for i in 0..9 {
            log.commit(log.new_cache(), i).unwrap();
        }
        assert_eq!(log.stats().syncs, expect, "{policy:?}");
    }
}

#[test]
fn rotation_at_max_size_keeps_every_transaction_readable() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path()).with_max_binlog_size(8192)).unwrap();
    for i in 0..60u64 {
        let mut c = log.new_cache();
        c.put(&i.to_le_bytes(), &[7u8; 500]).unwrap();
        log.commit(c, i).unwrap();
    }
    let files = log.files();
    assert!(files.len() >= 4, "{files:?}");
    for f in &files[..files.len() - 1] {
        let ev = surge_binlog::read_file_events(dir.path().join(f)).unwrap();
        assert!(
            matches!(ev.last().unwrap().1.body, EventBody::Rotate(_)),
            "{f}"
        );
        let fd = &ev[0].1;
        assert_eq!(
            fd.header.flags & surge_binlog::FLAG_BINLOG_IN_USE,
            0,
            "{f} closed"
        );
    }
    let (complete, _) = groups(&all_events(dir.path()).unwrap());
    assert_eq!(
        complete.iter().map(|c| c.1).collect::<Vec<_>>(),
        (0..60).collect::<Vec<_>>()
    );
    // A new file's Gtid_list carries the state before it.
    let second = surge_binlog::read_file_events(dir.path().join(&files[1])).unwrap();
    let EventBody::GtidList(l) = &second[1].1.body else {
        panic!("no Gtid_list")
    };
    assert_eq!(l.gtids.len(), 1);
    assert!(l.gtids[0].seq_no >= 1);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn savepoints_roll_back_in_memory_and_spilled() {
    let (dir, log) = fresh();
    let mut c = log.new_cache();
    c.put(b"keep", b"1").unwrap();
    let sp = c.savepoint();
    c.put(b"drop-mem", b"2").unwrap();
    c.rollback_to(sp).unwrap();
    let sp2 = c.savepoint();
    for i in 0..20u32 {
        c.put(&i.to_le_bytes(), &[1u8; 1000]).unwrap();
    }
    assert!(c.is_spilled());
    c.rollback_to(sp2).unwrap();
    c.put(b"after", b"3").unwrap();
    c.rollback_to(sp2).unwrap();
    c.put(b"after", b"3").unwrap();
    log.commit(c, 1).unwrap();
    let keys = first_row_keys(dir.path());
    assert_eq!(keys, vec![b"keep".to_vec(), b"after".to_vec()]);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn rolling_back_past_the_end_is_refused() {
    let (_dir, log) = fresh();
    let mut c = log.new_cache();
    let sp0 = c.savepoint();
    c.put(b"a", b"1").unwrap();
    let sp1 = c.savepoint();
    c.rollback_to(sp0).unwrap();
    assert!(c.is_empty());
    assert!(matches!(c.rollback_to(sp1), Err(Error::Invalid { .. })));
}

#[test]
fn spilled_small_cache_is_copied_and_its_file_removed() {
    let (dir, log) = fresh();
    let mut c = log.new_cache();
    for i in 0..50u32 {
        c.put(&i.to_le_bytes(), &[3u8; 1000]).unwrap();
    }
    let path = c.spill_path().unwrap().to_path_buf();
    assert!(path.starts_with(dir.path().join(CACHE_DIR_NAME)));
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("ML_")
    );
    assert_eq!(c.reserved_bytes(), 4096);
    let info = log.commit(c, 9).unwrap();
    assert_eq!(info.method, CommitMethod::Copied);
    assert!(!path.exists());
    let (complete, _) = groups(&all_events(dir.path()).unwrap());
    assert_eq!(complete, vec![(1, 9)]);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn dropped_cache_removes_its_spill_file() {
    let (_dir, log) = fresh();
    let mut c = log.new_cache();
    c.put(b"k", &[0u8; 10_000]).unwrap();
    let path = c.spill_path().unwrap().to_path_buf();
    assert!(path.exists());
    drop(c);
    assert!(!path.exists());
}

#[test]
fn oversized_key_is_refused() {
    let (_dir, log) = fresh();
    let mut c = log.new_cache();
    let err = c.put(&[0u8; 3073], b"v").unwrap_err();
    assert!(err.to_string().contains("3072"), "{err}");
    assert!(!err.is_fatal());
    c.put(&[0u8; 3072], b"v").unwrap();
}

#[test]
fn reader_starts_at_a_commit_position_and_crosses_files() {
    let (dir, log) = fresh();
    let first = log.commit(log.new_cache(), 1).unwrap();
    log.rotate().unwrap();
    log.commit(log.new_cache(), 2).unwrap();
    let from = Position {
        file: first.file.clone(),
        offset: first.end_position,
    };
    let xids: Vec<u64> = LogReader::open(dir.path(), "surge-bin", Some(from))
        .unwrap()
        .filter_map(|r| match r.unwrap().1.body {
            EventBody::Xid(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(xids, vec![2]);
    let bad = Position {
        file: "nope.000001".into(),
        offset: 4,
    };
    assert!(LogReader::open(dir.path(), "surge-bin", Some(bad)).is_err());
    // A position past the end of its file is refused, not read as "nothing more here".
    let past = Position {
        file: first.file.clone(),
        offset: 1 << 30,
    };
    assert!(matches!(
        LogReader::open(dir.path(), "surge-bin", Some(past)),
        Err(Error::Invalid { .. })
    ));
}

#[test]
fn purge_to_deletes_older_files_only() {
    let (dir, log) = fresh();
    for i in 0..3 {
        log.commit(log.new_cache(), i).unwrap();
        log.rotate().unwrap();
    }
    let files = log.files();
    assert_eq!(files.len(), 4);
    let gone = log.purge_to(&files[2]).unwrap();
    assert_eq!(gone, files[..2].to_vec());
    assert!(!dir.path().join(&files[0]).exists());
    assert_eq!(log.files(), files[2..].to_vec());
    assert!(log.purge_to("surge-bin.000099").is_err());
    let (complete, _) = groups(&all_events(dir.path()).unwrap());
    assert_eq!(complete, vec![(3, 2)]);
    drop(log);
    verify_all(dir.path());
}

/// `purge_before` deletes by modification time, oldest first, up to the first file that is
/// new enough (an old file after it stays), and never the current file.
#[test]
fn purge_before_deletes_files_older_than_the_time_and_never_the_current_one() {
    use std::time::{Duration, SystemTime};
    let (dir, log) = fresh();
    for i in 0..4 {
        log.commit(log.new_cache(), i).unwrap();
        log.rotate().unwrap();
    }
    let files = log.files();
    assert_eq!(files.len(), 5);
    let now = SystemTime::now();
    let age = |f: &str, secs: u64| {
        std::fs::File::options()
            .write(true)
            .open(dir.path().join(f))
            .unwrap()
            .set_modified(now - Duration::from_secs(secs))
            .unwrap();
    };
    // Two hours, two hours, now, two hours (after a newer one), and the current file.
    for (f, secs) in files.iter().zip([7200, 7200, 0, 7200, 7200]) {
        age(f, secs);
    }
    let hour_ago = now - Duration::from_secs(3600);
    assert_eq!(log.purge_before(hour_ago).unwrap(), files[..2].to_vec());
    assert_eq!(log.files(), files[2..].to_vec());
    assert!(
        log.purge_before(hour_ago).unwrap().is_empty(),
        "stops at the new one"
    );
    age(&files[2], 7200);
    // Everything is old now: all but the current file go.
    assert_eq!(log.purge_before(hour_ago).unwrap(), files[2..4].to_vec());
    assert_eq!(log.files(), vec![files[4].clone()]);
    assert!(
        log.purge_before(now + Duration::from_secs(60))
            .unwrap()
            .is_empty()
    );
    assert_eq!(log.commit(log.new_cache(), 9).unwrap().gtid.seq_no, 5);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn second_writer_is_locked_out_and_bad_config_refused() {
    let (dir, _log) = fresh();
    assert!(matches!(
        Binlog::open(test_config(dir.path())),
        Err(Error::Locked { .. })
    ));
    let d2 = tempfile::tempdir().unwrap();
    for cfg in [
        test_config(d2.path()).with_large_commit_threshold(1000),
        test_config(d2.path()).with_max_binlog_size(100),
        test_config(d2.path()).with_base_name("a/b"),
        test_config(d2.path()).with_cache_buffer_size(10),
    ] {
        assert!(matches!(Binlog::open(cfg), Err(Error::Config { .. })));
    }
}

/// `BinlogConfig::default()` has no directory: opening it is refused, naming the setting,
/// instead of writing the binlog into the current directory.
#[test]
fn a_config_without_a_directory_is_refused() {
    let opened = Binlog::open(BinlogConfig::default().with_large_commit_threshold(1 << 20));
    assert!(
        matches!(&opened, Err(Error::Config { what: "dir", .. })),
        "{:?}",
        opened.map(|log| log.files())
    );
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(BinlogConfig::default().with_dir(dir.path())).unwrap();
    assert_eq!(log.files(), vec!["surge-bin.000001".to_string()]);
}

#[test]
fn reopen_continues_gtids_in_a_new_file() {
    let (dir, log) = fresh();
    log.commit(log.new_cache(), 1).unwrap();
    log.close().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    assert!(!log.recovery_report().crashed());
    let info = log.commit(log.new_cache(), 2).unwrap();
    assert_eq!(info.gtid.seq_no, 2);
    assert_eq!(info.file, "surge-bin.000002");
    drop(log);
    verify_all(dir.path());
}

#[test]
fn group_commit_and_rotation_steps_happen_in_a_durable_order() {
    surge_binlog::__iotrace::start();
    let trace = |dir: &std::path::Path| surge_binlog::__iotrace::steps_under(dir);
    for (policy, expect) in [
        (
            SyncPolicy::EveryGroup,
            vec!["append surge-bin.000001", "fdatasync surge-bin.000001"],
        ),
        (SyncPolicy::Never, vec!["append surge-bin.000001"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = Binlog::open(test_config(dir.path()).with_sync(policy)).unwrap();
        let n = trace(dir.path()).len();
        let mut c = log.new_cache();
        c.put(b"k", b"v").unwrap();
        log.commit(c, 1).unwrap();
        assert_eq!(trace(dir.path())[n..], expect, "{policy:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let n = trace(dir.path()).len();
    log.rotate().unwrap();
    let expect = [
        "append surge-bin.000001",       // Rotate event
        "fdatasync surge-bin.000001",    // durable before anything says the file is done
        "create+fsync surge-bin.000002", // new file with its header, durable
        "fsync-dir .",                   // its name durable
        "append surge-bin.index",        // then listed
        "fdatasync surge-bin.index",
        "clear-in-use surge-bin.000001", // only then the old one is marked closed
    ];
    assert_eq!(trace(dir.path())[n..], expect);
}

#[test]
fn a_cache_of_another_log_is_refused() {
    let (_d1, a) = fresh();
    let (_d2, b) = fresh();
    let mut c = a.new_cache();
    c.put(b"k", b"v").unwrap();
    assert!(matches!(b.commit(c, 1), Err(Error::Invalid { .. })));
    assert_eq!(b.stats().commits, 0);
}

#[test]
fn a_failed_spill_loses_no_buffered_event() {
    // The spill file cannot be created (the cache directory is replaced by a file): the
    // put that needed it fails, and the events buffered before it must all still be there
    // once spilling works again.
    let (dir, log) = fresh();
    let cache_dir = dir.path().join(CACHE_DIR_NAME);
    let mut c = log.new_cache();
    c.put(b"first", b"1").unwrap();
    c.put(b"second", b"2").unwrap();
    let before = c.len();
    std::fs::remove_dir(&cache_dir).unwrap();
    std::fs::write(&cache_dir, b"not a directory").unwrap();
    assert!(c.put(b"big", &[5u8; 8000]).is_err());
    assert_eq!(c.len(), before, "the failed put left the cache as it was");
    std::fs::remove_file(&cache_dir).unwrap();
    std::fs::create_dir(&cache_dir).unwrap();
    c.put(b"big", &[5u8; 8000]).unwrap();
    assert!(c.is_spilled());
    log.commit(c, 1).unwrap();
    let keys = first_row_keys(dir.path());
    assert_eq!(
        keys,
        vec![b"first".to_vec(), b"second".to_vec(), b"big".to_vec()]
    );
    drop(log);
    verify_all(dir.path());
}

#[test]
fn a_failed_fsync_fails_its_whole_group_and_every_later_commit() {
    let (dir, log) = fresh();
    let log = Arc::new(log);
    log.commit(log.new_cache(), 1).unwrap();
    log.__fail_next_fsync_for_tests();
    let threads: Vec<_> = (0..6u64)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                (0..10u64)
                    .map(|i| {
                        let mut c = log.new_cache();
                        c.put(&(t * 100 + i).to_le_bytes(), b"v").unwrap();
                        log.commit(c, 100 + t * 100 + i)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<_> = threads
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    // Only the first commit succeeded: every commit of the failed group, and every one
    // after it, reports an error (none is counted as committed).
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(Error::Poisoned { .. })))
    );
    assert_eq!(log.stats().commits, 1);
    // A large cache (rename path) fails too.
    let mut big = log.new_cache();
    for i in 0..20u32 {
        big.put(&i.to_le_bytes(), &[1u8; 64 << 10]).unwrap();
    }
    assert!(matches!(log.commit(big, 9), Err(Error::Poisoned { .. })));
    let log = Arc::into_inner(log).unwrap();
    assert!(log.close().is_err(), "closing a stopped log reports it");
    let log = Binlog::open(test_config(dir.path())).unwrap();
    assert!(log.recovery_report().crashed());
    let info = log.commit(log.new_cache(), 2).unwrap();
    assert_eq!(
        info.gtid.seq_no,
        2 + log.recovery_report().complete.len() as u64 - 1
    );
    drop(log);
    verify_all(dir.path());
}

#[test]
fn purge_to_the_current_file_keeps_it_and_the_gtid_state() {
    let (dir, log) = fresh();
    for i in 0..3 {
        log.commit(log.new_cache(), i).unwrap();
        log.rotate().unwrap();
    }
    let current = log.current_position().file;
    let gone = log.purge_to(&current).unwrap();
    assert_eq!(gone.len(), 3);
    assert_eq!(log.files(), vec![current.clone()]);
    let info = log.commit(log.new_cache(), 10).unwrap();
    assert_eq!(
        (info.gtid.seq_no, info.file.as_str()),
        (4, current.as_str())
    );
    log.close().unwrap();
    // Reopened, the GTIDs continue from the only file's Gtid_list and events.
    let log = Binlog::open(test_config(dir.path())).unwrap();
    assert_eq!(log.commit(log.new_cache(), 11).unwrap().gtid.seq_no, 5);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn a_panicking_leader_fails_its_followers_instead_of_leaving_them_waiting() {
    let (_dir, log) = fresh();
    let log = Arc::new(log);
    log.__panic_in_next_group_for_tests();
    let (tx, rx) = std::sync::mpsc::channel();
    for t in 0..8u64 {
        let (log, tx) = (Arc::clone(&log), tx.clone());
        std::thread::spawn(move || {
            let mut outcomes = Vec::new();
            for i in 0..200u64 {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    log.commit(log.new_cache(), t * 1000 + i)
                }));
                let stop = !matches!(r, Ok(Ok(_)));
                outcomes.push(r.map(|r| r.is_ok()));
                if stop {
                    break;
                }
            }
            tx.send(outcomes).unwrap();
        });
    }
    drop(tx);
    let mut panics = 0;
    for _ in 0..8 {
        // Without the guard, a follower of the panicking leader waits forever.
        let outcomes = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a committer is still waiting for its group");
        panics += outcomes.iter().filter(|o| o.is_err()).count();
    }
    assert_eq!(
        panics, 1,
        "exactly one leader panicked (a group of two formed)"
    );
    assert!(matches!(
        log.commit(log.new_cache(), 99_999),
        Err(Error::Poisoned { .. })
    ));
}
