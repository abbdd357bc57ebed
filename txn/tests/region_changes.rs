//! Region changes with in-memory locks, after TiKV's tests of the same names: voluntary leader
//! transfer, split and merge migrate the locks (none lost); a transfer that does not happen and
//! a refused merge leave the region writable.

use std::time::Duration;

mod support;

use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, LockMode, NodeCounters, TxnClient, TxnError, TxnMode,
};

fn cluster(regions: usize) -> (tempfile::TempDir, LocalCluster) {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(
        ClusterConfig::new(dir.path())
            .with_regions(regions)
            .with_lock_mode(LockMode::InMemory),
    )
    .expect("cluster");
    (dir, c)
}

fn client(c: &LocalCluster) -> TxnClient {
    TxnClient::new(c.router(), ClientConfig::default())
}

/// The keys of every lock of the region holding `key` (memory and replicated, each once).
fn locks_in_region_of(c: &LocalCluster, key: &[u8]) -> Vec<Vec<u8>> {
    support::locks_in_region_of(c, key)
        .into_iter()
        .map(|l| l.key)
        .collect()
}

/// Bytes of in-memory locks the region's leader holds for `key`'s region.
fn memory_locks_of(c: &LocalCluster, key: &[u8]) -> usize {
    let r = c.region_of(key).expect("region");
    let leader = c.leader_of_group(r.id).expect("leader");
    match c.call(leader, KvRequest::NodeStatus).expect("status") {
        KvResponse::Status(s) => s
            .regions
            .iter()
            .find(|x| x.region.id == r.id)
            .map_or(0, |x| x.memory_locks),
        other => panic!("status: {other:?}"),
    }
}

fn lost(c: &NodeCounters) -> u64 {
    c.locks_lost_on_leader_loss
}

#[test]
fn test_propose_in_memory_pessimistic_locks_on_transfer() {
    let (_d, c) = cluster(2);
    let cl = client(&c);
    let mut t1 = cl.begin(TxnMode::Pessimistic).expect("begin");
    t1.put(b"\x10k1", b"v1").expect("lock");
    assert_eq!(memory_locks_of(&c, b"\x10k1"), 1, "lock is in memory");
    let r = c.region_of(b"\x10k1").expect("region");
    let from = c.leader_of_group(r.id).expect("leader");
    let to = c
        .node_ids()
        .iter()
        .copied()
        .find(|n| *n != from)
        .expect("other node");
    c.transfer_leader(r.id, to, Duration::from_secs(20))
        .expect("transfer");
    // The new leader holds the lock as a replicated record.
    assert_eq!(locks_in_region_of(&c, b"\x10k1"), vec![b"\x10k1".to_vec()]);
    let counters = c.counters();
    assert!(counters.locks_migrated_on_transfer >= 1, "{counters:?}");
    // Another transaction still cannot take the key.
    let cfg = ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_millis(100)));
    let cl2 = TxnClient::new(c.router(), cfg);
    let mut t2 = cl2.begin(TxnMode::Pessimistic).expect("begin");
    assert!(matches!(
        t2.put(b"\x10k1", b"v2"),
        Err(TxnError::LockWaitTimeout { .. })
    ));
    t2.rollback();
    t1.commit()
        .expect("T1 commits after the transfer: its lock was migrated");
    assert_eq!(cl.get(b"\x10k1").expect("get"), Some(b"v1".to_vec()));
    assert_eq!(
        lost(&c.counters()),
        0,
        "no lock lost on a voluntary transfer"
    );
}

#[test]
fn test_memory_pessimistic_locks_status_after_transfer_leader_failure() {
    let dir = tempfile::tempdir().expect("dir");
    let mut cfg = ClusterConfig::new(dir.path()).with_regions(2);
    cfg.transfer_timeout = Duration::from_millis(500);
    let c = LocalCluster::start(cfg).expect("cluster");
    let cl = client(&c);
    let mut t1 = cl.begin(TxnMode::Pessimistic).expect("begin");
    t1.put(b"\x10a", b"1").expect("lock");
    let r = c.region_of(b"\x10a").expect("region");
    let from = c.leader_of_group(r.id).expect("leader");
    let to = c
        .node_ids()
        .iter()
        .copied()
        .find(|n| *n != from)
        .expect("other");
    // The transferee cannot be reached: the transfer does not happen.
    let others: Vec<u64> = c.node_ids().iter().copied().filter(|n| *n != to).collect();
    c.network().partition(&[to], &others);
    let resp = c
        .node(from)
        .expect("leader node")
        .handle(KvRequest::TransferLeader {
            region_id: r.id,
            to,
        });
    assert!(matches!(resp, KvResponse::RegionError(_)), "{resp:?}");
    c.network().heal();
    assert_eq!(c.leader_of_group(r.id), Some(from), "leader unchanged");
    // Back to Normal: new locks go to memory again.
    let before = c.counters().in_memory_success;
    let mut t2 = cl.begin(TxnMode::Pessimistic).expect("begin");
    t2.put(b"\x10b", b"2").expect("lock");
    assert_eq!(
        c.counters().in_memory_success,
        before + 1,
        "table writable again"
    );
    t1.commit().expect("commit t1");
    t2.commit().expect("commit t2");
}

#[test]
fn test_split_with_in_memory_pessimistic_locks() {
    let (_d, c) = cluster(1);
    let cl = client(&c);
    let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
    t.put(b"a", b"1").expect("lock a");
    t.put(b"z", b"2").expect("lock z");
    let r = c.region_of(b"a").expect("region");
    let regions = c.split_region(r.id, Some(b"m".to_vec())).expect("split");
    assert_eq!(regions.len(), 2);
    assert_ne!(
        c.region_of(b"a").expect("a").id,
        c.region_of(b"z").expect("z").id
    );
    c.wait_for_leaders(Duration::from_secs(30))
        .expect("leaders");
    // Each region's leader holds its lock in memory.
    assert_eq!(memory_locks_of(&c, b"a"), 1);
    assert_eq!(memory_locks_of(&c, b"z"), 1);
    assert!(c.counters().locks_migrated_on_split >= 1);
    t.commit().expect("commit after the split");
    assert_eq!(cl.get(b"z").expect("get"), Some(b"2".to_vec()));
    assert_eq!(lost(&c.counters()), 0, "no lock lost on a split");
}

#[test]
fn test_split_pessimistic_locks_with_concurrent_prewrite_gets_epoch_errors() {
    let (_d, c) = cluster(1);
    let cl = client(&c);
    let old = c.region_of(b"k").expect("region");
    let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
    t.put(b"k", b"1").expect("lock");
    c.split_region(old.id, Some(b"m".to_vec())).expect("split");
    let leader = c.leader_of_group(old.id).expect("leader");
    // A request made for the old epoch is refused with an epoch error.
    let resp = c
        .call(
            leader,
            KvRequest::Get {
                ctx: surge_txn::rpc::Context {
                    region_id: old.id,
                    epoch: old.epoch,
                    gc_hold_ts: 0,
                },
                key: b"k".to_vec(),
                version: 1,
                bypass_locks: vec![],
            },
        )
        .expect("call");
    assert!(
        matches!(
            resp,
            KvResponse::RegionError(surge_txn::RegionError::EpochNotMatch { .. })
        ),
        "{resp:?}"
    );
    // The client follows the new epoch; its prewrite finds the migrated lock.
    t.commit()
        .expect("commit follows the epoch, no PessimisticLockNotFound");
}

#[test]
fn test_propose_in_memory_pessimistic_locks_on_merge() {
    let (_d, c) = cluster(2);
    let cl = client(&c);
    let source = c.region_of(b"\x10a").expect("source"); // [0x80.., ..) is the other
    let target = c.region_of(b"\x90a").expect("target");
    assert_ne!(source.id, target.id);
    let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
    t.put(b"\x10a", b"1").expect("lock in source");
    t.put(b"\x90a", b"2").expect("lock in target");
    let merged = c.merge_regions(source.id, target.id).expect("merge");
    assert!(merged.contains(b"\x10a") && merged.contains(b"\x90a"));
    assert_eq!(c.region_of(b"\x10a").expect("region").id, target.id);
    // The source's lock is now a replicated lock of the target; the target's own lock
    // stays in memory.
    let locks = locks_in_region_of(&c, b"\x10a");
    assert_eq!(locks, vec![b"\x10a".to_vec(), b"\x90a".to_vec()]);
    assert!(c.counters().locks_migrated_on_merge >= 1);
    t.commit().expect("commit after the merge");
    assert_eq!(cl.get(b"\x10a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(lost(&c.counters()), 0);
}

#[test]
fn test_merge_pessimistic_locks_when_gap_is_too_large() {
    let dir = tempfile::tempdir().expect("dir");
    let mut cfg = ClusterConfig::new(dir.path()).with_regions(2);
    cfg.merge_max_lock_bytes = 64; // one lock does not fit
    let c = LocalCluster::start(cfg).expect("cluster");
    let cl = client(&c);
    let source = c.region_of(b"\x10a").expect("source");
    let target = c.region_of(b"\x90a").expect("target");
    let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
    t.put(b"\x10a", &[b'x'; 64]).expect("lock");
    let err = c
        .merge_regions(source.id, target.id)
        .expect_err("merge refused");
    assert!(err.to_string().contains("merge refused"), "{err}");
    // The source is writable again and in-memory locking resumes.
    let before = c.counters().in_memory_success;
    t.put(b"\x10b", b"2").expect("lock after the refused merge");
    assert_eq!(c.counters().in_memory_success, before + 1);
    t.commit().expect("commit");
    assert_eq!(
        c.region_of(b"\x10a").expect("region").id,
        source.id,
        "not merged"
    );
}

#[test]
fn test_merge_pessimistic_locks_repeated_merge() {
    let (_d, c) = cluster(4);
    let cl = client(&c);
    let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
    for k in [&b"\x10a"[..], b"\x50a", b"\x90a", b"\xd0a"] {
        t.put(k, b"v").expect("lock");
    }
    let r = |k: &[u8]| c.region_of(k).expect("region").id;
    c.merge_regions(r(b"\x10a"), r(b"\x50a"))
        .expect("first merge");
    c.merge_regions(r(b"\x50a"), r(b"\x90a"))
        .expect("second merge");
    c.merge_regions(r(b"\xd0a"), r(b"\x90a"))
        .expect("third merge");
    assert_eq!(c.regions().len(), 1);
    t.commit().expect("commit after three merges");
    for k in [&b"\x10a"[..], b"\x50a", b"\x90a", b"\xd0a"] {
        assert_eq!(cl.get(k).expect("get"), Some(b"v".to_vec()));
    }
    assert_eq!(lost(&c.counters()), 0);
}

#[test]
fn split_and_merge_survive_a_full_restart() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(2)).expect("c");
        let cl = client(&c);
        for k in [&b"\x10a"[..], b"\x20a", b"\x90a"] {
            let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
            t.put(k, k).expect("put");
            t.commit().expect("commit");
        }
        let r = c.region_of(b"\x10a").expect("region");
        c.split_region(r.id, Some(b"\x20".to_vec())).expect("split");
        let r2 = c.region_of(b"\x20a").expect("region");
        let r3 = c.region_of(b"\x90a").expect("region");
        c.merge_regions(r2.id, r3.id).expect("merge");
        assert_eq!(c.regions().len(), 2);
    }
    let c = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(2)).expect("restart");
    assert_eq!(c.regions().len(), 2, "{:?}", c.regions());
    let cl = client(&c);
    for k in [&b"\x10a"[..], b"\x20a", b"\x90a"] {
        assert_eq!(cl.get(k).expect("get"), Some(k.to_vec()), "key {k:?}");
    }
}

#[test]
fn a_region_that_grows_past_the_split_size_splits_by_itself() {
    let dir = tempfile::tempdir().expect("dir");
    let mut cfg = ClusterConfig::new(dir.path()).with_regions(1);
    cfg.split_size = Some(64 << 10);
    let c = LocalCluster::start(cfg).expect("cluster");
    let cl = client(&c);
    for batch in 0..10u32 {
        let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
        for i in 0..20u32 {
            t.put(format!("k{batch:03}{i:03}").as_bytes(), &[b'v'; 512])
                .expect("put");
        }
        t.commit().expect("commit");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.regions().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no split by size");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every key is still readable through the new regions.
    for batch in 0..10u32 {
        let k = format!("k{batch:03}000");
        assert_eq!(
            cl.get(k.as_bytes()).expect("get"),
            Some(vec![b'v'; 512]),
            "{k}"
        );
    }
}

#[test]
fn test_split_with_concurrent_pessimistic_locking_never_loses_a_lock() {
    let (_d, c) = cluster(1);
    let cl = client(&c);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let committed = std::sync::atomic::AtomicUsize::new(0);
    let lock_not_found = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..3u8 {
            let cl = cl.clone();
            let (stop, committed, lock_not_found) = (&stop, &committed, &lock_not_found);
            s.spawn(move || {
                let mut i = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    i += 1;
                    let mut t = cl.begin(TxnMode::Pessimistic).expect("begin");
                    // Keys all over the key space, so every split cuts through them.
                    let written = (0..4u8).try_for_each(|k| {
                        t.put(&[k * 60 + w, b'k', (i % 7) as u8], &i.to_be_bytes())
                    });
                    let r = match written {
                        Ok(()) => t.commit(),
                        Err(e) => {
                            t.rollback();
                            Err(e)
                        }
                    };
                    match r {
                        Ok(_) => {
                            committed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(TxnError::PessimisticLockNotFound { .. }) => {
                            lock_not_found.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        // A failed commit released its locks; a failed put was rolled back.
                        Err(_) => {}
                    }
                }
            });
        }
        for key in [&[60u8][..], &[120], &[180], &[30], &[200]] {
            std::thread::sleep(Duration::from_millis(150));
            let r = c.region_of(key).expect("region");
            c.split_region(r.id, Some(key.to_vec())).expect("split");
        }
        std::thread::sleep(Duration::from_millis(150));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    assert_eq!(c.regions().len(), 6);
    assert!(committed.into_inner() > 0, "nothing committed");
    assert_eq!(
        lock_not_found.into_inner(),
        0,
        "a split made a prewrite miss its lock: commands racing a split must get epoch errors"
    );
    assert_eq!(lost(&c.counters()), 0);
}

/// A one-phase commit retried at a merge's target must not land below a read the merge's
/// source served. The client fetches a commit_ts hint before it sends a one-phase prewrite,
/// and keeps it when an epoch error sends the prewrite on to the merged region; the target's
/// `max_ts` never saw the source's reads. Here: the hint `h`, then a read of the key at the
/// source at `t > h`, the merge, and the prewrite at the target with hint `h`: its commit_ts
/// must be above `t`, or a snapshot at `t` that read the key before the write would see the
/// write afterwards (the bank workload's "a snapshot saw the total change").
#[test]
fn a_one_phase_commit_at_a_merge_target_lands_above_the_sources_reads() {
    let (_d, c) = cluster(2);
    let ts = || support::timestamp(&c);
    let key = b"\x10hot".to_vec();
    // The target serves a one-phase commit first, so its `max_ts` is synced (low).
    client(&c)
        .begin(TxnMode::Optimistic)
        .and_then(|mut t| t.put(b"\x90warm", b"1").map(|()| t))
        .and_then(|t| t.commit())
        .expect("warm-up commit at the target");

    let start_ts = ts();
    let hint = ts();
    let read_ts = ts();
    assert_eq!(
        support::get_at(&c, &key, read_ts),
        None,
        "read at the source"
    );

    let source = c.region_of(&key).expect("source").id;
    let target = c.region_of(b"\x90warm").expect("target").id;
    c.merge_regions(source, target).expect("merge");

    let (leader, ctx) = support::leader_and_ctx(&c, &key);
    assert_eq!(ctx.region_id, target);
    let reply = c
        .call(
            leader,
            KvRequest::Prewrite {
                ctx,
                mutations: vec![(
                    surge_txn::actions::Mutation::Put {
                        key: key.clone(),
                        value: b"late".to_vec(),
                    },
                    surge_txn::actions::PessimisticAction::SkipPessimisticCheck,
                )],
                props: surge_txn::actions::TxnProps {
                    start_ts,
                    primary: key.clone(),
                    lock_ttl: 3000,
                    for_update_ts: 0,
                    txn_size: 1,
                    min_commit_ts: 0,
                    commit_kind: surge_txn::actions::CommitKind::OnePc { commit_ts: hint },
                },
            },
        )
        .expect("one-phase prewrite at the target");
    let KvResponse::Prewrite { one_pc_commit_ts } = reply else {
        panic!("prewrite: {reply:?}");
    };
    assert!(
        one_pc_commit_ts > read_ts,
        "the one-phase commit landed at {one_pc_commit_ts}, at or below the source's read at {read_ts} (hint {hint})"
    );
}

/// A transaction the client believes is in one region (its cache predates a split) starts as a
/// one-phase commit; the region refuses it (epoch), and the keys turn out to be in two. It must
/// not commit each region's part as its own one-phase commit (two commit timestamps: a
/// snapshot between them sees half of it): it finishes as one two-phase commit, so at
/// `commit_ts - 1` neither write is visible and at `commit_ts` both are.
#[test]
fn a_one_phase_commit_that_meets_a_split_commits_both_sides_at_one_timestamp() {
    let (_d, c) = cluster(1);
    let cl = client(&c);
    let (left, right) = (b"\x10left".to_vec(), b"\x90right".to_vec());
    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    t.put(&left, b"0").expect("put");
    t.put(&right, b"0").expect("put");
    t.commit()
        .expect("load: one region, the client's cache learns it");
    let region = c.region_of(&left).expect("region");
    assert!(
        region.contains(&right),
        "both keys in one region before the split"
    );
    let one_pc_before = cl.counters().one_pc_commits;

    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    t.put(&left, b"1").expect("put");
    t.put(&right, b"1").expect("put");
    c.split_region(region.id, Some(b"\x80".to_vec()))
        .expect("split between the keys, behind the client's back");
    let commit_ts = t.commit().expect("commit across the split");
    assert_ne!(
        c.region_of(&left).expect("left").id,
        c.region_of(&right).expect("right").id
    );
    assert_eq!(
        cl.counters().one_pc_commits,
        one_pc_before,
        "committed as one-phase commits"
    );

    let read_at = |key: &[u8], version: u64| support::get_at(&c, key, version);
    for (ts, want) in [(commit_ts - 1, b"0"), (commit_ts, b"1")] {
        assert_eq!(
            (read_at(&left, ts), read_at(&right, ts)),
            (Some(want.to_vec()), Some(want.to_vec())),
            "both sides at ts {ts} (commit_ts {commit_ts})"
        );
    }
}

/// The region `region_id` as its leader has it now (its range and epoch), from the leader's
/// status: the meta group may not have been told of a change.
fn region_at_leader(c: &LocalCluster, region_id: u64) -> surge_txn::RegionInfo {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(leader) = c.leader_of_group(region_id)
            && let Ok(KvResponse::Status(s)) = c.call(leader, KvRequest::NodeStatus)
            && let Some(r) = s.regions.iter().find(|r| r.region.id == region_id)
        {
            return r.region.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "region {region_id} has no leader"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Moves the leadership of `region_id` to a node other than `not`; returns that node.
fn lead_elsewhere(c: &LocalCluster, region_id: u64, not: u64) -> u64 {
    let to = c
        .node_ids()
        .iter()
        .copied()
        .find(|n| *n != not)
        .expect("another node");
    c.transfer_leader(region_id, to, Duration::from_secs(20))
        .expect("transfer");
    to
}

/// A merge whose `CommitMerge` gets no answer (the reply lost, as over TCP when a request
/// times out after it was delivered) must not roll back: the target may still apply it, and a
/// source that took writes after a rollback would lose them to that late apply. Here every
/// `CommitMerge` sent through the router is held, undelivered, for longer than the merge's
/// old deadline (the proposal timeout, 5 s); meanwhile a client writes a key of the source;
/// then the held requests are delivered, late. The source must refuse that write (it does
/// not know the merge's outcome, and an acknowledged write could be overwritten by the late
/// apply), the key must keep its old value in the target, and the merge must finish.
#[test]
// `ClientConfig` is becoming `#[non_exhaustive]`: set fields on a default, no struct literal.
#[allow(clippy::field_reassign_with_default)]
fn a_merge_whose_commit_gets_no_answer_neither_rolls_back_nor_loses_a_write() {
    let (_d, c) = cluster(2);
    let key = b"\x10late".to_vec();
    let cl = client(&c);
    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key, b"v0").expect("put");
    t.commit().expect("load");
    let source = c.region_of(&key).expect("source").id;
    let target = c.region_of(b"\x90").expect("target").id;
    assert_ne!(source, target);
    // The target's leader on another node than the source's, so the source's leader (the
    // merge's coordinator) reaches it through the router.
    let coordinator = c.leader_of_group(source).expect("source leader");
    lead_elsewhere(&c, target, coordinator);

    c.hold_requests("commit_merge");
    std::thread::scope(|s| {
        // Straight to the coordinator: `LocalCluster::merge_regions` would retry a merge
        // that answered `NotLeader` (the target's last answer) and so hide the window.
        let node = c.node(coordinator).expect("coordinator node");
        let merge = s.spawn(move || node.handle(KvRequest::MergeRegions { source, target }));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while c.held_requests() == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "no CommitMerge was sent"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Longer than the merge used to wait for an answer before rolling back.
        let waited = std::time::Instant::now();
        while !merge.is_finished() && waited.elapsed() < Duration::from_secs(6) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut cfg = ClientConfig::default();
        cfg.max_backoff = Duration::from_secs(1);
        let writer = TxnClient::new(c.router(), cfg);
        let mut t = writer.begin(TxnMode::Optimistic).expect("begin");
        t.put(&key, b"v1").expect("put");
        // A failed commit cleans up after itself (`commit` takes the transaction).
        let acked = t.commit().is_ok();
        let delivered = c.deliver_held_requests();
        assert!(delivered > 0, "the held CommitMerge was not delivered");
        let merged = merge.join().expect("merge thread");

        let holder = region_at_leader(&c, target);
        assert!(
            holder.contains(&key),
            "the late CommitMerge applied: the target holds the key ({holder:?})"
        );
        let leader = c.leader_of_group(target).expect("target leader");
        let read = c
            .call(
                leader,
                KvRequest::Get {
                    ctx: surge_txn::rpc::Context {
                        region_id: holder.id,
                        epoch: holder.epoch,
                        gc_hold_ts: 0,
                    },
                    key: key.clone(),
                    version: support::timestamp(&c),
                    bypass_locks: vec![],
                },
            )
            .expect("get");
        let KvResponse::Get { value } = read else {
            panic!("get: {read:?}");
        };
        assert!(
            matches!(merged, KvResponse::RegionsChanged { .. }),
            "the merge did not finish once the target answered: {merged:?}"
        );
        // An acknowledged write here would be one the late CommitMerge may overwrite with
        // the source's older data (a lost write if the read shows v0): the source must
        // refuse writes while its merge's outcome is unknown.
        assert!(
            !acked,
            "the source took a write while its merge's outcome was unknown (the target now \
             reads {value:?}; v0 means the acknowledged v1 was lost)"
        );
        assert_eq!(
            value.as_deref(),
            Some(&b"v0"[..]),
            "the refused write left a value behind"
        );
    });
    assert_eq!(c.region_of(&key).expect("region").id, target);
    assert_eq!(cl.get(&key).expect("get"), Some(b"v0".to_vec()));
}

/// A `CommitMerge` sent again after the target applied it (its first answer lost) is
/// answered as applied, not refused as "not adjacent": the coordinator must not take the
/// refusal for a merge that did not happen. Raw requests: a merge, then the same
/// `CommitMerge` again to the target's leader; the target's epoch stays (not applied twice).
#[test]
fn a_commit_merge_sent_again_after_it_applied_is_answered_as_applied() {
    let (_d, c) = cluster(2);
    let source = c.region_of(b"\x10").expect("source");
    let target = c.region_of(b"\x90").expect("target");
    let merged = c.merge_regions(source.id, target.id).expect("merge");
    // The source as the coordinator sent it: its epoch moved at PrepareMerge.
    let mut sent = source.clone();
    sent.epoch.version += 1;
    let leader = c.leader_of_group(target.id).expect("target leader");
    let reply = c
        .call(
            leader,
            KvRequest::CommitMerge {
                target: target.id,
                source: sent,
                data: Vec::new(),
                target_version: target.epoch.version,
            },
        )
        .expect("commit merge again");
    match reply {
        KvResponse::RegionsChanged { regions, .. } => {
            assert_eq!(regions.len(), 1, "{regions:?}");
            assert!(
                regions[0].contains(b"\x10") && regions[0].contains(b"\x90"),
                "{regions:?}"
            );
        }
        other => panic!("a CommitMerge that already applied was refused: {other:?}"),
    }
    assert_eq!(
        region_at_leader(&c, target.id).epoch,
        merged.epoch,
        "applied twice"
    );
}

/// The other way a merge with no answer ends: the target moves on without the source (here
/// it splits, on its far side, so it still borders the source). This node's replica of the
/// target shows it, so the merge is rolled back at once; the source takes writes again, and
/// the `CommitMerge` still undelivered, delivered late, must not apply (it was proposed for a
/// version the target left) and discard them.
#[test]
fn a_merge_whose_target_moved_on_rolls_back_and_its_late_commit_never_applies() {
    let (_d, c) = cluster(2);
    let key = b"\x10moved".to_vec();
    let cl = client(&c);
    let source = c.region_of(&key).expect("source").id;
    let target = c.region_of(b"\x90").expect("target").id;
    let coordinator = c.leader_of_group(source).expect("source leader");
    lead_elsewhere(&c, target, coordinator);

    c.hold_requests("commit_merge");
    let node = c.node(coordinator).expect("coordinator node");
    let merge = std::thread::spawn(move || node.handle(KvRequest::MergeRegions { source, target }));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.held_requests() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no CommitMerge was sent"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let split = c
        .split_region(target, Some(b"\xc0".to_vec()))
        .expect("split the target");
    let merged = merge.join().expect("merge thread");
    assert!(
        matches!(merged, KvResponse::RegionError(_)),
        "the merge did not fail: {merged:?}"
    );
    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key, b"after the rollback").expect("put");
    t.commit().expect("the source takes writes again");

    assert!(c.deliver_held_requests() > 0, "nothing was held");
    assert_eq!(
        region_at_leader(&c, target),
        split[0],
        "the late CommitMerge changed the target"
    );
    assert_eq!(c.region_of(&key).expect("region").id, source);
    assert_eq!(
        cl.get(&key).expect("get"),
        Some(b"after the rollback".to_vec())
    );
    // Rolled back because the target's replica here showed it moved on, not for want of
    // an answer.
    match &merged {
        KvResponse::RegionError(surge_txn::RegionError::ServerIsBusy { reason, .. }) => {
            assert!(reason.contains("merge refused"), "{reason}");
        }
        other => panic!("the merge was not refused: {other:?}"),
    }
}

/// A merge whose driver is cut off right after `PrepareMerge` applied (its node partitioned
/// away and stopped) still completes: the source's new leader finds the region merging with
/// nobody driving it and drives the merge again (TiKV's merge-check tick). Before, the source
/// refused every command for good.
#[test]
fn a_merge_left_without_its_driver_is_resumed_by_the_new_leader() {
    let (_d, c) = cluster(2);
    let cl = client(&c);
    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    t.put(b"\x10a", b"source row").expect("put");
    t.put(b"\x90a", b"target row").expect("put");
    t.commit().expect("commit");
    let source = c.region_of(b"\x10a").expect("source");
    let target = c.region_of(b"\x90a").expect("target");
    let driver = c.leader_of_group(source.id).expect("source leader");
    let node = c.node(driver).expect("driver node");
    let pause = node.pause_points();
    pause.arm(surge_txn::region_pause_points::MERGE_AFTER_PREPARE);
    let merging = {
        let node = node.clone();
        let (source, target) = (source.id, target.id);
        std::thread::spawn(move || node.handle(KvRequest::MergeRegions { source, target }))
    };
    assert!(
        pause.wait_parked(
            surge_txn::region_pause_points::MERGE_AFTER_PREPARE,
            Duration::from_secs(10)
        ),
        "the merge never prepared"
    );
    // The driver's node is cut off and stops: nobody there will settle the merge.
    let others: Vec<u64> = c
        .node_ids()
        .iter()
        .copied()
        .filter(|n| *n != driver)
        .collect();
    c.network().partition(&[driver], &others);
    node.stop();
    assert!(pause.release(surge_txn::region_pause_points::MERGE_AFTER_PREPARE));
    let answer = merging.join().expect("driver thread");
    assert!(
        matches!(answer, KvResponse::RegionError(_)),
        "the stopped driver cannot know the outcome: {answer:?}"
    );
    // Another node leads the source now, finds it merging and drives the merge to its end.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = c.region_of(b"\x10a").map(|r| r.id);
        if now == Some(target.id) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the source {} is still {now:?} after 20 s",
            source.id
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut t = cl.begin(TxnMode::Optimistic).expect("begin");
    assert_eq!(t.get(b"\x10a").expect("get"), Some(b"source row".to_vec()));
    t.put(b"\x10b", b"after the merge").expect("put");
    t.commit().expect("a write to the merged range commits");
}

/// How many groups (data regions and the meta group) `node` leads.
fn groups_led(c: &LocalCluster, node: u64) -> usize {
    let n = c.node(node).expect("node");
    let regions = c
        .regions()
        .iter()
        .filter(|r| n.is_region_leader(r.id))
        .count();
    regions + usize::from(n.is_meta_leader())
}

#[test]
fn evicting_leaders_before_a_stop_moves_every_group_with_its_in_memory_locks() {
    let (_d, c) = cluster(4);
    let cl = client(&c);
    let mut t1 = cl.begin(TxnMode::Pessimistic).expect("begin");
    t1.put(b"\x10k1", b"v1").expect("lock");
    assert_eq!(memory_locks_of(&c, b"\x10k1"), 1, "lock is in memory");
    let from = c.leader_of(b"\x10k1").expect("leader");
    let led = groups_led(&c, from);
    let out = c
        .node(from)
        .expect("node")
        .evict_leaders(Duration::from_secs(20));
    assert_eq!((out.led, out.moved), (led, led), "{out:?}");
    assert!(out.locks_moved >= 1 && out.refused_by.is_empty(), "{out:?}");
    assert_eq!(groups_led(&c, from), 0, "{out:?}");
    c.stop_node(from).expect("stop");
    t1.commit()
        .expect("T1 commits after its leader stopped: the lock moved before the stop");
    assert_eq!(cl.get(b"\x10k1").expect("get"), Some(b"v1".to_vec()));
    assert_eq!(lost(&c.counters()), 0, "no lock lost");
}

#[test]
fn evicting_leaders_offers_nothing_more_to_a_peer_that_did_not_take_one() {
    let (_d, c) = cluster(4);
    let ids = c.node_ids().to_vec();
    let down = ids[0];
    c.stop_node(down).expect("stop");
    c.wait_for_leaders(Duration::from_secs(20))
        .expect("the two others lead every group");
    // The survivor leading more groups evicts: at least three of the five.
    let from = *ids[1..]
        .iter()
        .max_by_key(|n| groups_led(&c, **n))
        .expect("survivor");
    let led = groups_led(&c, from);
    assert!(led >= 3, "{led}");
    let out = c
        .node(from)
        .expect("node")
        .evict_leaders(Duration::from_secs(20));
    assert_eq!((out.led, out.moved), (led, led), "{out:?}");
    // The stopped node cost one wait at most, not one per group.
    assert!(
        out.refused_by.len() <= 1 && out.refused_by.iter().all(|n| *n == down),
        "{out:?}"
    );
    assert!(out.elapsed < Duration::from_secs(5), "{out:?}");
    assert_eq!(groups_led(&c, from), 0, "{out:?}");
}
