//! Recovery at open, in one process: the log is "crashed" with a test hook that leaves
//! the in-use flag set, then files are damaged the way a crash leaves them.

use std::io::Write;

use surge_binlog::{Binlog, CACHE_DIR_NAME, Error, FLAG_BINLOG_IN_USE, read_file_events};

use crate::common::{all_events, groups, test_config, verify_all, verify_with_mariadb};

fn crashed_log_with(n: u64) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    for i in 0..n {
        let mut c = log.new_cache();
        c.put(&i.to_le_bytes(), b"value").unwrap();
        log.commit(c, i).unwrap();
    }
    let file = log.current_position().file;
    log.__crash_for_tests();
    (dir, file)
}

#[test]
fn clean_close_reports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    Binlog::open(test_config(dir.path()))
        .unwrap()
        .close()
        .unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    assert_eq!(
        *log.recovery_report(),
        surge_binlog::RecoveryReport::default()
    );
}

#[test]
fn in_use_file_is_scanned_and_flag_cleared() {
    let (dir, file) = crashed_log_with(3);
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let r = log.recovery_report().clone();
    assert_eq!(r.in_use_files, vec![file.clone()]);
    assert_eq!(
        r.complete.iter().map(|t| t.xid).collect::<Vec<_>>(),
        vec![Some(0), Some(1), Some(2)]
    );
    assert!(r.incomplete.is_empty() && r.truncated.is_empty());
    let ev = read_file_events(dir.path().join(&file)).unwrap();
    assert_eq!(ev[0].1.header.flags & FLAG_BINLOG_IN_USE, 0);
    assert_eq!(log.commit(log.new_cache(), 9).unwrap().gtid.seq_no, 4);
    assert_ne!(log.current_position().file, file, "continues in a new file");
    drop(log);
    verify_all(dir.path());
}

#[test]
fn torn_last_event_is_cut_and_its_transaction_reported_incomplete() {
    let (dir, file) = crashed_log_with(3);
    let path = dir.path().join(&file);
    let len = std::fs::metadata(&path).unwrap().len();
    // Cut the last Xid in half: transaction 3 (xid 2) loses its commit.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 15).unwrap();
    drop(f);
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let r = log.recovery_report();
    assert_eq!(r.truncated.len(), 1);
    assert_eq!(r.truncated[0].offset, len - 31);
    assert_eq!(r.complete.len(), 2);
    assert_eq!(r.incomplete.len(), 1);
    assert_eq!(r.incomplete[0].gtid.seq_no, 3);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len - 31);
    drop(log);
    let (complete, incomplete) = groups(&all_events(dir.path()).unwrap());
    assert_eq!(complete, vec![(1, 0), (2, 1)]);
    assert_eq!(incomplete, vec![3]);
    verify_with_mariadb(&path);
}

#[test]
fn garbage_tail_is_cut() {
    let (dir, file) = crashed_log_with(2);
    let path = dir.path().join(&file);
    let len = std::fs::metadata(&path).unwrap().len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(&[0x5a; 40]).unwrap();
    drop(f);
    let log = Binlog::open(test_config(dir.path())).unwrap();
    assert_eq!(log.recovery_report().truncated[0].offset, len);
    assert_eq!(log.recovery_report().complete.len(), 2);
    drop(log);
    verify_all(dir.path());
}

#[test]
fn corruption_in_the_middle_is_refused_with_file_and_offset() {
    let (dir, file) = crashed_log_with(3);
    let path = dir.path().join(&file);
    let events = read_file_events(&path).unwrap();
    let (off, _) = &events[4];
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[*off as usize + 20] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    match Binlog::open(test_config(dir.path())) {
        Err(Error::Corrupt {
            file: f, offset, ..
        }) => {
            assert_eq!((f, offset), (path, *off));
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn leftover_cache_files_are_deleted_and_foreign_ones_reported() {
    let (dir, _) = crashed_log_with(1);
    let cache_dir = dir.path().join(CACHE_DIR_NAME);
    std::fs::write(cache_dir.join("ML_7"), b"partial").unwrap();
    std::fs::write(cache_dir.join("notes.txt"), b"mine").unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let r = log.recovery_report();
    assert_eq!(r.removed_cache_files, vec![cache_dir.join("ML_7")]);
    assert_eq!(r.foreign_cache_files, vec![cache_dir.join("notes.txt")]);
    assert!(!cache_dir.join("ML_7").exists());
    assert!(cache_dir.join("notes.txt").exists());
    drop(log);
    verify_all(dir.path());
}

#[test]
fn unindexed_newer_file_is_adopted_and_headerless_one_deleted() {
    let (dir, file) = crashed_log_with(2);
    // A file renamed into place before the index was updated...
    let next = dir.path().join("surge-bin.000002");
    std::fs::copy(dir.path().join(&file), &next).unwrap();
    // ...and one created without a header.
    std::fs::write(dir.path().join("surge-bin.000003"), b"\xfebin").unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let r = log.recovery_report();
    assert_eq!(r.adopted_files, vec!["surge-bin.000002".to_string()]);
    assert!(
        !dir.path().join("surge-bin.000003").exists()
            || log.files().contains(&"surge-bin.000003".to_string())
    );
    assert_eq!(
        log.files()[..2],
        [
            "surge-bin.000001".to_string(),
            "surge-bin.000002".to_string()
        ]
    );
}

#[test]
fn zero_filled_tail_is_cut() {
    // A power cut can leave a file longer than what was written into it: the tail reads as
    // zeros. With the last Xid torn too, the cut goes back to that Xid.
    for (torn_xid, cut_back) in [(false, 0u64), (true, 31)] {
        let (dir, file) = crashed_log_with(3);
        let path = dir.path().join(&file);
        let len = std::fs::metadata(&path).unwrap().len();
        if torn_xid {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[len as usize - 10..].fill(0);
            std::fs::write(&path, &bytes).unwrap();
        }
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&[0u8; 4096]).unwrap();
        drop(f);
        let log = Binlog::open(test_config(dir.path())).unwrap();
        let r = log.recovery_report();
        assert_eq!(r.truncated.len(), 1, "torn xid: {torn_xid}");
        assert_eq!(r.truncated[0].offset, len - cut_back);
        assert_eq!(r.complete.len(), if torn_xid { 2 } else { 3 });
        assert_eq!(r.incomplete.len(), usize::from(torn_xid));
        drop(log);
        verify_all(dir.path());
    }
}

#[test]
fn unindexed_renamed_file_with_a_damaged_header_is_not_adopted() {
    // A rename reached the disk (some other fsync committed it) but its header page did
    // not, and the index line was lost: nothing in that file was acknowledged (the header
    // is made durable before any commit in it returns), so recovery drops it instead of
    // refusing to open.
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let mut c = log.new_cache();
    c.put(b"small", b"1").unwrap();
    log.commit(c, 1).unwrap();
    let mut big = log.new_cache();
    for i in 0..32u32 {
        big.put(&i.to_le_bytes(), &[9u8; 64 << 10]).unwrap();
    }
    let info = log.commit(big, 2).unwrap();
    assert_eq!(info.method, surge_binlog::CommitMethod::Renamed);
    log.__crash_for_tests();
    let index = dir.path().join("surge-bin.index");
    let text = std::fs::read_to_string(&index).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.ends_with(&info.file))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&index, kept).unwrap();
    let path = dir.path().join(&info.file);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[2048..4096].fill(0); // torn header page: the GTID's padding and CRC lost
    std::fs::write(&path, &bytes).unwrap();

    let log = Binlog::open(test_config(dir.path())).unwrap();
    let r = log.recovery_report().clone();
    assert!(r.adopted_files.is_empty(), "{r:?}");
    assert_eq!(log.files(), vec!["surge-bin.000001", "surge-bin.000002"]);
    let next = log.commit(log.new_cache(), 3).unwrap();
    assert_eq!(next.file, "surge-bin.000002", "the number is reused");
    drop(log);
    let (complete, incomplete) = groups(&all_events(dir.path()).unwrap());
    assert_eq!(complete.iter().map(|c| c.1).collect::<Vec<_>>(), vec![1, 3]);
    assert!(incomplete.is_empty());
    verify_all(dir.path());
}

#[test]
fn torn_index_line_is_dropped_and_its_file_adopted() {
    // The last index line cut short, or followed by zeros (a power cut during its append):
    // recovery reads the complete lines, adopts the file the torn line named, and rewrites
    // the index so that it holds only clean `./name` lines again.
    for tail in [&b""[..], &b"\0\0\0\0"[..]] {
        let dir = tempfile::tempdir().unwrap();
        let log = Binlog::open(test_config(dir.path())).unwrap();
        log.commit(log.new_cache(), 1).unwrap();
        log.rotate().unwrap();
        log.commit(log.new_cache(), 2).unwrap();
        log.__crash_for_tests();
        let index = dir.path().join("surge-bin.index");
        let mut bytes = std::fs::read(&index).unwrap();
        if tail.is_empty() {
            bytes.truncate(bytes.len() - 5); // "./surge-bin.0000" without its end
        } else {
            bytes.extend_from_slice(tail);
        }
        std::fs::write(&index, &bytes).unwrap();
        let log = Binlog::open(test_config(dir.path())).unwrap();
        let r = log.recovery_report().clone();
        if tail.is_empty() {
            assert_eq!(r.adopted_files, vec!["surge-bin.000002".to_string()]);
        }
        assert_eq!(
            log.files(),
            vec!["surge-bin.000001", "surge-bin.000002", "surge-bin.000003"]
        );
        drop(log);
        let text = std::fs::read_to_string(&index).unwrap();
        assert_eq!(
            text, "./surge-bin.000001\n./surge-bin.000002\n./surge-bin.000003\n",
            "tail {tail:?}"
        );
        let (complete, _) = groups(&all_events(dir.path()).unwrap());
        assert_eq!(complete, vec![(1, 1), (2, 2)]);
        verify_all(dir.path());
    }
}
