//! Lock resolution: locks left by a coordinator that died are settled by others from the
//! primary's fate, never later than the lock's TTL; heartbeats keep a live transaction's
//! locks from being taken over.

mod client_support;

use std::time::{Duration, Instant};

use client_support::{config, key, start};
use surge_txn::{TxnError, TxnMode};

#[test]
fn a_dead_coordinators_prewrite_is_bypassed_by_readers_and_rolled_back_by_a_writer_after_its_ttl() {
    let env = start(config(1000));
    let (a, z) = (key(2, "dead"), key(13, "dead"));
    let mut seed = env.client.begin(TxnMode::Optimistic).expect("begin");
    seed.put(&a, b"old").expect("put");
    seed.commit().expect("commit");

    let mut dead = env.client.begin(TxnMode::Optimistic).expect("begin");
    dead.put(&a, b"new").expect("put");
    dead.put(&z, b"new").expect("put");
    let started = Instant::now();
    dead.__abandon_after_prewrite().expect("prewrite");

    // Readers push the primary's min_commit_ts past their snapshot and read around the
    // locks at once (the transaction can no longer commit below them).
    let other = env.other_client(config(1000));
    assert_eq!(other.get(&z).expect("read around the lock"), None);
    assert_eq!(
        other.get(&a).expect("read around the lock"),
        Some(b"old".to_vec())
    );
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "no wait for the 1 s TTL: {:?}",
        started.elapsed()
    );

    // A writer must wait for the TTL, then rolls the dead transaction back.
    let mut w = other.begin(TxnMode::Optimistic).expect("begin");
    w.put(&z, b"after").expect("put");
    w.commit().expect("commit over the resolved lock");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "the lock was alive for its TTL ({waited:?})"
    );
    assert!(
        waited < Duration::from_secs(4),
        "resolved soon after the TTL ({waited:?})"
    );
    assert!(other.counters().locks_resolved >= 1);
    assert_eq!(other.get(&z).expect("get"), Some(b"after".to_vec()));
    assert_eq!(
        other.get(&a).expect("get"),
        Some(b"old".to_vec()),
        "the dead txn never commits"
    );
}

#[test]
fn a_reader_commits_secondaries_of_a_committed_primary_without_waiting() {
    let env = start(config(3000));
    let (a, z) = (key(3, "half"), key(12, "half"));
    let mut t = env.client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&a, b"1").expect("put");
    t.put(&z, b"1").expect("put");
    let commit_ts = t.__abandon_after_primary_commit().expect("primary commits");
    assert!(commit_ts > 0);

    let reader = env.other_client(config(3000));
    let started = Instant::now();
    assert_eq!(reader.get(&z).expect("secondary"), Some(b"1".to_vec()));
    assert_eq!(reader.get(&a).expect("primary"), Some(b"1".to_vec()));
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "a committed primary settles the lock at once, not after the 3 s TTL ({:?})",
        started.elapsed()
    );
    assert_eq!(reader.counters().locks_resolved, 1);
}

/// A reader meeting one secondary of a committed transaction settles all of the
/// transaction's locks in that region with one resolution, however many: the region
/// resolves them in bounded proposals (4096 keys each), scan after scan, and none is
/// skipped between two batches.
#[test]
fn one_resolution_settles_ten_thousand_secondaries_of_a_region() {
    let env = start(config(3000));
    let n = 10_000;
    let mut t = env.client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(3, "primary"), b"p").expect("put");
    for i in 0..n {
        t.put(&key(12, &format!("big{i:05}")), b"1").expect("put");
    }
    t.__abandon_after_primary_commit().expect("primary commits");

    let reader = env.other_client(config(3000));
    let rows = reader
        .scan(&key(12, "big"), Some(&key(12, "bih")), n + 1)
        .expect("scan");
    assert_eq!(rows.len(), n);
    assert!(rows.iter().all(|(_, v)| v == b"1"));
    assert_eq!(reader.counters().locks_resolved, 1);
}

#[test]
fn a_pessimistic_waiter_takes_over_a_dead_holders_lock_after_its_ttl() {
    let env = start(config(500));
    let k = key(7, "takeover");
    let mut dead = env.client.begin(TxnMode::Pessimistic).expect("begin");
    dead.put(&k, b"dead").expect("lock");
    // The coordinator dies: no rollback, no heartbeat.
    dead.__abandon();
    let other = env.other_client(config(500));
    let mut t = other.begin(TxnMode::Pessimistic).expect("begin");
    let started = Instant::now();
    t.put(&k, b"alive")
        .expect("the expired lock is resolved, then taken");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    t.commit().expect("commit");
    assert_eq!(other.get(&k).expect("get"), Some(b"alive".to_vec()));
}

#[test]
fn heartbeats_keep_a_slow_transaction_alive_past_its_ttl() {
    let env = start(config(400));
    let k = key(9, "slow");
    let mut slow = env.client.begin(TxnMode::Pessimistic).expect("begin");
    slow.put(&k, b"slow").expect("lock");
    assert!(env.client.is_heartbeating(slow.start_ts()));
    std::thread::sleep(Duration::from_millis(1500)); // well past the 400 ms TTL

    let other = env.other_client(config(400));
    let mut rival = other.begin(TxnMode::Pessimistic).expect("begin");
    match rival.put(&k, b"rival") {
        Err(TxnError::LockWaitTimeout { lock_ts, .. }) => assert_eq!(lock_ts, slow.start_ts()),
        other => panic!("the heartbeated lock must not be taken over: {other:?}"),
    }
    drop(rival);
    assert!(env.client.counters().heartbeats >= 2);
    let slow_start_ts = slow.start_ts();
    slow.commit().expect("the slow transaction still commits");
    assert!(!env.client.is_heartbeating(slow_start_ts));
    assert_eq!(env.client.get(&k).expect("get"), Some(b"slow".to_vec()));
}

#[test]
fn dropping_a_transaction_releases_its_locks() {
    let env = start(config(3000));
    let k = key(4, "dropped");
    {
        let mut t = env.client.begin(TxnMode::Pessimistic).expect("begin");
        t.put(&k, b"x").expect("lock");
    }
    let mut t = env.client.begin(TxnMode::Pessimistic).expect("begin");
    let started = Instant::now();
    t.put(&k, b"y")
        .expect("the dropped transaction's lock is gone");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "no wait: {:?}",
        started.elapsed()
    );
    t.commit().expect("commit");
    assert_eq!(env.client.counters().rollbacks, 1);
}
