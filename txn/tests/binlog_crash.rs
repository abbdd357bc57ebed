//! A coordinator killed (SIGKILL) at each step of commit and restarted keeps the binlog's
//! properties: every acknowledged commit logged exactly once, nothing that did not commit
//! logged, the log replaying to the store's table in STRICT order. The transaction in
//! flight at the kill is settled from its primary's status by the restarted coordinator,
//! and other clients resolve its locks meanwhile without waiting for it.
//!
//! The child is this test binary re-run on `child_process` with the crash point in
//! [`TXN_CRASH_ENV`]: it runs the whole store (a `LocalCluster` with durable WALs) and the
//! coordinator, commits transactions printing `inflight <i> <start_ts>` and `acked
//! <start_ts>`, and stops at the point on its fourth commit (printing `reached`). The parent
//! kills it, restarts the cluster from the same directory and then the coordinator.

mod binlog_support;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use binlog_support::{check_binlog, cluster, coordinator, key, replay, store_table};
use surge_testkit::CrashChild;
use surge_txn::{
    BinlogRecoveryReport, ClientConfig, TXN_CRASH_ENV, TXN_CRASH_SKIP_ENV, TxnClient, TxnError,
    TxnMode, txn_crash_points,
};

const DIR_ENV: &str = "SURGE_TXN_BINLOG_CRASH_DIR";

/// The two keys transaction `i` writes, in two regions (a two-phase commit).
fn keys_of(i: u64) -> [Vec<u8>; 2] {
    let r = (i % 4) as u8;
    [
        key(r, &format!("a{}", i % 3)),
        key((r + 1) % 4, &format!("b{}", i % 3)),
    ]
}

/// Transaction `i` of `client`: inserts, overwrites or deletes its keys depending on what
/// is there, so the log has all three kinds of row events.
fn write_txn(client: &TxnClient, i: u64) -> surge_txn::Transaction {
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    for k in keys_of(i) {
        let present = t.get_for_update(&k).expect("get_for_update").is_some();
        if present && i.is_multiple_of(2) {
            t.delete(&k).expect("delete");
        } else {
            t.put(&k, format!("v{i}").as_bytes()).expect("put");
        }
    }
    t
}

#[test]
fn child_process() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let c = cluster(&dir.join("cluster"));
    let client = coordinator(&c, &dir.join("binlog"));
    for i in 0.. {
        let t = write_txn(&client, i);
        println!("inflight {i} {}", t.start_ts());
        let start_ts = t.start_ts();
        t.commit().expect("commit");
        println!("acked {start_ts}");
    }
}

/// Runs the child until it reaches `point` on its fourth commit; returns the acknowledged
/// start timestamps and the transaction in flight (its number and start_ts).
fn run_child(dir: &Path, point: &str) -> (BTreeSet<u64>, (u64, u64)) {
    let mut child = CrashChild::spawn(
        "child_process",
        [
            (DIR_ENV, dir.as_os_str()),
            (TXN_CRASH_ENV, OsStr::new(point)),
            (TXN_CRASH_SKIP_ENV, OsStr::new("3")),
        ],
    );
    let mut acked = BTreeSet::new();
    let mut inflight = None;
    child.wait_reached(|line| {
        if let Some(rest) = line.strip_prefix("inflight ") {
            let mut it = rest
                .split_whitespace()
                .map(|x| x.parse::<u64>().expect("number"));
            inflight = Some((it.next().expect("i"), it.next().expect("ts")));
        } else if let Some(ts) = line.strip_prefix("acked ") {
            acked.insert(ts.trim().parse::<u64>().expect("start_ts"));
        }
    });
    child.kill();
    (acked, inflight.expect("a transaction in flight"))
}

/// What recovery must report for the transaction in flight at `point`.
fn expected(point: &str, ts: u64) -> BinlogRecoveryReport {
    let mut r = BinlogRecoveryReport::default();
    match point {
        txn_crash_points::AFTER_PREPARE | txn_crash_points::AFTER_PREWRITE => {
            r.rolled_back.push(ts)
        }
        txn_crash_points::AFTER_PRIMARY_COMMIT => r.logged_now.push(ts),
        txn_crash_points::AFTER_BINLOG => r.already_logged.push(ts),
        _ => {} // before the ack: settled already
    }
    r
}

fn crash_at(point: &str) {
    let dir = tempfile::tempdir().expect("dir");
    let (mut acked, (i, ts)) = run_child(dir.path(), point);
    assert_eq!(acked.len(), 3, "three commits before the crash point");
    let c = cluster(&dir.path().join("cluster"));

    // Another client (no binlog) takes the in-flight transaction's keys before the
    // coordinator comes back: its locks are resolved (rolled back after their TTL, or
    // committed from a committed primary) without the dead coordinator.
    // It locks them (a lock must settle the holder; a read could just read past it),
    // then rolls back, writing nothing.
    let other = TxnClient::new(c.router(), ClientConfig::default());
    let started = Instant::now();
    let mut t = other.begin(TxnMode::Pessimistic).expect("begin");
    for k in keys_of(i) {
        // A wait that times out while the dead holder's TTL runs is retried, as a
        // statement would be; once the TTL is out the holder is rolled back.
        loop {
            match t.get_for_update(&k) {
                Ok(_) => break,
                Err(e @ TxnError::LockWaitTimeout { .. }) => {
                    assert!(started.elapsed() < Duration::from_secs(10), "{e}");
                }
                Err(e) => panic!("another client could not lock {k:?}: {e}"),
            }
        }
    }
    t.rollback();
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(10),
        "resolution took {waited:?}: blocked on the dead coordinator"
    );

    let client = coordinator(&c, &dir.path().join("binlog"));
    assert_eq!(
        client.binlog_recovery().expect("binlog"),
        expected(point, ts),
        "recovery after a crash at {point}"
    );
    let committed = !matches!(
        point,
        txn_crash_points::AFTER_PREPARE | txn_crash_points::AFTER_PREWRITE
    );
    // The restarted coordinator goes on writing the same keys.
    for j in i + 1..i + 4 {
        let t = write_txn(&client, j);
        let start_ts = t.start_ts();
        t.commit().expect("commit after restart");
        acked.insert(start_ts);
    }
    let store = store_table(&client);
    let xids = check_binlog(&dir.path().join("binlog"), &acked, &store);
    assert_eq!(
        xids.contains(&ts),
        committed,
        "in-flight txn {ts} logged iff committed (crash at {point})"
    );
    let (_, again) = replay(&dir.path().join("binlog")).expect("replay");
    assert_eq!(again.len(), acked.len() + usize::from(committed));
}

#[test]
fn crash_after_prepare() {
    crash_at(txn_crash_points::AFTER_PREPARE);
}

#[test]
fn crash_after_prewrite() {
    crash_at(txn_crash_points::AFTER_PREWRITE);
}

#[test]
fn crash_after_primary_commit() {
    crash_at(txn_crash_points::AFTER_PRIMARY_COMMIT);
}

#[test]
fn crash_after_binlog() {
    crash_at(txn_crash_points::AFTER_BINLOG);
}

#[test]
fn crash_before_ack() {
    crash_at(txn_crash_points::BEFORE_ACK);
}
