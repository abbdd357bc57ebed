//! `TxnClient::hot_update` one behaviour at a time: the hints (`commit_on_success`,
//! `rollback_on_fail`, `target_affect_row(n)`) as AliSQL's inventory hints define them, bound
//! checks that fail a member alone inside a group, automatic grouping past the threshold, the
//! group record handed to the observer (the binlog seam), and a group's lock serializing with
//! an ordinary transaction's lock on the key.

mod support;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{Layout, TestCluster};
use surge_txn::{
    ClientConfig, HotChange, HotGroupRecord, HotHints, HotOp, HotReject, LockMode, Transaction,
    TxnClient, TxnError, TxnMode,
};

const KEY: &[u8] = b"\x10stock";

/// A cluster with 2 regions, and a client whose lock requests wait up to 10 s.
fn start() -> (TestCluster, TxnClient) {
    let tc = TestCluster::start(Layout::new(2, LockMode::InMemory));
    let client = tc
        .client(ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_secs(10))));
    (tc, client)
}

fn put(client: &TxnClient, key: &[u8], value: &[u8]) {
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(key, value).expect("put");
    t.commit().expect("commit");
}

fn value(client: &TxnClient, key: &[u8]) -> Option<i64> {
    client
        .get(key)
        .expect("get")
        .map(|v| HotOp::decode(&v).expect("an integer"))
}

/// An ordinary pessimistic transaction holding the key's lock (a current read of it).
fn hold_lock(client: &TxnClient) -> (Transaction, i64) {
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    let v = t.get_for_update(KEY).expect("lock").expect("a value");
    (t, HotOp::decode(&v).expect("an integer"))
}

type Reply = Result<surge_txn::HotOutcome, TxnError>;

/// Starts `hot_update(KEY, op, hints)` on its own thread; its reply comes on the channel.
fn spawn_update(client: &TxnClient, op: HotOp, hints: HotHints) -> mpsc::Receiver<Reply> {
    let (tx, rx) = mpsc::channel();
    let client = client.clone();
    std::thread::spawn(move || {
        let _ = tx.send(client.hot_update(KEY, op, hints));
    });
    rx
}

/// Gives an update just started time to queue: a queued update shows in no counter until its
/// group runs, so the tests sleep between starts to make arrival order the start order.
fn settle() {
    std::thread::sleep(Duration::from_millis(150));
}

#[test]
fn a_group_applies_members_in_arrival_order_and_bound_failures_fail_alone() {
    let (_tc, client) = start();
    put(&client, KEY, b"10");
    let records: Arc<Mutex<Vec<HotGroupRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    client.set_hot_group_observer(Some(Arc::new(move |r: &HotGroupRecord| {
        sink.lock().expect("not poisoned").push(r.clone())
    })));
    // An ordinary transaction holds the key: the first update leads a group of one that
    // waits for that lock; the next four collect behind it as one group.
    let (mut holder, seen) = hold_lock(&client);
    assert_eq!(seen, 10);
    let hints = HotHints::hot_update();
    let mut replies = Vec::new();
    for op in [
        HotOp::add(-1),               // 100 -> 99 (first group, alone)
        HotOp::add(-200).at_least(0), // refused: -101 < 0
        HotOp::add(-3).at_least(0),   // 99 -> 96
        HotOp::add(5).at_most(100),   // refused: 101 > 100
        HotOp::add(4),                // 96 -> 100
    ] {
        replies.push(spawn_update(&client, op, hints));
        settle();
    }
    holder.put(KEY, b"100").expect("put");
    holder.commit().expect("the holder commits first");
    let got: Vec<Reply> = replies
        .iter()
        .map(|rx| rx.recv_timeout(Duration::from_secs(30)).expect("a reply"))
        .collect();
    let ok = |i: usize| got[i].as_ref().expect("committed").to_owned();
    assert_eq!(ok(0).value, Some(99));
    assert_eq!(ok(0).group_writes, 1);
    assert_eq!(ok(2).value, Some(96));
    assert_eq!(ok(4).value, Some(100));
    // Members 2 and 4 were one write: one commit timestamp, after the first group's.
    assert_eq!(ok(2).group_writes, 2);
    assert_eq!(ok(2).commit_ts, ok(4).commit_ts);
    assert!(ok(2).commit_ts > ok(0).commit_ts);
    assert!(matches!(
        &got[1],
        Err(TxnError::HotUpdateRejected {
            reason: HotReject::BelowMin {
                value: -101,
                min: 0
            },
            rollback: true,
            ..
        })
    ));
    assert!(matches!(
        &got[3],
        Err(TxnError::HotUpdateRejected {
            reason: HotReject::AboveMax {
                value: 101,
                max: 100
            },
            rollback: true,
            ..
        })
    ));
    assert_eq!(value(&client, KEY), Some(100));
    let c = client.hot_counters();
    assert_eq!((c.groups, c.members, c.failed_members), (2, 5, 2));
    assert_eq!(c.mean_group_size(), 2.5);
    // The observer saw each group once, with one chained change per kept member.
    let records = records.lock().expect("not poisoned").clone();
    let changes: Vec<Vec<HotChange>> = records.iter().map(|r| r.changes.clone()).collect();
    assert_eq!(
        changes,
        vec![
            vec![HotChange {
                before: 100,
                after: 99
            }],
            vec![
                HotChange {
                    before: 99,
                    after: 96
                },
                HotChange {
                    before: 96,
                    after: 100
                },
            ],
        ]
    );
    assert_eq!(Some(records[1].commit_ts), ok(2).commit_ts);
}

#[test]
fn target_affect_row_counts_rows_and_rollback_on_fail_comes_back() {
    let (_tc, client) = start();
    let missing = b"\x10missing";
    // No row: `target_affect_row(1)` fails the update, with the rollback flag as hinted.
    let e = client
        .hot_update(missing, HotOp::add(1), HotHints::hot_update())
        .unwrap_err();
    assert_eq!(
        e,
        TxnError::TargetAffectRow {
            key: missing.to_vec(),
            expected: 1,
            actual: 0,
            rollback: true
        }
    );
    assert!(!e.is_retryable());
    let e = client
        .hot_update(
            missing,
            HotOp::add(1),
            HotHints::new().commit_on_success().target_affect_row(1),
        )
        .unwrap_err();
    assert!(matches!(
        e,
        TxnError::TargetAffectRow {
            rollback: false,
            ..
        }
    ));
    // Without the hint a missing row is 0 rows affected: success, nothing written.
    let out = client
        .hot_update(missing, HotOp::add(1), HotHints::new().commit_on_success())
        .expect("0 rows is not an error without target_affect_row");
    assert_eq!(
        (out.value, out.affected_rows, out.commit_ts),
        (None, 0, None)
    );
    assert_eq!(client.get(missing).expect("get"), None);
    // An existing row affects 1: `target_affect_row(0)` fails, `(1)` commits.
    put(&client, KEY, b"7");
    let e = client
        .hot_update(
            KEY,
            HotOp::add(1),
            HotHints::new().commit_on_success().target_affect_row(0),
        )
        .unwrap_err();
    assert!(matches!(
        e,
        TxnError::TargetAffectRow {
            expected: 0,
            actual: 1,
            ..
        }
    ));
    let out = client
        .hot_update(KEY, HotOp::add(1), HotHints::hot_update())
        .expect("one row");
    assert_eq!(
        (out.value, out.affected_rows, out.group_writes),
        (Some(8), 1, 1)
    );
    assert!(out.commit_ts.is_some());
    assert_eq!(value(&client, KEY), Some(8));
    // A value that is not an integer refuses the update and is left as it was.
    put(&client, KEY, b"seven");
    let e = client
        .hot_update(KEY, HotOp::add(1), HotHints::hot_update())
        .unwrap_err();
    assert!(matches!(
        e,
        TxnError::HotUpdateRejected {
            reason: HotReject::NotAnInteger { .. },
            ..
        }
    ));
    assert_eq!(client.get(KEY).expect("get"), Some(b"seven".to_vec()));
    // Every failed update released the key's lock: an ordinary transaction takes it at once.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(KEY, b"1").expect("the key is not locked");
    t.commit().expect("commit");
    assert_eq!(client.hot_counters().failed_members, 4);
}

#[test]
fn unhinted_updates_are_grouped_past_the_threshold_only() {
    let (_tc, client) = start();
    put(&client, KEY, b"0");
    // Below the threshold (one at a time), an update without commit_on_success runs alone.
    for _ in 0..3 {
        client
            .hot_update(KEY, HotOp::add(1), HotHints::new())
            .expect("alone");
    }
    let c = client.hot_counters();
    assert_eq!((c.ungrouped, c.groups), (3, 0));
    // With the threshold at 2: the first of four concurrent updates is alone (1 in flight)
    // and waits for the holder's lock; the next three are grouped behind it.
    client.set_hot_auto_threshold(2);
    let (holder, _) = hold_lock(&client);
    let replies: Vec<_> = (0..4)
        .map(|_| {
            let rx = spawn_update(&client, HotOp::add(1), HotHints::new());
            settle();
            rx
        })
        .collect();
    holder.rollback();
    let values: Vec<i64> = replies
        .iter()
        .map(|rx| {
            let out = rx.recv_timeout(Duration::from_secs(30)).expect("reply");
            out.expect("committed").value.expect("a row")
        })
        .collect();
    assert_eq!(values, vec![4, 5, 6, 7]);
    let c = client.hot_counters();
    assert_eq!((c.ungrouped, c.groups, c.members), (4, 1, 3));
    // Grouping off: every update runs alone whatever its hints.
    client.set_hot_grouping(false);
    client
        .hot_update(KEY, HotOp::add(1), HotHints::hot_update())
        .expect("alone");
    assert_eq!(client.hot_counters().ungrouped, 5);
    assert_eq!(value(&client, KEY), Some(8));
}

#[test]
fn a_group_waits_for_an_ordinary_transactions_lock_and_reads_its_write() {
    let (_tc, client) = start();
    put(&client, KEY, b"10");
    let (mut holder, _) = hold_lock(&client);
    let rx = spawn_update(&client, HotOp::add(1), HotHints::hot_update());
    // The group's lock request waits on the node behind the holder's lock.
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "a hot update finished while an ordinary transaction held the key"
    );
    holder.put(KEY, b"50").expect("put");
    holder.commit().expect("commit");
    let out = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("reply")
        .expect("committed");
    assert_eq!(out.value, Some(51), "the group read the holder's write");
    // And the other way round: an ordinary transaction's lock waits for a group's commit,
    // then reads its result.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    let v = t.get_for_update(KEY).expect("lock").expect("value");
    assert_eq!(v, b"51".to_vec());
    t.rollback();
}
