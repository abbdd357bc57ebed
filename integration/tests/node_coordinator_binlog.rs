//! Transactions run by the nodes' own coordinators (`Client::begin`, `Client::hot_update`,
//! `surgedb kv put`) on 3 node processes, and the binlog each node writes in `DIR/binlog`:
//!
//! - every binlog file of every node read by `mariadb-binlog --verify-binlog-checksum -v`
//!   (required when `SURGE_REQUIRE_MARIADB_BINLOG=1`, as in CI), every acknowledged commit
//!   present exactly once, no rolled-back one present, each node's GTIDs in its own domain;
//! - a node process `kill -9`ed while its coordinator commits (at a named point of the
//!   commit path, and at a random moment under load), restarted: its recovery settles the
//!   in-doubt transactions and the same checks hold;
//! - a node restarted with an in-doubt transaction while its peers are down: it serves,
//!   refuses transactions (`NotReady`) until its recovery can settle it, then logs it;
//! - with garbage collection on, a node down longer than the GC life time with an in-doubt
//!   transaction: its GC hold keeps what its recovery needs;
//! - `surgedb binlog verify` on the cluster directory, and on a damaged file.
//!
//! `SURGE_LONG=1` runs more kill cycles.

#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{ProcCluster, long, surgedb, wait_until};
use parking_lot::Mutex;
use surge_txn::rpc::NodeRouter;
use surge_txn::{
    HotHints, HotOp, TXN_CRASH_ENV, TxnError, TxnMode,
    rpc::{Context, KvRequest, KvResponse},
    txn_crash_points,
};
use surgedb::wire::CoordinatorState;
use surgedb::{Client, ClientError};

/// What happened to one transaction, as its client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// `commit` returned a commit timestamp.
    Acked,
    /// Rolled back by the client, or failed before commit was sent: must not be logged.
    NotCommitted,
    /// The commit's answer was lost: logged exactly when it committed.
    Undetermined,
}

/// Every transaction's marker value (unique per transaction) and outcome.
type Ledger = Arc<Mutex<BTreeMap<String, (Vec<u8>, Outcome)>>>;

/// One transaction writing `marker` under two keys in two regions (first bytes `a` and
/// `x`), so that it commits in two phases; `rollback` ends it with a rollback instead.
fn run_one(client: &Client, node: Option<u64>, marker: &str, rollback: bool) -> Outcome {
    let mode = if marker.len().is_multiple_of(2) {
        TxnMode::Pessimistic
    } else {
        TxnMode::Optimistic
    };
    let begun = match node {
        Some(n) => client.begin_on(n, mode),
        None => client.begin(mode),
    };
    let Ok(mut t) = begun else {
        return Outcome::NotCommitted;
    };
    let key_a = format!("a/{marker}");
    if t.put(key_a.as_bytes(), marker.as_bytes()).is_err()
        || t.put(format!("x/{marker}").as_bytes(), marker.as_bytes())
            .is_err()
    {
        return Outcome::NotCommitted;
    }
    if rollback {
        let _ = t.rollback();
        return Outcome::NotCommitted;
    }
    match t.commit() {
        Ok(_) => Outcome::Acked,
        Err(ClientError::Txn(TxnError::Undetermined { .. })) => Outcome::Undetermined,
        Err(ClientError::Txn(e)) if e.is_retryable() || matches!(e, TxnError::Binlog { .. }) => {
            Outcome::NotCommitted
        }
        Err(e) => panic!("commit of {marker}: unexpected error {e}"),
    }
}

/// A transaction of the binlog as `mariadb-binlog -v` printed it.
#[derive(Debug, Default)]
struct Logged {
    gtid: String,
    values: Vec<String>,
}

/// Runs `mariadb-binlog --verify-binlog-checksum -v` on every binlog file of node `id`
/// (index order) and parses its transactions; `None` when the tool is absent (skipped,
/// unless `SURGE_REQUIRE_MARIADB_BINLOG=1`).
fn mariadb_transactions(binlog_dir: &Path) -> Option<Vec<Logged>> {
    let index = std::fs::read_to_string(binlog_dir.join("surge-bin.index")).unwrap();
    let mut out = Vec::new();
    for name in index.lines().filter(|l| !l.trim().is_empty()) {
        let file = binlog_dir.join(name.trim_start_matches("./"));
        let text = surge_testkit::mariadb_binlog::verify(&[&file], "-v")?;
        let mut current: Option<Logged> = None;
        for line in text.lines() {
            if let Some((_, gtid)) = line.split_once("\tGTID ") {
                current = Some(Logged {
                    gtid: gtid.split_whitespace().next().unwrap().to_string(),
                    values: Vec::new(),
                });
            } else if let Some(v) = line.strip_prefix("###   @2=") {
                if let Some(t) = current.as_mut() {
                    t.values.push(v.trim_matches('\'').to_string());
                }
            } else if line.starts_with("COMMIT") {
                out.extend(current.take());
            }
        }
        assert!(
            current.is_none(),
            "{}: a transaction without COMMIT",
            file.display()
        );
    }
    Some(out)
}

/// Every node's logged transactions, by node id.
fn logged_by_node(c: &ProcCluster) -> Option<BTreeMap<u64, Vec<Logged>>> {
    let mut all = BTreeMap::new();
    for n in &c.manifest.nodes {
        all.insert(n.id, mariadb_transactions(&n.data.join("binlog"))?);
    }
    Some(all)
}

/// The checks on the whole cluster's binlog: each node's GTIDs are `N-N-seq` (its own
/// domain and server id) with distinct sequence numbers; every acknowledged transaction's
/// marker is in exactly one logged transaction, once per key; none of the not-committed
/// ones is; an undetermined one is logged exactly when the store holds it, read through
/// `store`. `store` is `None` when the cluster is stopped: then no transaction may be
/// undetermined (no fault was injected).
fn check_binlog(c: &ProcCluster, store: Option<&Client>, ledger: &Ledger) {
    if store.is_none() {
        let undetermined: Vec<String> = ledger
            .lock()
            .iter()
            .filter(|(_, (_, o))| *o == Outcome::Undetermined)
            .map(|(m, _)| m.clone())
            .collect();
        assert!(
            undetermined.is_empty(),
            "no fault was injected, yet these are undetermined: {undetermined:?}"
        );
    }
    let Some(by_node) = logged_by_node(c) else {
        return;
    };
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for (node, txns) in &by_node {
        let mut seqs = std::collections::BTreeSet::new();
        for t in txns {
            let parts: Vec<&str> = t.gtid.split('-').collect();
            assert_eq!(parts.len(), 3, "GTID {}", t.gtid);
            assert_eq!(
                parts[0],
                node.to_string(),
                "domain of {} on node {node}",
                t.gtid
            );
            assert_eq!(
                parts[1],
                node.to_string(),
                "server of {} on node {node}",
                t.gtid
            );
            assert!(seqs.insert(parts[2].to_string()), "GTID {} twice", t.gtid);
            for v in &t.values {
                *count.entry(v.clone()).or_default() += 1;
            }
        }
    }
    let ledger = ledger.lock();
    let (mut acked, mut undetermined_in, mut undetermined_out, mut not) = (0, 0, 0, 0);
    for (marker, (_, outcome)) in ledger.iter() {
        let n = count.get(marker).copied().unwrap_or(0);
        match outcome {
            // Two keys, each one row event with the marker as its value.
            Outcome::Acked => {
                assert_eq!(
                    n, 2,
                    "acknowledged {marker} logged {n} times (want 2 rows, once)"
                );
                acked += 1;
            }
            Outcome::NotCommitted => {
                assert_eq!(n, 0, "{marker} did not commit but is logged");
                not += 1;
            }
            Outcome::Undetermined => {
                let Some(client) = store else {
                    unreachable!("checked above: nothing is undetermined without a store")
                };
                let stored = client
                    .txn()
                    .get(format!("a/{marker}").as_bytes())
                    .unwrap()
                    .is_some();
                assert_eq!(
                    n,
                    if stored { 2 } else { 0 },
                    "undetermined {marker}: stored {stored}, logged {n}"
                );
                if stored {
                    undetermined_in += 1;
                } else {
                    undetermined_out += 1;
                }
            }
        }
    }
    eprintln!(
        "binlog check: {} binlog transactions on {} nodes; {acked} acknowledged (each once), {not} not committed (none logged), undetermined {undetermined_in} committed+logged / {undetermined_out} absent",
        by_node.values().map(Vec::len).sum::<usize>(),
        by_node.len()
    );
}

/// Restarts node 1 with its coordinator set to stop at the commit point (primary committed,
/// binlog group not written), commits `marker` there ([`run_one`]), and kills it at that
/// point: the transaction is left in doubt, its node down.
fn leave_in_doubt_on_node_1(c: &ProcCluster, client: &Client, marker: &str) {
    c.kill9(1);
    c.restart_with_env(
        1,
        &[(TXN_CRASH_ENV, txn_crash_points::AFTER_PRIMARY_COMMIT)],
    );
    wait_coordinator_ready(c, client, 1, Duration::from_secs(60));
    let committing = {
        let client = client.clone();
        let marker = marker.to_string();
        std::thread::spawn(move || run_one(&client, Some(1), &marker, false))
    };
    wait_until(Duration::from_secs(30), || {
        c.log(1).contains("reached txn.commit.after_primary_commit")
    });
    c.kill9(1);
    assert_eq!(committing.join().unwrap(), Outcome::Undetermined);
}

/// Waits up to `timeout` for node 1's coordinator to be ready, having logged one in-doubt
/// transaction (the one [`leave_in_doubt_on_node_1`] left, committed), and checks the
/// binlogs: `marker` logged once, with its own values.
fn settled_and_logged_on_node_1(c: &ProcCluster, client: &Client, marker: &str, timeout: Duration) {
    let state = wait_coordinator_ready(c, client, 1, timeout);
    assert!(
        matches!(
            state,
            CoordinatorState::Ready {
                recovered_logged_now: 1,
                ..
            }
        ),
        "{state:?}\n{}",
        c.log(1)
    );
    assert!(
        client
            .txn()
            .get(format!("a/{marker}").as_bytes())
            .unwrap()
            .is_some()
    );
    let ledger: Ledger = Arc::default();
    ledger.lock().insert(
        marker.to_string(),
        (marker.as_bytes().to_vec(), Outcome::Undetermined),
    );
    check_binlog(c, Some(client), &ledger);
}

fn wait_coordinator_ready(
    c: &ProcCluster,
    client: &Client,
    node: u64,
    timeout: Duration,
) -> CoordinatorState {
    let start = Instant::now();
    loop {
        let state = client.coordinator_state(node);
        if let Ok(s @ CoordinatorState::Ready { .. }) = state {
            return s;
        }
        assert!(
            start.elapsed() < timeout,
            "node {node}'s coordinator not ready after {timeout:?}: {state:?}\nlog:\n{}",
            c.log(node)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The workload of test (a): 3 threads, each transaction on the next node's coordinator
/// (round-robin), every 4th rolled back.
fn workload(client: &Client, ledger: &Ledger, threads: usize, per_thread: usize) {
    std::thread::scope(|s| {
        for w in 0..threads {
            let client = client.clone();
            let ledger = ledger.clone();
            s.spawn(move || {
                for n in 0..per_thread {
                    let marker = format!("t{w}-{n}");
                    let outcome = run_one(&client, None, &marker, n % 4 == 3);
                    ledger
                        .lock()
                        .insert(marker.clone(), (marker.into_bytes(), outcome));
                }
            });
        }
    });
}

#[test]
fn commits_through_node_coordinators_are_in_their_binlogs_exactly_once() {
    let c = ProcCluster::start(3, "in-memory");
    let client = c.client();
    let ledger: Ledger = Arc::default();
    workload(&client, &ledger, 3, if long() { 60 } else { 16 });
    let acked = ledger
        .lock()
        .values()
        .filter(|(_, o)| *o == Outcome::Acked)
        .count();
    assert!(acked >= 30, "only {acked} transactions acknowledged");

    // Structured errors travel: an optimistic conflict is a WriteConflict.
    let mut t1 = client.begin_on(1, TxnMode::Optimistic).unwrap();
    t1.put(b"a/conflict", b"t1").unwrap();
    let mut t2 = client.begin_on(2, TxnMode::Optimistic).unwrap();
    t2.put(b"a/conflict", b"t2").unwrap();
    t2.commit().unwrap();
    assert!(
        matches!(
            t1.commit(),
            Err(ClientError::Txn(TxnError::WriteConflict { .. }))
        ),
        "t1 should conflict"
    );
    ledger
        .lock()
        .insert("t1".into(), (b"t1".to_vec(), Outcome::NotCommitted));

    // A transaction left open when its connection closes is rolled back by the node: its
    // pessimistic lock is released at once (the next locker would wait 1 s and fail).
    let mut held = client.begin_on(3, TxnMode::Pessimistic).unwrap();
    held.put(b"a/held", b"left-open").unwrap();
    drop(held);
    let mut next = client.begin_on(1, TxnMode::Pessimistic).unwrap();
    let took = Instant::now();
    next.get_for_update(b"a/held").unwrap();
    next.rollback().unwrap();
    assert!(
        took.elapsed() < Duration::from_secs(1),
        "{:?}",
        took.elapsed()
    );
    let stats = client.router().remote(3).unwrap().server_stats().unwrap();
    assert!(stats.txns_rolled_back_on_close >= 1, "{stats:?}");
    ledger.lock().insert(
        "left-open".into(),
        (b"left-open".to_vec(), Outcome::NotCommitted),
    );

    // Hot-row updates through the nodes' coordinators: every member logged once.
    let mut seed = client.begin(TxnMode::Optimistic).unwrap();
    seed.put(b"h/row", b"0").unwrap();
    seed.commit().unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let client = client.clone();
            s.spawn(move || {
                for _ in 0..5 {
                    client
                        .hot_update(b"h/row", HotOp::add(1), HotHints::hot_update())
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(client.txn().get(b"h/row").unwrap(), Some(b"20".to_vec()));

    // `surgedb kv put` commits through a node's coordinator too: two one-key commits with
    // the same value, so that the marker is logged twice like the others'.
    for key in ["a/cli", "x/cli"] {
        let (ok, out, err) = surgedb(&["kv", "put", "--cluster-dir", c.dir_str(), key, "from-cli"]);
        assert!(ok && out.contains("committed at"), "{out}{err}");
    }
    ledger
        .lock()
        .insert("from-cli".into(), (b"from-cli".to_vec(), Outcome::Acked));

    // The files are read with the nodes stopped (SIGTERM: the binlogs are closed).
    assert_eq!(
        surgedb::local::stop(&c.dir, Duration::from_secs(20))
            .unwrap()
            .len(),
        3
    );
    check_binlog(&c, None, &ledger);
    if let Some(by_node) = logged_by_node(&c) {
        let hot: Vec<String> = by_node
            .values()
            .flatten()
            .flat_map(|t| t.values.clone())
            .filter(|v| v.parse::<u64>().is_ok())
            .collect();
        let mut values: Vec<u64> = hot.iter().map(|v| v.parse().unwrap()).collect();
        values.sort_unstable();
        assert_eq!(
            values,
            (0..=20).collect::<Vec<_>>(),
            "hot-row values logged"
        );
    }

    // `surgedb binlog verify` on the cluster directory: every node's files.
    let (ok, out, err) = surgedb(&["binlog", "verify", c.dir_str()]);
    assert!(ok, "{out}{err}");
    for n in 1..=3 {
        assert!(
            out.contains(&format!("node-{n}/binlog/surge-bin.000001")),
            "{out}"
        );
    }
    assert!(out.contains("(cluster directory)"), "{out}");

    // A damaged file is named with the offset of the bad event.
    let damaged_dir = c.tmp.path().join("damaged");
    std::fs::create_dir_all(&damaged_dir).unwrap();
    let original = c.dir.join("node-1/binlog/surge-bin.000001");
    let copy = damaged_dir.join("surge-bin.000001");
    let mut bytes = std::fs::read(&original).unwrap();
    let at = bytes.len() - 10;
    bytes[at] ^= 0x5a;
    std::fs::write(&copy, bytes).unwrap();
    let (ok, out, err) = surgedb(&[
        "binlog",
        "verify",
        damaged_dir.to_str().unwrap(),
        "--mariadb",
        "off",
    ]);
    assert!(!ok, "{out}");
    assert!(
        err.contains(&copy.display().to_string()) && err.contains("at byte offset"),
        "{err}"
    );
}

#[test]
fn a_node_killed_while_its_coordinator_commits_settles_in_doubt_transactions_at_restart() {
    let c = ProcCluster::start(3, "in-memory");
    let client = c.client();
    let ledger: Ledger = Arc::default();

    // 1. Deterministic: node 1's coordinator stopped at a named point of the commit path,
    // then killed with `kill -9`.
    for (point, committed) in [
        (txn_crash_points::AFTER_PRIMARY_COMMIT, true),
        (txn_crash_points::AFTER_PREWRITE, false),
    ] {
        c.kill9(1);
        c.restart_with_env(1, &[(TXN_CRASH_ENV, point)]);
        wait_coordinator_ready(&c, &client, 1, Duration::from_secs(60));
        let marker = format!("crash-{}", point.rsplit('.').next().unwrap());
        let committing = {
            let client = client.clone();
            let marker = marker.clone();
            std::thread::spawn(move || run_one(&client, Some(1), &marker, false))
        };
        wait_until(Duration::from_secs(30), || {
            assert!(
                !committing.is_finished(),
                "{point}: the commit ended before reaching the point\nlog:\n{}",
                c.log(1)
            );
            c.log(1).contains(&format!("reached {point}"))
        });
        c.kill9(1);
        let outcome = committing.join().unwrap();
        assert_eq!(outcome, Outcome::Undetermined, "{point}");
        ledger
            .lock()
            .insert(marker.clone(), (marker.clone().into_bytes(), outcome));
        c.restart(1);
        let state = wait_coordinator_ready(&c, &client, 1, Duration::from_secs(60));
        match state {
            CoordinatorState::Ready {
                recovered_logged_now,
                recovered_rolled_back,
                ..
            } => {
                if committed {
                    assert_eq!(recovered_logged_now, 1, "{point}: {state:?}");
                } else {
                    assert_eq!(recovered_rolled_back, 1, "{point}: {state:?}");
                }
            }
            other => panic!("{other:?}"),
        }
        let stored = client.txn().get(format!("a/{marker}").as_bytes()).unwrap();
        assert_eq!(stored.is_some(), committed, "{point}: store after recovery");
    }

    // 2. At a random moment: 3 threads commit through node 1's coordinator while its
    // process is killed, then it is restarted.
    let cycles = if long() { 3 } else { 1 };
    for cycle in 0..cycles {
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let client = client.clone();
                let ledger = ledger.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut n = 0;
                    while !stop.load(Ordering::SeqCst) {
                        let marker = format!("k{cycle}-{w}-{n}");
                        let outcome = run_one(&client, Some(1), &marker, n % 5 == 4);
                        ledger
                            .lock()
                            .insert(marker.clone(), (marker.into_bytes(), outcome));
                        n += 1;
                        if outcome != Outcome::Acked {
                            // Node 1 is down: do not spin on refused connections.
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        c.kill9(1);
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        for w in workers {
            w.join().unwrap();
        }
        c.restart(1);
        let state = wait_coordinator_ready(&c, &client, 1, Duration::from_secs(60));
        eprintln!("cycle {cycle}: node 1 restarted: {state:?}");
    }
    let outcomes = ledger.lock().values().fold([0; 3], |mut a, (_, o)| {
        a[*o as usize] += 1;
        a
    });
    eprintln!(
        "outcomes: acked {}, not committed {}, undetermined {}",
        outcomes[0], outcomes[1], outcomes[2]
    );
    assert!(outcomes[0] >= 5, "too few acknowledged: {outcomes:?}");

    check_binlog(&c, Some(&client), &ledger);
}

#[test]
fn a_node_restarted_while_its_peers_are_down_refuses_transactions_until_its_recovery_settles() {
    let c = ProcCluster::start(3, "in-memory");
    let client = c.client();

    // A transaction in doubt on node 1: its primary committed, its binlog group not written.
    leave_in_doubt_on_node_1(&c, &client, "in-doubt");

    // The whole cluster goes down; node 1 comes back alone.
    c.kill9(2);
    c.kill9(3);
    c.restart(1);
    let addr = c.manifest.node(1).unwrap().addr.clone();
    let mut alone = None;
    wait_until(Duration::from_secs(20), || {
        alone = Client::connect(std::slice::from_ref(&addr), Default::default()).ok();
        alone.is_some()
    });
    let alone = alone.unwrap();
    std::thread::sleep(Duration::from_secs(2));
    match alone.coordinator_state(1).unwrap() {
        CoordinatorState::Recovering { .. } => {}
        other => panic!("node 1 alone cannot settle its in-doubt transaction: {other:?}"),
    }
    match alone.begin_on(1, TxnMode::Optimistic) {
        Err(ClientError::Coordinator(surgedb::wire::TxnFailure::NotReady { node: 1, .. })) => {}
        other => panic!("a transaction before recovery: {other:?}"),
    }

    // The peers come back: recovery finishes in the background and logs it.
    c.restart(2);
    c.restart(3);
    settled_and_logged_on_node_1(&c, &client, "in-doubt", Duration::from_secs(90));
}

#[test]
fn with_gc_on_a_node_down_longer_than_the_life_time_still_settles_its_in_doubt_transaction() {
    // Life time 2 s, margin 5 s: the safe point trails the clock by 7 s, collected every
    // second by the meta leader's node.
    let c = ProcCluster::start_with_args(3, "in-memory", common::FAST_GC_ARGS);
    let client = c.client();

    // In doubt on node 1: its primary committed, its binlog group not written. Its
    // start_ts is later than this.
    let before_begin_ms = surge_txn::codec::physical_ms(client.txn().current_ts().unwrap());
    leave_in_doubt_on_node_1(&c, &client, "held");

    // While node 1 is down, both keys get newer versions (the reads settle its locks on
    // the way), and the safe point's clock passes all of them: without node 1's hold, the
    // collection would remove the primary's commit record and the values the recovery
    // must log, and the recovery's reads would be older than the life time.
    for i in 0..5 {
        let mut t = client.txn().begin(TxnMode::Optimistic).unwrap();
        for k in ["a/held", "x/held"] {
            t.put(k.as_bytes(), format!("newer {i}").as_bytes())
                .unwrap();
        }
        t.commit().unwrap();
    }
    let rounds = |c: &ProcCluster| {
        (2..=3)
            .map(|n| c.log(n).matches(": gc below ").count())
            .sum::<usize>()
    };
    let before = rounds(&c);
    std::thread::sleep(Duration::from_secs(9));
    wait_until(Duration::from_secs(30), || rounds(&c) >= before + 3);
    // Every collection stayed below the transaction (node 1's hold, from before it
    // began): without the hold, these rounds' safe points (7 s behind their clocks) would
    // be past it.
    for n in 2..=3 {
        for line in c.log(n).lines().filter(|l| l.contains(": gc below ")) {
            let sp: u64 = line
                .split(": gc below ")
                .nth(1)
                .and_then(|rest| rest.split(':').next())
                .and_then(|sp| sp.parse().ok())
                .unwrap_or_else(|| panic!("unparsed: {line}"));
            assert!(
                surge_txn::codec::physical_ms(sp) < before_begin_ms,
                "node {n} collected past the in-doubt transaction: {line}"
            );
        }
    }

    c.restart(1);
    // Logged with the values it committed, not the newer ones.
    settled_and_logged_on_node_1(&c, &client, "held", Duration::from_secs(60));
    let logs: String = (1..=3).map(|n| c.log(n)).collect();
    assert!(!logs.contains("gc failed"), "{logs}");
}

/// The keys of every lock in `key`'s region, as `ScanLock` on its leader lists them (in-memory
/// and replicated locks).
fn locks_in_region_of(client: &Client, key: &[u8]) -> Vec<Vec<u8>> {
    let id = common::region_of(key);
    let leader = client
        .leader_of_region(id)
        .expect("the region has a leader");
    let status = client.node_status(leader).unwrap();
    let region = status
        .regions
        .iter()
        .find(|r| r.region.id == id)
        .map(|r| r.region.clone())
        .expect("the leader reports the region");
    let request = KvRequest::ScanLock {
        ctx: Context {
            region_id: id,
            epoch: region.epoch,
            gc_hold_ts: 0,
        },
        max_ts: u64::MAX,
        start: region.start,
        end: None,
        limit: 0,
    };
    match client
        .router()
        .service(leader)
        .unwrap()
        .call(request)
        .unwrap()
    {
        KvResponse::Locks { locks } => locks.into_iter().map(|l| l.key).collect(),
        other => panic!("scan_lock: {other:?}"),
    }
}

/// Sets the flag when dropped: the workers of a scope stop even when the scope's own thread
/// panics (a scope waits for its threads before it unwinds).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A node stopped by SIGTERM (`surgedb cluster stop --node`) while its coordinator commits
/// for several clients and one client holds a pessimistic lock in an open transaction. The
/// node's shutdown waits for its sessions before it closes the binlog and stops Raft:
///
/// - the open transaction's lock (kept in memory by node 2, which leads its region) is gone
///   once the stop returns: the session's rollback ran while the node could still reach it
///   (without the rollback the lock stays until some reader resolves it after its TTL);
/// - the restarted coordinator has nothing to settle: every commit in flight ended before
///   the binlog closed (without the wait for the sessions, it had prepared transactions to
///   settle in each of 3 runs);
/// - no binlog file is left flagged in use.
#[test]
fn a_node_stopped_by_sigterm_under_load_closes_its_binlog_after_its_sessions() {
    let c = ProcCluster::start(3, "in-memory");
    let client = c.client();
    wait_coordinator_ready(&c, &client, 1, Duration::from_secs(60));
    let held = b"a/left-open";
    client
        .transfer_leader(common::region_of(held), 2, Duration::from_secs(30))
        .unwrap();
    let mut open = client.begin_on(1, TxnMode::Pessimistic).unwrap();
    assert_eq!(open.get_for_update(held).unwrap(), None);
    open.put(held, b"never committed").unwrap();
    assert!(
        locks_in_region_of(&client, held).contains(&held.to_vec()),
        "the open transaction holds no lock to roll back"
    );
    let stop = AtomicBool::new(false);
    let acked = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        let _stop_workers = StopOnDrop(&stop);
        for w in 0..4 {
            let (client, stop, acked) = (&client, &stop, &acked);
            s.spawn(move || {
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let marker = format!("term-{w}-{i}");
                    let Ok(mut t) = client.begin_on(1, TxnMode::Pessimistic) else {
                        // Node 1 is stopping: do not spin on refused connections.
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    };
                    let wrote = t.put(format!("a/{marker}").as_bytes(), b"v").is_ok()
                        && t.put(format!("x/{marker}").as_bytes(), b"v").is_ok();
                    if wrote && t.commit().is_ok() {
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        wait_until(Duration::from_secs(30), || {
            acked.load(Ordering::SeqCst) >= 20
        });
        c.stop_node(1);
    });
    let log = c.log(1);
    assert!(
        !log.contains("still running after") && !log.contains("did not close cleanly"),
        "node 1's shutdown was not clean:\n{log}"
    );
    let left = locks_in_region_of(&client, held);
    assert!(
        !left.contains(&held.to_vec()),
        "the stopped node's open transaction still holds its lock: {left:?}"
    );

    // The files as node 1 left them, opened in a copy (opening runs recovery, which would
    // change them): none still flagged in use.
    let copy = c.tmp.path().join("node-1-binlog-copy");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(c.dir.join("node-1/binlog")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
        }
    }
    let reopened = surge_binlog::Binlog::open(surge_binlog::BinlogConfig::new(&copy)).unwrap();
    let report = reopened.recovery_report();
    assert!(
        report.in_use_files.is_empty(),
        "binlog files left in use by a SIGTERM stop: {report:?}"
    );
    drop(reopened);

    // Restarted, its coordinator has nothing in doubt.
    c.restart(1);
    match wait_coordinator_ready(&c, &client, 1, Duration::from_secs(60)) {
        CoordinatorState::Ready {
            recovered_logged_now: 0,
            recovered_rolled_back: 0,
            ..
        } => {}
        other => {
            panic!("node 1 restarted after a clean stop had to settle transactions: {other:?}")
        }
    }
    assert_eq!(client.txn().get(held).unwrap(), None);
    drop(open);
    eprintln!(
        "sigterm under load: {} commits acknowledged through node 1 before it stopped",
        acked.load(Ordering::SeqCst)
    );
}
