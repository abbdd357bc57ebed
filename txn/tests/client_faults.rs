//! The client across leader changes: a crashed leader or a transferred one costs retries,
//! never correctness; a pessimistic lock lost with its leader never lets two conflicting
//! transactions both commit.

mod client_support;

use std::time::Duration;

use client_support::{config, key, start};
use surge_txn::{TxnError, TxnMode};

#[test]
fn reads_and_commits_survive_a_region_leader_crash() {
    let env = start(config(3000));
    let k = key(6, "crash");
    let mut t = env.client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&k, b"before").expect("put");
    t.commit().expect("commit");
    let leader = env.cluster.leader_of(&k).expect("leader");
    env.cluster.stop_node(leader).expect("stop");
    let retries_before = env.client.counters().region_error_retries;

    assert_eq!(
        env.client.get(&k).expect("read after the crash"),
        Some(b"before".to_vec())
    );
    for mode in [TxnMode::Optimistic, TxnMode::Pessimistic] {
        let mut t = env.client.begin(mode).expect("begin after the crash");
        t.put(&k, mode.as_str().as_bytes()).expect("put");
        t.put(&key(15, "crash"), b"x")
            .expect("put in another region");
        t.commit().expect("commit after the crash");
        assert_eq!(
            env.client.get(&k).expect("get"),
            Some(mode.as_str().as_bytes().to_vec())
        );
    }
    assert!(
        env.client.counters().region_error_retries > retries_before,
        "the cached leader was down: the client retried elsewhere"
    );
    env.cluster.restart_node(leader).expect("restart");
}

#[test]
fn a_transferred_leader_is_followed_through_not_leader_hints() {
    let env = start(config(3000));
    let k = key(11, "moved");
    let mut t = env.client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&k, b"1").expect("put");
    t.commit().expect("commit; caches the leader");
    let region = env.cluster.region_of(&k).expect("region").id;
    let leader = env.cluster.leader_of(&k).expect("leader");
    let to = *env
        .cluster
        .node_ids()
        .iter()
        .find(|&&n| n != leader)
        .expect("another node");
    env.cluster
        .transfer_leader(region, to, Duration::from_secs(10))
        .expect("transfer");
    let retries_before = env.client.counters().region_error_retries;
    assert_eq!(
        env.client.get(&k).expect("get via the new leader"),
        Some(b"1".to_vec())
    );
    assert!(env.client.counters().region_error_retries > retries_before);
    let mut t = env.client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&k, b"2").expect("lock on the new leader");
    t.commit().expect("commit");
    assert_eq!(env.client.get(&k).expect("get"), Some(b"2".to_vec()));
}

#[test]
fn a_lock_lost_with_its_leader_never_lets_a_conflicting_writer_commit_too() {
    let env = start(config(3000));
    let k = key(5, "lost");
    let mut first = env.client.begin(TxnMode::Pessimistic).expect("begin");
    first.put(&k, b"first").expect("in-memory lock");
    first
        .put(&key(12, "lost"), b"first")
        .expect("second region: two-phase commit");
    let leader = env.cluster.leader_of(&k).expect("leader");
    env.cluster
        .stop_node(leader)
        .expect("crash: the in-memory lock is gone");

    let mut second = env.client.begin(TxnMode::Pessimistic).expect("begin");
    second
        .put(&k, b"second")
        .expect("the key is free on the new leader");
    second.commit().expect("second commits");

    match first.commit() {
        Err(TxnError::PessimisticLockNotFound { key: lk, .. }) => assert_eq!(lk, k),
        other => panic!("the first transaction must not commit over the second: {other:?}"),
    }
    assert_eq!(env.client.get(&k).expect("get"), Some(b"second".to_vec()));
    assert_eq!(
        env.client.get(&key(12, "lost")).expect("get"),
        None,
        "nothing of first committed"
    );
    assert_eq!(env.client.counters().aborts_lock_lost, 1);
    env.cluster.restart_node(leader).expect("restart");
}

#[test]
fn a_lock_lost_with_its_leader_is_amended_when_nothing_else_wrote() {
    let env = start(config(3000));
    let k = key(9, "amend");
    let mut t = env.client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&k, b"v").expect("in-memory lock");
    t.put(&key(1, "amend"), b"v").expect("second region");
    let leader = env.cluster.leader_of(&k).expect("leader");
    env.cluster.stop_node(leader).expect("crash");
    t.commit()
        .expect("no newer write: prewrite amends the lost lock");
    assert_eq!(env.client.get(&k).expect("get"), Some(b"v".to_vec()));
    env.cluster.restart_node(leader).expect("restart");
}
