//! MVCC garbage collection in a cluster of `surgedb node` processes: the node leading the
//! meta group collects old versions on its own, reads see the newest values, a
//! transaction older than the GC life time is refused, a node's GC hold goes with a
//! clean stop, and `surgedb gc holds` / `gc remove-hold` list and remove a crashed one's.

#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use std::time::Duration;

use common::{ProcCluster, surgedb, wait_until};
use surge_txn::{KeyError, TxnError, TxnMode};

/// The records every node's log says its collections removed.
fn removed_records(c: &ProcCluster) -> u64 {
    (1..=3)
        .flat_map(|n| {
            c.log(n)
                .lines()
                .filter(|l| l.contains(": gc below "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter_map(|line| {
            let (before, _) = line.split_once(" records and ")?;
            before.rsplit(' ').next()?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
fn the_meta_leaders_node_collects_old_versions_and_old_transactions_are_refused() {
    let c = ProcCluster::start_with_args(3, "in-memory", common::FAST_GC_ARGS);
    let client = c.client();
    let txn = client.txn();
    for i in 0..40 {
        let mut t = txn.begin(TxnMode::Optimistic).unwrap();
        t.put(b"gc/k", format!("v{i}").as_bytes()).unwrap();
        t.commit().unwrap();
    }
    let mut old = txn.begin(TxnMode::Optimistic).unwrap();
    // 39 older versions of the key go once the safe point (now - 7 s) passes the 40th.
    wait_until(Duration::from_secs(60), || removed_records(&c) >= 39);
    assert_eq!(txn.get(b"gc/k").unwrap(), Some(b"v39".to_vec()));
    match old.get(b"gc/k") {
        Err(TxnError::Key(KeyError::TooOld { ts, oldest })) => assert!(ts < oldest),
        other => panic!("a read older than the life time: {other:?}"),
    }
    let logs: String = (1..=3).map(|n| c.log(n)).collect();
    assert!(!logs.contains("gc failed"), "{logs}");

    // Each node's coordinator keeps a GC hold; a clean stop with nothing in doubt removes
    // its node's hold, so it does not hold the collection back until its TTL.
    let owners = |client: &surgedb::Client| {
        let mut o: Vec<u64> = client
            .txn()
            .gc_holds()
            .unwrap()
            .iter()
            .map(|h| h.owner)
            .collect();
        o.sort_unstable();
        o
    };
    assert_eq!(owners(&client), vec![1, 2, 3]);
    c.stop_node(3);
    assert_eq!(owners(&client), vec![1, 2], "{}", c.log(3));

    // A crashed node's hold stays; `surgedb gc holds` lists it and `gc remove-hold` lets
    // the collection pass a node that is gone for good (node 3 back first: two of three
    // nodes keep the meta group's quorum).
    c.restart(3);
    wait_until(Duration::from_secs(60), || owners(&client) == [1, 2, 3]);
    c.kill9(2);
    let (ok, out, err) = surgedb(&["gc", "holds", "--cluster-dir", c.dir_str()]);
    assert!(ok, "{out}{err}");
    let listed: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .collect();
    assert_eq!(listed, ["1", "2", "3"], "{out}");
    let (ok, out, err) = surgedb(&[
        "gc",
        "remove-hold",
        "--owner",
        "2",
        "--cluster-dir",
        c.dir_str(),
    ]);
    assert!(
        ok && out.contains("removed the GC hold of owner 2"),
        "{out}{err}"
    );
    assert_eq!(owners(&client), vec![1, 3]);
}
