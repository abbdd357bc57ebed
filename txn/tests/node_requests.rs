//! A `LocalCluster` driven by raw `KvRequest`s: the node side of a pessimistic transaction in
//! each lock mode, without the client.

use std::time::Duration;

mod support;

use surge_txn::{
    ClusterConfig, LocalCluster, LockMode,
    actions::{CommitKind, Mutation, PessimisticAction, TxnProps},
    rpc::{KvRequest, KvResponse, LockKey},
};

use support::{leader_and_ctx as ctx_of, timestamp as ts};

fn lock(c: &LocalCluster, key: &[u8], start_ts: u64) -> KvResponse {
    let (leader, ctx) = ctx_of(c, key);
    c.call(
        leader,
        KvRequest::AcquirePessimisticLock {
            ctx,
            keys: vec![LockKey {
                key: key.to_vec(),
                should_not_exist: false,
            }],
            primary: key.to_vec(),
            start_ts,
            lock_ttl: 3000,
            for_update_ts: start_ts,
            wait_timeout_ms: None,
            need_value: false,
            min_commit_ts: 0,
        },
    )
    .expect("lock call")
}

fn put_commit(c: &LocalCluster, key: &[u8], value: &[u8], start_ts: u64, pessimistic: bool) {
    let (leader, ctx) = ctx_of(c, key);
    let props = TxnProps {
        start_ts,
        primary: key.to_vec(),
        lock_ttl: 3000,
        for_update_ts: if pessimistic { start_ts } else { 0 },
        txn_size: 1,
        min_commit_ts: 0,
        commit_kind: CommitKind::TwoPc,
    };
    let action = if pessimistic {
        PessimisticAction::DoPessimisticCheck
    } else {
        PessimisticAction::SkipPessimisticCheck
    };
    let r = c
        .call(
            leader,
            KvRequest::Prewrite {
                ctx,
                mutations: vec![(
                    Mutation::Put {
                        key: key.to_vec(),
                        value: value.to_vec(),
                    },
                    action,
                )],
                props,
            },
        )
        .expect("prewrite call");
    assert!(matches!(r, KvResponse::Prewrite { .. }), "prewrite: {r:?}");
    let commit_ts = ts(c);
    let r = c
        .call(
            leader,
            KvRequest::Commit {
                ctx,
                keys: vec![key.to_vec()],
                start_ts,
                commit_ts,
            },
        )
        .expect("commit call");
    assert_eq!(r, KvResponse::Done);
}

/// The value of `key` at a fresh timestamp.
fn get(c: &LocalCluster, key: &[u8]) -> Option<Vec<u8>> {
    support::get_at(c, key, ts(c))
}

#[test]
fn a_pessimistic_transaction_commits_in_every_lock_mode() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(4)).expect("cluster");
    for (i, mode) in [LockMode::Sync, LockMode::Pipelined, LockMode::InMemory]
        .into_iter()
        .enumerate()
    {
        c.set_lock_mode(mode);
        let key = format!("k{i}").into_bytes();
        let before = c.counters();
        let start = ts(&c);
        let r = lock(&c, &key, start);
        assert!(
            matches!(r, KvResponse::PessimisticLock { .. }),
            "{mode}: {r:?}"
        );
        let after = c.counters();
        if mode == LockMode::InMemory {
            assert_eq!(after.in_memory_success, before.in_memory_success + 1);
            assert_eq!(
                after.lock_raft_bytes, before.lock_raft_bytes,
                "in-memory lock wrote Raft"
            );
        } else {
            assert!(
                after.lock_raft_bytes > before.lock_raft_bytes,
                "{mode} lock wrote no Raft"
            );
        }
        put_commit(&c, &key, b"v", start, true);
        assert_eq!(get(&c, &key), Some(b"v".to_vec()), "{mode}");
    }
}

#[test]
fn a_second_locker_is_refused_while_the_first_holds_the_in_memory_lock() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(2)).expect("cluster");
    let t1 = ts(&c);
    assert!(matches!(
        lock(&c, b"row", t1),
        KvResponse::PessimisticLock { .. }
    ));
    let t2 = ts(&c);
    match lock(&c, b"row", t2) {
        KvResponse::KeyError(e) => assert!(e.to_string().contains("locked"), "{e}"),
        other => panic!("second lock: {other:?}"),
    }
    put_commit(&c, b"row", b"1", t1, true);
    assert_eq!(get(&c, b"row"), Some(b"1".to_vec()));
}

#[test]
fn stopping_the_leader_loses_in_memory_locks_and_prewrite_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(2)).expect("cluster");
    let t1 = ts(&c);
    assert!(matches!(
        lock(&c, b"row", t1),
        KvResponse::PessimisticLock { .. }
    ));
    // Another transaction commits a write to the row after T1 locked it... which it can only
    // do once the lock is gone with the leader.
    let (leader, _) = ctx_of(&c, b"row");
    c.stop_node(leader).expect("stop");
    c.wait_for_leaders(Duration::from_secs(30))
        .expect("new leader");
    let t2 = ts(&c);
    assert!(matches!(
        lock(&c, b"row", t2),
        KvResponse::PessimisticLock { .. }
    ));
    put_commit(&c, b"row", b"t2", t2, true);
    // T1's prewrite now finds no lock and a newer write: PessimisticLockNotFound.
    let (leader, ctx) = ctx_of(&c, b"row");
    let r = c
        .call(
            leader,
            KvRequest::Prewrite {
                ctx,
                mutations: vec![(
                    Mutation::Put {
                        key: b"row".to_vec(),
                        value: b"t1".to_vec(),
                    },
                    PessimisticAction::DoPessimisticCheck,
                )],
                props: TxnProps {
                    start_ts: t1,
                    primary: b"row".to_vec(),
                    lock_ttl: 3000,
                    for_update_ts: t1,
                    txn_size: 1,
                    min_commit_ts: 0,
                    commit_kind: CommitKind::TwoPc,
                },
            },
        )
        .expect("prewrite call");
    match r {
        KvResponse::KeyError(e) => {
            assert!(e.to_string().contains("not found"), "{e}")
        }
        other => panic!("T1 prewrite: {other:?}"),
    }
    assert_eq!(get(&c, b"row"), Some(b"t2".to_vec()));
    c.restart_node(leader).expect("restart");
}

/// Regression: a lock request waiting on a node held the node's Raft handle for its whole
/// wait, so stopping the node took as long as the wait (5 s here).
#[test]
fn stopping_a_node_does_not_wait_for_lock_waiters() {
    let dir = tempfile::tempdir().expect("dir");
    let cfg = ClusterConfig::new(dir.path()).with_regions(2);
    let c = std::sync::Arc::new(LocalCluster::start(cfg).expect("cluster"));
    let t1 = ts(&c);
    assert!(matches!(
        lock(&c, b"row", t1),
        KvResponse::PessimisticLock { .. }
    ));
    let (leader, ctx) = ctx_of(&c, b"row");
    let waiter = {
        let c = c.clone();
        let t2 = ts(&c);
        std::thread::spawn(move || {
            c.call(
                leader,
                KvRequest::AcquirePessimisticLock {
                    ctx,
                    keys: vec![LockKey {
                        key: b"row".to_vec(),
                        should_not_exist: false,
                    }],
                    primary: b"row".to_vec(),
                    start_ts: t2,
                    lock_ttl: 3000,
                    for_update_ts: t2,
                    wait_timeout_ms: Some(5_000),
                    need_value: false,
                    min_commit_ts: 0,
                },
            )
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let started = std::time::Instant::now();
    c.stop_node(leader).expect("stop");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "stopping the node waited {:?} for a lock waiter",
        started.elapsed()
    );
    let _ = waiter.join();
}
