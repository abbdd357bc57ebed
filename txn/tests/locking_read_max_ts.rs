//! A pessimistic lock that reads (the value, or the key's existence) is a read at its
//! `for_update_ts`: the region's `max_ts` must cover it, as TiKV's `update_max_ts` in
//! `acquire_pessimistic_lock` does, or a one-phase commit can land below that read once the
//! lock is gone (a pipelined lock reported granted, then refused at apply), and the locker's
//! prewrite amends its lost lock over the commit: a lost update.

use std::time::{Duration, Instant};

mod support;

use surge_txn::actions::{CommitKind, Mutation, PessimisticAction, TxnProps};
use surge_txn::rpc::{Context, KvRequest, KvResponse, LockKey};
use surge_txn::{
    ClientConfig, KeyError, LocalCluster, LockMode, MvccError, TxnClient, TxnMode,
    region_pause_points,
};

fn props(start_ts: u64, primary: &[u8], for_update_ts: u64, commit_kind: CommitKind) -> TxnProps {
    TxnProps {
        start_ts,
        primary: primary.to_vec(),
        lock_ttl: 20_000,
        for_update_ts,
        txn_size: 1,
        min_commit_ts: 0,
        commit_kind,
    }
}

fn prewrite(
    c: &LocalCluster,
    key: &[u8],
    value: &[u8],
    action: PessimisticAction,
    props: TxnProps,
) -> KvResponse {
    let (leader, ctx) = support::leader_and_ctx(c, key);
    c.call(
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
    .expect("prewrite call")
}

/// Node `node`'s Raft commit index of group `region_id`.
fn committed_on(c: &LocalCluster, node: u64, region_id: u64) -> u64 {
    c.node(node)
        .and_then(|n| n.raft_status(region_id))
        .map_or(0, |s| s.committed)
}
/// Locks held in `key`'s region (`ScanLock` on its leader), by key.
fn locked_keys(c: &LocalCluster, key: &[u8]) -> Vec<Vec<u8>> {
    let (leader, ctx) = support::leader_and_ctx(c, key);
    let r = c.region_of(key).expect("region");
    match c
        .call(
            leader,
            KvRequest::ScanLock {
                ctx,
                max_ts: u64::MAX,
                start: r.start.clone(),
                end: None,
                limit: 0,
            },
        )
        .expect("scan lock")
    {
        KvResponse::Locks { locks } => locks.into_iter().map(|l| l.key).collect(),
        other => panic!("scan lock: {other:?}"),
    }
}

/// Raw requests, one region, pipelined locks. The locker L locks `k` with `need_value` at
/// `for_update_ts` F; its action is parked (pause point) after the read, holding the
/// region's lock table, while a split is proposed and committed: the lock is then proposed
/// after the split, answered at accept, and refused at apply (old epoch). A one-phase commit
/// T of `k` with a commit_ts hint taken before L began must now land above F; below it, L's
/// prewrite amends the lost lock over T's commit and T's update is lost.
#[test]
fn a_locking_read_raises_max_ts_so_a_one_phase_commit_lands_above_it() {
    let dir = tempfile::tempdir().expect("dir");
    let c = support::one_region_cluster(dir.path(), LockMode::Pipelined);
    let key = b"\x10k".to_vec();

    // A one-phase commit first: the region's max_ts is synced, from a timestamp below all
    // those taken next.
    let client = TxnClient::new(c.router(), ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key, b"v0").expect("put");
    t.commit().expect("warm-up one-phase commit");

    let ts = || support::timestamp(&c);
    let t_start = ts();
    let t_hint = ts();
    let l_start = ts();
    let l_for_update = ts();

    let region = c.region_of(&key).expect("region");
    let (leader, ctx) = support::leader_and_ctx(&c, &key);
    let followers: Vec<u64> = c
        .node_ids()
        .iter()
        .copied()
        .filter(|n| *n != leader)
        .collect();
    // Everything so far committed on every replica: the next entry is the split's.
    let before_split = committed_on(&c, leader, region.id);
    let deadline = Instant::now() + Duration::from_secs(10);
    while followers
        .iter()
        .any(|n| committed_on(&c, *n, region.id) < before_split)
    {
        assert!(Instant::now() < deadline, "followers never caught up");
        std::thread::sleep(Duration::from_millis(2));
    }
    let leader_node = c.node(leader).expect("leader node");
    let pause = leader_node.pause_points();
    pause.arm(region_pause_points::LOCK_AFTER_READ);
    let lock_req = KvRequest::AcquirePessimisticLock {
        ctx: Context {
            region_id: ctx.region_id,
            epoch: ctx.epoch,
            gc_hold_ts: 0,
        },
        keys: vec![LockKey {
            key: key.clone(),
            should_not_exist: false,
        }],
        primary: key.clone(),
        start_ts: l_start,
        lock_ttl: 20_000,
        for_update_ts: l_for_update,
        wait_timeout_ms: None,
        need_value: true,
        min_commit_ts: l_for_update + 1,
    };
    std::thread::scope(|s| {
        let locker = s.spawn(|| c.call(leader, lock_req));
        assert!(
            pause.wait_parked(
                region_pause_points::LOCK_AFTER_READ,
                Duration::from_secs(10)
            ),
            "the lock request reached its pause point"
        );
        let splitter = s.spawn(|| c.split_region(region.id, Some(b"\x80".to_vec())));
        // The split is committed once a follower knows it is; the leader cannot apply it
        // while the parked lock holds its lock table, and the lock is proposed after it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !followers
            .iter()
            .any(|n| committed_on(&c, *n, region.id) > before_split)
        {
            assert!(Instant::now() < deadline, "the split never committed");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            pause.release(region_pause_points::LOCK_AFTER_READ),
            "the lock request was still parked when the split committed"
        );
        match locker.join().expect("locker thread") {
            Ok(KvResponse::PessimisticLock { results }) => {
                assert_eq!(results[0].value.as_deref(), Some(&b"v0"[..]), "L read v0");
            }
            other => panic!("the pipelined lock is answered at accept: {other:?}"),
        }
        splitter.join().expect("split thread").expect("split");
    });
    assert!(
        !locked_keys(&c, &key).contains(&key),
        "premise: the lock, proposed in the old epoch after the split, was refused at apply"
    );

    // T: one-phase commit of k at the parent (k stays there), hint below L's timestamps.
    let reply = prewrite(
        &c,
        &key,
        b"t",
        PessimisticAction::SkipPessimisticCheck,
        props(t_start, &key, 0, CommitKind::OnePc { commit_ts: t_hint }),
    );
    let KvResponse::Prewrite { one_pc_commit_ts } = reply else {
        panic!("one-phase prewrite: {reply:?}");
    };
    assert!(one_pc_commit_ts > 0, "committed in one phase");

    // L: its prewrite must not amend its lost lock over T's commit.
    let reply = prewrite(
        &c,
        &key,
        b"l",
        PessimisticAction::DoPessimisticCheck,
        props(l_start, &key, l_for_update, CommitKind::TwoPc),
    );
    match reply {
        KvResponse::KeyError(KeyError::Mvcc(MvccError::PessimisticLockNotFound { .. })) => {}
        other => panic!(
            "L read v0 at for_update_ts {l_for_update}, then T committed at {one_pc_commit_ts} \
             (hint {t_hint}, L's start_ts {l_start}); L's prewrite must fail, got {other:?}: \
             T's update would be lost"
        ),
    }
    assert!(
        one_pc_commit_ts > l_for_update,
        "T landed at {one_pc_commit_ts}, at or below L's locking read at {l_for_update}"
    );
}
