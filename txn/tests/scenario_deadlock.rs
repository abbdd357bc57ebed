//! A deadlock across two regions: T1 locks `a` (region A), T2 locks `b` (region B), then T1
//! waits for `b` and T2 for `a`. The cluster's detector (on the meta leader, as TiKV's
//! detector runs on the leader of the first region) sees the cycle when the second wait
//! closes it: exactly one transaction is the victim and gets `TxnError::Deadlock` with a
//! wait chain naming both transactions and both keys; the other commits both its writes.

mod support;

use std::time::{Duration, Instant};

use support::{Layout, TestCluster};
use surge_txn::{ClientConfig, LockMode, Transaction, TxnError, TxnMode};

const A: &[u8] = b"\x10a";
const B: &[u8] = b"\x90b";

/// Takes the second key and commits; a deadlock victim rolls back (releasing its first
/// key so the other can go on) and returns the error.
fn second_lock_then_commit(mut t: Transaction, key: &[u8], value: &[u8]) -> Result<u64, TxnError> {
    match t.put(key, value) {
        Ok(()) => t.commit(),
        Err(e) => {
            t.rollback();
            Err(e)
        }
    }
}

fn deadlock_in(mode: LockMode) {
    let tc = TestCluster::start(Layout::new(2, mode));
    assert_ne!(
        tc.cluster.region_of(A).map(|r| r.id),
        tc.cluster.region_of(B).map(|r| r.id),
        "the keys are in two regions"
    );
    let client = tc.client(
        ClientConfig::default()
            .with_wait_for_lock_timeout(Some(Duration::from_secs(10)))
            .with_heartbeat_interval(Duration::from_millis(100)),
    );
    let mut t1 = client.begin(TxnMode::Pessimistic).expect("begin T1");
    let mut t2 = client.begin(TxnMode::Pessimistic).expect("begin T2");
    let (ts1, ts2) = (t1.start_ts(), t2.start_ts());
    t1.put(A, b"t1").expect("T1 locks a");
    t2.put(B, b"t2").expect("T2 locks b");
    let waits_before = tc.cluster.counters().lock_waits;
    let started = Instant::now();
    let (r1, r2) = std::thread::scope(|s| {
        let h1 = s.spawn(|| second_lock_then_commit(t1, B, b"t1"));
        // T1 is queued behind T2 before T2 asks for a.
        while tc.cluster.counters().lock_waits == waits_before {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "T1 never waited"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let h2 = s.spawn(|| second_lock_then_commit(t2, A, b"t2"));
        (h1.join().expect("T1"), h2.join().expect("T2"))
    });
    let elapsed = started.elapsed();
    eprintln!("{mode}: T1 {r1:?}, T2 {r2:?} in {elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(5),
        "the deadlock was found by detection, not by a wait timeout ({elapsed:?})"
    );
    let (winner, chain) = match (&r1, &r2) {
        (Ok(_), Err(TxnError::Deadlock { chain })) => (b"t1", chain),
        (Err(TxnError::Deadlock { chain }), Ok(_)) => (b"t2", chain),
        other => panic!("{mode}: want one victim and one commit, got {other:?}"),
    };
    let txns: Vec<u64> = chain.iter().flat_map(|e| [e.txn, e.wait_for_txn]).collect();
    let keys: Vec<&[u8]> = chain.iter().map(|e| e.key.as_slice()).collect();
    assert!(
        txns.contains(&ts1) && txns.contains(&ts2),
        "{mode}: chain {chain:?} names T1 {ts1} and T2 {ts2}"
    );
    assert!(
        keys.contains(&A) && keys.contains(&B),
        "{mode}: chain {chain:?} names both keys"
    );
    let now = tc.timestamp();
    for key in [A, B] {
        assert_eq!(
            tc.get_at(key, now).as_deref(),
            Some(&winner[..]),
            "{mode}: the winner wrote both keys, the victim neither"
        );
    }
}

#[test]
fn deadlock_across_two_regions_with_in_memory_locks() {
    deadlock_in(LockMode::InMemory);
}

#[test]
fn deadlock_across_two_regions_with_sync_locks() {
    deadlock_in(LockMode::Sync);
}

/// Regression: the nodes' deadlock detector forgot a wait-for edge three times the
/// cluster's own lock-wait setting (1 s, so 3 s) after it was announced, while the client's
/// lock waits may be longer (10 s here): a cycle closed 4 s into T1's wait was not seen, and
/// both transactions waited until T1's wait timed out ("T1 Err(LockWaitTimeout ..), T2 Ok;
/// T2 took 6 s"). Now the nodes have no lock-wait setting (the client's is the only one)
/// and a waiting request announces its edge again every half of the edge's lifetime. The
/// two regions' leaders are on different nodes, so neither node's own wait queue sees both
/// waits: only the cluster's detector can find the cycle.
#[test]
fn a_deadlock_closed_late_in_a_long_wait_is_found() {
    let tc = TestCluster::start(Layout::new(2, LockMode::InMemory));
    let (region_a, region_b) = (
        tc.cluster.region_of(A).expect("region of a"),
        tc.cluster.region_of(B).expect("region of b"),
    );
    assert_ne!(region_a.id, region_b.id, "the keys are in two regions");
    let leader_a = tc.cluster.leader_of(A).expect("a leader for a");
    let other = *tc
        .cluster
        .node_ids()
        .iter()
        .find(|n| **n != leader_a)
        .expect("three nodes");
    tc.cluster
        .transfer_leader(region_b.id, other, Duration::from_secs(20))
        .expect("b's region moves to another node");
    let client = tc.client(
        ClientConfig::default()
            .with_wait_for_lock_timeout(Some(Duration::from_secs(10)))
            .with_heartbeat_interval(Duration::from_millis(100)),
    );
    let mut t1 = client.begin(TxnMode::Pessimistic).expect("begin T1");
    let mut t2 = client.begin(TxnMode::Pessimistic).expect("begin T2");
    t1.put(A, b"t1").expect("T1 locks a");
    t2.put(B, b"t2").expect("T2 locks b");
    assert_ne!(tc.cluster.leader_of(A), tc.cluster.leader_of(B));
    let waits_before = tc.cluster.counters().lock_waits;
    let started = Instant::now();
    let (r1, r2, t2_took) = std::thread::scope(|s| {
        let h1 = s.spawn(|| second_lock_then_commit(t1, B, b"t1"));
        while tc.cluster.counters().lock_waits == waits_before {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "T1 never waited"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        // Past the edge's 3 s lifetime, well inside T1's 10 s wait.
        std::thread::sleep(Duration::from_secs(4));
        let t2_started = Instant::now();
        let r2 = second_lock_then_commit(t2, A, b"t2");
        let t2_took = t2_started.elapsed();
        (h1.join().expect("T1"), r2, t2_took)
    });
    eprintln!("T1 {r1:?}, T2 {r2:?}; T2 took {t2_took:?}");
    assert!(
        matches!(
            (&r1, &r2),
            (Ok(_), Err(TxnError::Deadlock { .. })) | (Err(TxnError::Deadlock { .. }), Ok(_))
        ),
        "want one deadlock victim and one commit, got T1 {r1:?}, T2 {r2:?}"
    );
    assert!(
        t2_took < Duration::from_secs(4),
        "the deadlock was found by detection, not by T1's wait timing out ({t2_took:?})"
    );
}
