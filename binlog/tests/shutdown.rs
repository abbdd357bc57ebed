//! Closing a shared log, and what `commit` accepts: duplicate xids, empty caches.

use std::sync::Arc;

use surge_binlog::{Binlog, Error, EventBody};

use crate::common::{fresh, test_config, verify_all};

#[test]
fn shutdown_closes_a_shared_log_and_later_commits_fail_clearly() {
    let (dir, log) = fresh();
    let log = Arc::new(log);
    let other = Arc::clone(&log);
    log.commit(log.new_cache(), 1).unwrap();
    let file = dir.path().join(log.current_position().file);
    other.shutdown().unwrap();
    log.shutdown().unwrap(); // idempotent
    let err = log.commit(log.new_cache(), 2).unwrap_err();
    assert!(matches!(err, Error::Closed), "{err:?}");
    assert!(err.to_string().contains("shut down"), "{err}");
    assert!(matches!(log.rotate(), Err(Error::Closed)));
    // The in-use flag is cleared: the file reads as cleanly closed.
    let fd = surge_binlog::read_file_events(&file).unwrap().remove(0).1;
    assert_eq!(fd.header.flags & surge_binlog::FLAG_BINLOG_IN_USE, 0);
    // Reading still works.
    assert_eq!(log.reader().unwrap().transactions().count(), 1);
    drop(other);
    drop(log);
    // The directory lock is free again, and nothing was left to recover.
    let again = Binlog::open(test_config(dir.path())).unwrap();
    assert!(!again.recovery_report().crashed());
    drop(again);
    verify_all(dir.path());
}

#[test]
fn a_failed_shutdown_is_reported_again_on_every_later_call() {
    let (_dir, log) = fresh();
    log.__fail_next_fsync_for_tests();
    assert!(matches!(log.shutdown(), Err(Error::Io { .. })));
    assert!(matches!(log.shutdown(), Err(Error::Poisoned { .. })));
    assert!(matches!(
        log.commit(log.new_cache(), 1),
        Err(Error::Poisoned { .. })
    ));
}

#[test]
fn a_duplicate_xid_and_an_empty_cache_commit_as_documented() {
    let (dir, log) = fresh();
    let a = log.commit(log.new_cache(), 5).unwrap();
    let mut c = log.new_cache();
    c.put(b"k", b"v").unwrap();
    let b = log.commit(c, 5).unwrap();
    assert_ne!(a.gtid, b.gtid);
    let txns: Vec<_> = log
        .reader()
        .unwrap()
        .transactions()
        .map(|t| t.unwrap())
        .collect();
    assert_eq!(txns.len(), 2);
    assert_eq!((txns[0].xid, txns[1].xid), (Some(5), Some(5)));
    // The empty cache is a GTID and an Xid with nothing between.
    assert!(txns[0].events.is_empty());
    assert!(matches!(txns[1].events[0].1.body, EventBody::TableMap(_)));
    // Recovery lists both, acknowledged as they were.
    log.__crash_for_tests();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let complete: Vec<_> = log
        .recovery_report()
        .complete
        .iter()
        .map(|t| (t.gtid, t.xid))
        .collect();
    assert_eq!(complete, vec![(a.gtid, Some(5)), (b.gtid, Some(5))]);
    drop(log);
    verify_all(dir.path());
}
