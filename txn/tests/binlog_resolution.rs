//! Percolator stays non-blocking with a binlog: a coordinator that stops after prewrite
//! (simulated in process) holds up nobody once its locks' TTL has run out, its binlog takes
//! no more commits, and the coordinator reopened on the same directory settles the
//! transaction (rolled back by the other client: not logged). And the fail-stop rule: a
//! committed transaction whose group could not be made durable stops the binlog until the
//! coordinator restarts and logs it.

mod binlog_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use binlog_support::{binlog_config, check_binlog, cluster, key, store_table};
use surge_txn::{ClientConfig, TxnClient, TxnError, TxnMode};

#[test]
fn a_dead_coordinators_locks_are_resolved_by_others_after_their_ttl() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let binlog_dir = dir.path().join("binlog");
    let config = binlog_config(&binlog_dir).with_lock_ttl_ms(1500);
    let coord = TxnClient::open(c.router(), config.clone()).expect("coordinator");
    let (a, b) = (key(0, "a"), key(3, "b"));
    let mut t0 = coord.begin(TxnMode::Pessimistic).expect("begin");
    t0.put(&a, b"0").expect("put");
    let t0_ts = t0.start_ts();
    t0.commit().expect("commit");

    let mut t1 = coord.begin(TxnMode::Pessimistic).expect("begin");
    t1.put(&a, b"1").expect("put");
    t1.put(&b, b"1").expect("put");
    let t1_ts = t1.start_ts();
    t1.__abandon_after_prewrite().expect("prewrite");
    // The coordinator is dead as far as the binlog goes: nothing more commits through it.
    let mut t2 = coord.begin(TxnMode::Optimistic).expect("begin");
    t2.put(&key(1, "c"), b"2").expect("put");
    assert!(matches!(t2.commit(), Err(TxnError::Binlog { .. })));

    // Another client writes both keys: it waits for t1's TTL, then rolls t1 back.
    let other = TxnClient::new(c.router(), ClientConfig::default());
    let started = Instant::now();
    let mut t3 = other.begin(TxnMode::Pessimistic).expect("begin");
    for k in [&a, &b] {
        loop {
            match t3.get_for_update(k) {
                Ok(_) => break,
                Err(TxnError::LockWaitTimeout { .. }) => {
                    assert!(started.elapsed() < Duration::from_secs(10));
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    t3.rollback();
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(6), "waited {waited:?}");
    assert_eq!(other.get(&a).expect("get"), Some(b"0".to_vec()));

    // The coordinator comes back on the same directory: t1 was rolled back, not logged.
    // (The client is the last handle on the binlog, its transactions having been taken
    // by commit and rollback: dropping it frees the directory.)
    drop(coord);
    let coord = TxnClient::open(c.router(), config).expect("reopen");
    let report = coord.binlog_recovery().expect("binlog");
    assert_eq!(report.rolled_back, vec![t1_ts]);
    let mut t4 = coord.begin(TxnMode::Pessimistic).expect("begin");
    t4.put(&b, b"4").expect("put");
    let t4_ts = t4.start_ts();
    t4.commit().expect("commit");
    let xids = check_binlog(
        &binlog_dir,
        &BTreeSet::from([t0_ts, t4_ts]),
        &store_table(&coord),
    );
    assert_eq!(xids, vec![t0_ts, t4_ts]);
}

/// A committed transaction whose binlog group cannot be made durable (the binlog's fsync
/// fails) is not acknowledged: `Undetermined`, the binlog stops (a later commit fails
/// rather than overtake it), and the reopened coordinator logs it exactly once.
#[test]
fn a_failed_binlog_write_stops_the_binlog_and_recovery_logs_the_commit_once() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let binlog_dir = dir.path().join("binlog");
    let coord = TxnClient::open(c.router(), binlog_config(&binlog_dir)).expect("coordinator");
    let (a, b) = (key(0, "a"), key(2, "b"));
    let mut t1 = coord.begin(TxnMode::Pessimistic).expect("begin");
    t1.put(&a, b"1").expect("put");
    t1.put(&b, b"1").expect("put");
    let t1_ts = t1.start_ts();
    coord
        .binlog()
        .expect("binlog")
        .__fail_next_fsync_for_tests();
    assert!(matches!(t1.commit(), Err(TxnError::Undetermined { .. })));
    // Committed in the store all the same.
    assert_eq!(coord.get(&b).expect("get"), Some(b"1".to_vec()));
    let mut t2 = coord.begin(TxnMode::Pessimistic).expect("begin");
    t2.put(&a, b"2").expect("put");
    assert!(matches!(t2.commit(), Err(TxnError::Binlog { .. })));

    drop(coord);
    let coord = TxnClient::open(c.router(), binlog_config(&binlog_dir)).expect("reopen");
    let report = coord.binlog_recovery().expect("binlog");
    assert_eq!(
        [report.already_logged.clone(), report.logged_now.clone()].concat(),
        vec![t1_ts],
        "{report:?}"
    );
    let mut t3 = coord.begin(TxnMode::Pessimistic).expect("begin");
    t3.put(&a, b"3").expect("put");
    let t3_ts = t3.start_ts();
    t3.commit().expect("commit");
    let xids = check_binlog(
        &binlog_dir,
        &BTreeSet::from([t1_ts, t3_ts]),
        &store_table(&coord),
    );
    assert_eq!(xids, vec![t1_ts, t3_ts]);
}
