//! Commit by rename: a large spilled cache becomes the next binlog file.

use surge_binlog::{Binlog, CommitMethod, EventBody, TxnCache, read_file_events};

use crate::common::{all_events, groups, test_config, verify_all, verify_with_mariadb};

/// Fills a cache with about `mib` MiB of kv rows.
fn big_cache(c: &mut TxnCache, mib: usize, tag: u8) {
    let v = vec![tag; 64 << 10];
    for i in 0..(mib * 16) as u32 {
        c.put(&i.to_be_bytes(), &v).unwrap();
    }
}

#[test]
fn large_spilled_cache_is_renamed_and_gtid_ends_at_4096() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    log.commit(log.new_cache(), 1).unwrap();
    let mut c = log.new_cache();
    big_cache(&mut c, 2, 0xab);
    let spill = c.spill_path().unwrap().to_path_buf();
    let size = c.len();
    let info = log.commit(c, 2).unwrap();
    assert_eq!(info.method, CommitMethod::Renamed);
    assert_eq!(info.file, "surge-bin.000002");
    assert_eq!(info.end_position, 4096 + size + 31);
    assert!(!spill.exists());
    let after = log.commit(log.new_cache(), 3).unwrap();
    assert_eq!(
        (after.method, after.file.as_str()),
        (CommitMethod::Copied, "surge-bin.000002")
    );
    let s = log.stats();
    assert_eq!((s.renames, s.commits, s.rotations), (1, 3, 1));

    let path = dir.path().join("surge-bin.000002");
    let events = read_file_events(&path).unwrap();
    let (gtid_off, gtid) = &events[3];
    assert!(matches!(gtid.body, EventBody::Gtid(_)));
    assert_eq!(gtid_off + u64::from(gtid.header.event_size), 4096);
    assert_eq!(gtid.header.log_pos, 4096);
    // The old file ends with a Rotate naming the renamed one and is no longer in use.
    let old = read_file_events(dir.path().join("surge-bin.000001")).unwrap();
    let EventBody::Rotate(r) = &old.last().unwrap().1.body else {
        panic!("no Rotate")
    };
    assert_eq!(r.next_file, "surge-bin.000002");
    assert_eq!(old[0].1.header.flags & surge_binlog::FLAG_BINLOG_IN_USE, 0);
    let (complete, incomplete) = groups(&all_events(dir.path()).unwrap());
    assert_eq!(complete, vec![(1, 1), (2, 2), (3, 3)]);
    assert!(incomplete.is_empty());
    drop(log);
    if let Some(text) = verify_with_mariadb(&path) {
        assert!(
            text.contains("end_log_pos 4096"),
            "GTID printed ending at 4096"
        );
        assert!(text.contains("GTID 0-1-2 trans"));
        assert!(text.contains("Xid = 2"));
    }
}

#[test]
fn below_threshold_or_disabled_copies() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path()).with_large_commit_threshold(4 << 20)).unwrap();
    let mut c = log.new_cache();
    big_cache(&mut c, 2, 1);
    assert_eq!(log.commit(c, 1).unwrap().method, CommitMethod::Copied);
    drop(log);
    let d2 = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(d2.path()).with_commit_by_rename(false)).unwrap();
    let mut c = log.new_cache();
    big_cache(&mut c, 2, 1);
    let info = log.commit(c, 1).unwrap();
    assert_eq!(info.method, CommitMethod::Copied);
    assert_eq!(log.stats().renames, 0);
    assert_eq!(log.files().len(), 1);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn too_small_reservation_falls_back_to_copy_then_grows() {
    // 300 domains make the Gtid_list of the next file 4.8 KB: a cache that spilled with the
    // 4096-byte reservation cannot hold that header and is copied instead; caches that
    // spill after the next file started reserve 8192 and are renamed, GTID ending at 8192.
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let mut stale = log.new_cache();
    big_cache(&mut stale, 2, 2);
    assert_eq!(stale.reserved_bytes(), 4096);
    for d in 0..300u32 {
        let mut c = log.new_cache();
        c.set_domain_id(d);
        log.commit(c, u64::from(d)).unwrap();
    }
    let info = log.commit(stale, 1000).unwrap();
    assert_eq!(info.method, CommitMethod::Copied);
    assert_eq!(log.stats().rename_fallbacks, 1);
    log.rotate().unwrap();
    let mut fresh = log.new_cache();
    big_cache(&mut fresh, 2, 3);
    assert_eq!(fresh.reserved_bytes(), 8192);
    let info = log.commit(fresh, 1001).unwrap();
    assert_eq!(info.method, CommitMethod::Renamed);
    let events = read_file_events(dir.path().join(&info.file)).unwrap();
    let (off, g) = &events[3];
    assert_eq!(off + u64::from(g.header.event_size), 8192);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn renamed_then_rolled_back_part_is_absent() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let mut c = log.new_cache();
    big_cache(&mut c, 2, 4);
    let sp = c.savepoint();
    big_cache(&mut c, 1, 5);
    c.rollback_to(sp).unwrap();
    c.put(b"last", b"row").unwrap();
    let info = log.commit(c, 77).unwrap();
    assert_eq!(info.method, CommitMethod::Renamed);
    let events = read_file_events(dir.path().join(&info.file)).unwrap();
    let values: Vec<u8> = events
        .iter()
        .filter_map(|(_, e)| match &e.body {
            EventBody::Rows(r) => r.kv_rows().unwrap()[0].value.as_ref().map(|v| v[0]),
            _ => None,
        })
        .collect();
    assert!(values.iter().all(|&v| v == 4 || v == b'r'));
    assert_eq!(values.last(), Some(&b'r'));
    assert_eq!(events.last().unwrap().1.body, EventBody::Xid(77));
    drop(log);
    verify_all(dir.path());
}

#[test]
fn rename_steps_happen_in_a_durable_order() {
    // The trace records writes, fsyncs, renames and the log lock of this test's directory.
    surge_binlog::__iotrace::start();
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    log.commit(log.new_cache(), 1).unwrap();
    let mut c = log.new_cache();
    big_cache(&mut c, 2, 6);
    let ml = c
        .spill_path()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let before = surge_binlog::__iotrace::steps_under(dir.path()).len();
    let info = log.commit(c, 2).unwrap();
    let steps: Vec<String> = surge_binlog::__iotrace::steps_under(dir.path())[before..].to_vec();
    let new = &info.file;
    let expect: Vec<String> = [
        format!("fsync #binlog_cache_files/{ml}"), // the big fsync, before the lock
        "lock #log".to_string(),
        "append surge-bin.000001".to_string(), // Rotate into the old file
        format!("write-header #binlog_cache_files/{ml}"),
        format!("rename-to {new}"),
        format!("fdatasync {new}"),
        "fsync-dir .".to_string(),
        "append surge-bin.index".to_string(),
        format!("append {new}"), // the Xid
        "unlock #log".to_string(),
        "fdatasync surge-bin.index".to_string(),
        format!("fdatasync {new}"), // the Xid is durable before commit returns
        "fdatasync surge-bin.000001".to_string(), // the old file's Rotate, then
        "clear-in-use surge-bin.000001".to_string(), // it is marked closed
    ]
    .into_iter()
    .collect();
    assert_eq!(steps, expect);
    drop(log);
    verify_all(dir.path());
}
