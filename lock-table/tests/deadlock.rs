//! Deadlock detection: cycles of length 2..5, no false positive on chains, expiry, clean-up,
//! and a random-graph check against a reachability reference.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use surge_lock_table::{DeadlockDetector, WaitForEntry};

/// Checks that `chain` is a closed cycle starting with `txn`.
fn assert_cycle(chain: &[WaitForEntry], txn: u64, len: usize) {
    assert_eq!(chain.len(), len, "{chain:?}");
    assert_eq!(chain[0].txn, txn);
    for pair in chain.windows(2) {
        assert_eq!(pair[0].wait_for_txn, pair[1].txn, "{chain:?}");
    }
    assert_eq!(chain[len - 1].wait_for_txn, txn, "{chain:?}");
}

#[test]
fn cycles_of_length_2_to_5_are_detected() {
    for len in 2..=5u64 {
        let mut d = DeadlockDetector::default();
        // 1 -> 2 -> ... -> len, then len -> 1 closes the cycle.
        for t in 1..len {
            d.detect(t, t + 1, format!("key{t}").as_bytes()).unwrap();
        }
        let err = d.detect(len, 1, b"closing").unwrap_err();
        assert_cycle(&err.wait_chain, len, len as usize);
        assert_eq!(err.wait_chain[0].key, b"closing".to_vec());
        assert_eq!(err.wait_chain[1].key, b"key1".to_vec());
        assert!(err.to_string().contains(&format!("cycle of {len}")));
        assert_eq!(
            d.edge_count(),
            (len - 1) as usize,
            "the closing edge is not added"
        );
    }
}

#[test]
fn chains_and_diamonds_are_not_deadlocks() {
    let mut d = DeadlockDetector::default();
    for t in 1..10 {
        d.detect(t, t + 1, b"k").unwrap();
    }
    d.detect(0, 1, b"k").unwrap();
    d.detect(10, 11, b"k").unwrap();
    d.detect(3, 7, b"j").unwrap(); // shortcut, still acyclic
    // Diamond 20 -> {21, 22} -> 23.
    d.detect(20, 21, b"a").unwrap();
    d.detect(20, 22, b"b").unwrap();
    d.detect(21, 23, b"c").unwrap();
    d.detect(22, 23, b"d").unwrap();
    d.detect(23, 24, b"e").unwrap();
    // The same edge twice, on another key, is fine.
    d.detect(20, 21, b"z").unwrap();
    assert!(d.detect(23, 20, b"x").is_err());
    assert!(d.detect(11, 0, b"x").is_err());
}

#[test]
fn expired_edges_are_ignored_and_removed() {
    let ttl = Duration::from_millis(100);
    let mut d = DeadlockDetector::new(ttl);
    let t0 = Instant::now();
    d.detect_at(1, 2, b"a", t0).unwrap();
    d.detect_at(2, 3, b"b", t0 + Duration::from_millis(80))
        .unwrap();
    // Within the TTL: a cycle.
    assert!(
        d.detect_at(3, 1, b"c", t0 + Duration::from_millis(90))
            .is_err()
    );
    // After 1 -> 2 expired, no cycle, and the expired edge is gone.
    d.detect_at(3, 1, b"c", t0 + Duration::from_millis(150))
        .unwrap();
    assert_eq!(d.edge_count(), 2);
    assert_eq!(d.expire(t0 + Duration::from_millis(400)), 2);
    assert_eq!(d.edge_count(), 0);
}

#[test]
fn clean_up_removes_edges() {
    let mut d = DeadlockDetector::default();
    d.detect(1, 2, b"a").unwrap();
    d.detect(1, 2, b"b").unwrap();
    d.detect(2, 3, b"c").unwrap();
    d.clean_up_wait_for(1, 2, b"a");
    assert!(d.detect(2, 1, b"x").is_err(), "key b still waits");
    d.clean_up_wait_for(1, 2, b"b");
    d.detect(3, 1, b"x").unwrap();
    d.clean_up(3);
    d.clean_up(2);
    assert_eq!(d.edge_count(), 0);
}

/// Reference: is `to` reachable from `from`?
fn reachable(edges: &HashMap<u64, HashSet<u64>>, from: u64, to: u64) -> bool {
    let mut stack = vec![from];
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n) {
            stack.extend(edges.get(&n).into_iter().flatten().copied());
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Random edge insertions: a deadlock is reported exactly when the reference finds a
    /// path back, and each reported chain is a real cycle of accepted edges.
    #[test]
    fn detection_matches_reachability(ops in prop::collection::vec((0u64..12, 0u64..12), 1..80)) {
        let mut d = DeadlockDetector::default();
        let mut edges: HashMap<u64, HashSet<u64>> = HashMap::new();
        for (txn, lock_ts) in ops {
            let res = d.detect(txn, lock_ts, b"k");
            let expect_deadlock = txn != lock_ts && reachable(&edges, lock_ts, txn);
            prop_assert_eq!(res.is_err(), expect_deadlock);
            match res {
                Ok(()) => {
                    if txn != lock_ts {
                        edges.entry(txn).or_default().insert(lock_ts);
                    }
                }
                Err(e) => {
                    let chain = &e.wait_chain;
                    prop_assert_eq!(chain[0].txn, txn);
                    prop_assert_eq!(chain[chain.len() - 1].wait_for_txn, txn);
                    for w in &chain[1..] {
                        prop_assert!(edges[&w.txn].contains(&w.wait_for_txn));
                    }
                }
            }
        }
    }
}

#[test]
fn refresh_keeps_an_edge_alive_but_never_re_adds_one() {
    let ttl = Duration::from_millis(100);
    let mut d = DeadlockDetector::new(ttl);
    let t0 = Instant::now();
    d.detect_at(1, 2, b"a", t0).unwrap();
    assert!(d.refresh(1, 2, t0 + Duration::from_millis(90)));
    // 160 ms after insertion, 70 ms after the refresh: still live, so 2 -> 1 is a cycle.
    assert!(
        d.detect_at(2, 1, b"b", t0 + Duration::from_millis(160))
            .is_err()
    );
    assert_eq!(d.expire(t0 + Duration::from_millis(400)), 1);
    assert!(!d.refresh(1, 2, t0 + Duration::from_millis(401)));
    assert_eq!(d.edge_count(), 0);
}

/// An expired edge that is waited on again starts afresh: the keys of the abandoned wait do
/// not linger, so cleaning up the new wait removes the edge and no false deadlock follows.
#[test]
fn refreshing_an_expired_edge_forgets_its_old_keys() {
    let ttl = Duration::from_millis(100);
    let mut d = DeadlockDetector::new(ttl);
    let t0 = Instant::now();
    // Txn 1 waited for txn 2 on "a" and vanished without cleaning up.
    d.detect_at(1, 2, b"a", t0).unwrap();
    // Much later, txn 1 waits for txn 2 again, on "b", then stops waiting.
    d.detect_at(1, 2, b"b", t0 + Duration::from_millis(150))
        .unwrap();
    d.clean_up_wait_for(1, 2, b"b");
    assert_eq!(d.edge_count(), 0, "the stale key kept the edge alive");
    // Txn 2 waiting for txn 1 is no deadlock: txn 1 waits for nothing.
    d.detect_at(2, 1, b"c", t0 + Duration::from_millis(160))
        .unwrap();
}

/// An edge that expired is not revived by a refresh: meanwhile detection ignored it and
/// accepted the reverse edge (removing the expired one as it went), so reviving it would
/// leave a cycle in the graph.
#[test]
fn refresh_does_not_revive_an_expired_edge_into_a_cycle() {
    let ttl = Duration::from_millis(100);
    let mut d = DeadlockDetector::new(ttl);
    let t0 = Instant::now();
    d.detect_at(1, 2, b"a", t0).unwrap();
    // 1 -> 2 expired; 2 -> 1 is accepted.
    d.detect_at(2, 1, b"b", t0 + Duration::from_millis(150))
        .unwrap();
    assert!(!d.refresh(1, 2, t0 + Duration::from_millis(160)));
    // The graph is just 2 -> 1, so waiting again for 2 is (correctly) a deadlock.
    assert_eq!(d.edge_count(), 1);
    assert!(
        d.detect_at(1, 2, b"a", t0 + Duration::from_millis(170))
            .is_err()
    );
}

/// A refresh of an edge that expired but was never met by a search removes it.
#[test]
fn refresh_of_an_unvisited_expired_edge_removes_it() {
    let ttl = Duration::from_millis(100);
    let mut d = DeadlockDetector::new(ttl);
    let t0 = Instant::now();
    d.detect_at(1, 2, b"a", t0).unwrap();
    assert!(!d.refresh(1, 2, t0 + Duration::from_millis(150)));
    assert_eq!(d.edge_count(), 0);
}
