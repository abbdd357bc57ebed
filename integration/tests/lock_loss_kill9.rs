//! The lock-loss transcript of TiKV 6.0's in-memory pessimistic locks (TiKV RFC 77), with a
//! real `kill -9` of the region leader's node process: T1 locks a row, T2 waits for it, the
//! leader's process dies. With in-memory locks T1's lock died with it: T2 takes the row and
//! commits, and T1's commit fails with `PessimisticLockNotFound`. With sync locks the lock is
//! in the Raft log, the new leader has it, T1 commits and T2 commits after it.

#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{ProcCluster, region_of, wait_until};
use surge_txn::{ClientConfig, TxnError, TxnMode};
use surgedb::{Client, ClientOptions, RemoteConfig};

const KEY: &[u8] = b"acct/7";

/// The two transcripts run one after the other: each is a 3-process cluster with a leader
/// killed, and side by side on a 2-core CI machine (with the rest of the suite) their
/// elections once took long enough for the final read to spend its whole backoff.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

struct Outcome {
    t1: Result<u64, TxnError>,
    t2: Result<u64, TxnError>,
    /// Whether T2 had finished before T1 tried to commit.
    t2_done_before_t1_commit: bool,
    value: Option<Vec<u8>>,
}

fn client(c: &ProcCluster) -> Client {
    // T2's lock request may wait 10 s on the node (longer than the test takes to kill the
    // leader), so the transport's answer timeout must be longer still. A 20 s lock TTL
    // (TiDB's for pessimistic locks): the client heartbeats a primary lock older than half
    // its TTL by a replicated lock put, which would make T1's in-memory lock outlive the
    // leader if a busy machine stretched the steps before the kill past 1.5 s (the 3 s
    // default); with 20 s, none comes before the kill.
    let options = ClientOptions::default()
        .with_remote(RemoteConfig::default().with_request_timeout(Duration::from_secs(15)))
        .with_txn(
            ClientConfig::default()
                .with_wait_for_lock_timeout(Some(Duration::from_secs(10)))
                .with_lock_ttl_ms(20_000),
        );
    Client::connect(&c.manifest.addrs(), options).unwrap()
}

/// What the surviving nodes say of `region` (leader, term), for a failure message.
fn survivors(client: &Client, dead: u64, region: u64) -> String {
    [1, 2, 3]
        .into_iter()
        .filter(|&n| n != dead)
        .map(|n| match client.node_status(n) {
            Ok(s) => format!(
                "node {n}: {:?}",
                s.regions.iter().find(|r| r.region.id == region)
            ),
            Err(e) => format!("node {n}: {e}"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn transcript(lock_mode: &str) -> Outcome {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let c = ProcCluster::start(3, lock_mode);
    let client = client(&c);
    let region = region_of(KEY);
    let leader = client
        .leader_of_region(region)
        .expect("the region has a leader");
    let waits_before = client.node_status(leader).unwrap().counters.lock_waits;

    let mut t1 = client.txn().begin(TxnMode::Pessimistic).unwrap();
    t1.put(KEY, b"t1").unwrap();
    let t2_client = client.txn().clone();
    let t2 = std::thread::spawn(move || {
        let mut t2 = t2_client.begin(TxnMode::Pessimistic)?;
        t2.put(KEY, b"t2")?;
        t2.commit()
    });
    // T2 waits on the leader for T1's lock.
    wait_until(Duration::from_secs(10), || {
        client
            .node_status(leader)
            .is_ok_and(|s| s.counters.lock_waits > waits_before)
    });
    assert!(!t2.is_finished());

    c.kill9(leader);
    // A survivor leads the region before anything else is judged: an election takes about
    // a second here and several on a loaded machine, and every step below is about the
    // locks, not about how long the election took.
    let elected = Instant::now();
    while client.leader_of_region(region).is_none_or(|l| l == leader) {
        assert!(
            elected.elapsed() < Duration::from_secs(60),
            "no survivor leads region {region} 60 s after node {leader} was killed: {}",
            survivors(&client, leader, region)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Give T2 time to reach the new leader: with the lock gone it finishes, with the lock
    // replicated it goes on waiting (5 s show that).
    let patience = if lock_mode == "in-memory" { 30 } else { 5 };
    let deadline = Instant::now() + Duration::from_secs(patience);
    while !t2.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let t2_done_before_t1_commit = t2.is_finished();
    let t1 = t1.commit();
    let t2 = t2.join().unwrap();
    let value = client.txn().get(KEY).unwrap_or_else(|e| {
        panic!(
            "final read: {e} (T1: {t1:?}, T2: {t2:?}; {})",
            survivors(&client, leader, region)
        )
    });
    Outcome {
        t1,
        t2,
        t2_done_before_t1_commit,
        value,
    }
}

#[test]
fn in_memory_locks_die_with_the_leaders_process_and_t1_gets_pessimistic_lock_not_found() {
    let o = transcript("in-memory");
    assert!(o.t2_done_before_t1_commit);
    assert!(
        o.t2.is_ok(),
        "T2 takes the row once the lock is gone: {:?}",
        o.t2
    );
    assert!(
        matches!(o.t1, Err(TxnError::PessimisticLockNotFound { ref key, .. }) if key == KEY),
        "T1: {:?}",
        o.t1
    );
    assert_eq!(o.value.as_deref(), Some(&b"t2"[..]));
}

#[test]
fn sync_locks_survive_the_leaders_process_and_t1_commits_first() {
    let o = transcript("sync");
    assert!(
        !o.t2_done_before_t1_commit,
        "T2 must still wait for T1: {:?}",
        o.t2
    );
    let t1 = o.t1.expect("T1's replicated lock survives the crash");
    let t2 = o.t2.expect("T2 commits after T1 released the row");
    assert!(t1 < t2, "T1 committed at {t1}, T2 at {t2}");
    assert_eq!(o.value.as_deref(), Some(&b"t2"[..]));
}
