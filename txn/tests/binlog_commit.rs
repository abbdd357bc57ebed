//! The coordinator's binlog at commit, in one process: every acknowledged commit is logged
//! exactly once, nothing that failed or rolled back is, conflicting transactions replay in
//! STRICT order to the store's table, and a large transaction commits by rename.

mod binlog_support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use binlog_support::{check_binlog, cluster, coordinator, key, replay, store_table};
use surge_txn::{TxnError, TxnMode};

#[test]
fn concurrent_conflicting_transactions_are_logged_once_in_a_strict_replayable_order() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(&c, &dir.path().join("binlog"));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let failed = Arc::new(Mutex::new(0usize));
    // 8 hot keys over all four regions; every transaction writes two or three of them, so
    // most pairs conflict. Inserts, overwrites and deletes all happen.
    let keys: Vec<Vec<u8>> = (0..8u8).map(|i| key(i % 4, &format!("hot{i}"))).collect();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let client = client.clone();
            let keys = keys.clone();
            let acked = Arc::clone(&acked);
            let failed = Arc::clone(&failed);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t + 1);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for i in 0..25u64 {
                    let mode = if (i + t) % 2 == 0 {
                        TxnMode::Pessimistic
                    } else {
                        TxnMode::Optimistic
                    };
                    let mut txn = client.begin(mode).expect("begin");
                    let n = 2 + (next() % 2) as usize;
                    let mut ok = true;
                    for _ in 0..n {
                        let k = &keys[(next() % keys.len() as u64) as usize];
                        let r = if next() % 4 == 0 {
                            txn.delete(k)
                        } else {
                            txn.put(k, format!("t{t}-i{i}-{}", next() % 1000).as_bytes())
                        };
                        if r.is_err() {
                            ok = false;
                            break;
                        }
                    }
                    let start_ts = txn.start_ts();
                    if !ok || next() % 10 == 0 {
                        txn.rollback();
                        *failed.lock().expect("lock") += 1;
                        continue;
                    }
                    match txn.commit() {
                        Ok(_) => {
                            acked.lock().expect("lock").insert(start_ts);
                        }
                        Err(e) => {
                            assert!(
                                !matches!(
                                    e,
                                    TxnError::Undetermined { .. } | TxnError::Binlog { .. }
                                ),
                                "{e}"
                            );
                            *failed.lock().expect("lock") += 1;
                        }
                    }
                }
            });
        }
    });
    let acked = acked.lock().expect("lock").clone();
    let failed = *failed.lock().expect("lock");
    assert!(acked.len() >= 40, "only {} commits", acked.len());
    assert!(failed > 0, "no transaction failed or rolled back");
    let store = store_table(&client);
    let xids = check_binlog(&dir.path().join("binlog"), &acked, &store);
    // Every group in the log is an acknowledged commit (none failed in doubt here).
    assert_eq!(xids.iter().copied().collect::<BTreeSet<_>>(), acked);
}

#[test]
fn a_failed_or_rolled_back_transaction_is_not_logged() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(&c, &dir.path().join("binlog"));
    let k = key(1, "k");
    let mut t0 = client.begin(TxnMode::Optimistic).expect("begin");
    t0.put(&k, b"0").expect("put");
    let t0_ts = t0.start_ts();
    t0.commit().expect("commit");
    // t1 and t2 both overwrite k from the same snapshot: t2 loses at prewrite.
    let mut t1 = client.begin(TxnMode::Optimistic).expect("begin");
    let mut t2 = client.begin(TxnMode::Optimistic).expect("begin");
    t1.put(&k, b"1").expect("put");
    t2.put(&k, b"2").expect("put");
    t2.put(&key(2, "other"), b"2").expect("put");
    let t1_ts = t1.start_ts();
    t1.commit().expect("commit t1");
    assert!(matches!(t2.commit(), Err(TxnError::WriteConflict { .. })));
    // A rolled-back one.
    let mut t3 = client.begin(TxnMode::Pessimistic).expect("begin");
    t3.delete(&k).expect("delete");
    t3.rollback();
    let store = store_table(&client);
    let acked = BTreeSet::from([t0_ts, t1_ts]);
    let xids = check_binlog(&dir.path().join("binlog"), &acked, &store);
    assert_eq!(xids, vec![t0_ts, t1_ts]);
}

#[test]
fn a_large_transaction_commits_by_rename_and_replays() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(&c, &dir.path().join("binlog"));
    let mut small = client.begin(TxnMode::Pessimistic).expect("begin");
    small.put(&key(0, "big-000"), b"before").expect("put");
    let small_ts = small.start_ts();
    small.commit().expect("commit");
    // 48 values of 48 KiB over all regions: the cache spills past the 1 MiB threshold.
    let mut big = client.begin(TxnMode::Optimistic).expect("begin");
    let value = vec![b'v'; 48 << 10];
    for i in 0..48u8 {
        big.put(&key(i % 4, &format!("big-{i:03}")), &value)
            .expect("put");
    }
    let big_ts = big.start_ts();
    big.commit().expect("commit");
    let stats = client.binlog().expect("binlog").stats();
    assert_eq!(stats.renames, 1, "{stats:?}");
    let store = store_table(&client);
    assert_eq!(store.len(), 48);
    check_binlog(
        &dir.path().join("binlog"),
        &BTreeSet::from([small_ts, big_ts]),
        &store,
    );
    // The first key was an update (it existed): a put would not replay.
    let (_, xids) = replay(&dir.path().join("binlog")).expect("replay");
    assert_eq!(xids, vec![small_ts, big_ts]);
}

/// `purge_binlog_before` removes the coordinator's files written before the time, all but
/// the current one, and none written after the start (less a minute) of a transaction
/// whose prepare is not settled yet (here one paused between its prewrite and its commit:
/// had its coordinator died there, recovery would read from where its prepare saw the log).
#[test]
fn old_binlog_files_are_purged_but_not_those_an_open_prepare_needs() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = surge_txn::TxnClient::open(
        c.router(),
        surge_txn::ClientConfig::default().with_binlog(Some(
            surge_txn::BinlogOptions::new(dir.path().join("binlog")).with_max_binlog_size(4096),
        )),
    )
    .expect("coordinator");
    for i in 0..12 {
        let mut t = client.begin(TxnMode::Optimistic).expect("begin");
        t.put(&key(1, &format!("a{i}")), &[7u8; 600]).expect("put");
        t.commit().expect("commit");
    }
    let files = client.binlog().expect("binlog").files();
    assert!(files.len() >= 3, "rotated: {files:?}");
    let an_hour = Duration::from_secs(3600);
    let later = SystemTime::now() + an_hour;
    assert!(
        client
            .purge_binlog_before(SystemTime::now() - an_hour)
            .expect("purge")
            .is_empty(),
        "nothing is an hour old"
    );

    // Every file is older than `later`, but a prepare is open: none goes.
    let during = Arc::new(Mutex::new(None));
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(2, "paused"), b"x").expect("put");
    let (purger, seen) = (client.clone(), Arc::clone(&during));
    t.__commit_pausing_after_prewrite(move || {
        *seen.lock().unwrap() = Some(purger.purge_binlog_before(later));
    })
    .expect("commit");
    let purged = during.lock().unwrap().take().expect("the pause ran");
    assert_eq!(purged.expect("purge"), Vec::<String>::new());

    // Settled: all but the current file go.
    let files = client.binlog().expect("binlog").files();
    let gone = client.purge_binlog_before(later).expect("purge");
    assert_eq!(gone, files[..files.len() - 1].to_vec());
    assert_eq!(client.binlog().expect("binlog").files().len(), 1);
    // What stays reads back, and the coordinator goes on logging.
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(3, "after"), b"y").expect("put");
    t.commit().expect("commit");
    let log = client.binlog().expect("binlog");
    assert!(log.reader().expect("reader").transactions().count() >= 1);
}
