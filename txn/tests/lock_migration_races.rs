//! A leader transfer or a merge migrates the in-memory pessimistic locks by proposing them as
//! lock-CF records. A write of one of those keys that runs between the table handing out its
//! locks and their proposal (a prewrite that had already read the memory lock, say) must not
//! be overwritten by the stale copy: the log would hold the prewrite and then the old
//! pessimistic lock, the commit would find a pessimistic lock and write no record, and an
//! acknowledged prewrite would be lost (the transaction's atomicity with it, on a primary).
//!
//! Each test parks the two threads at named points (`surge_txn::region_pause_points`) to put
//! them in exactly that order: the prewrite has run its action, the migration has taken its
//! locks; the prewrite is proposed and applied first, then the migration goes on.
//!
//! The migration's entry is stamped with the region's version and refused at apply if a split
//! moved it first; the transfer or merge must then stop with its locks kept in memory, not go
//! on without them (the last two tests split the region while the migration is parked just
//! before its proposal).

use std::time::{Duration, Instant};

mod support;

use support::{
    commit_keys, get_at, leader_and_ctx, lock_pessimistic, locks_in_region_of, prewrite_request,
    timestamp, txn_props,
};
use surge_txn::actions::CommitKind;
use surge_txn::codec::LockType;
use surge_txn::region_pause_points::{
    MIGRATION_BEFORE_PROPOSE, MIGRATION_LOCKS_TAKEN, WRITE_BEFORE_PROPOSE,
};
use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{ClusterConfig, KvNode, LocalCluster, LockMode, RegionError};

/// Longest a test waits for a thread to reach its pause point.
const PARK: Duration = Duration::from_secs(10);

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

/// A transaction with primary `key` locks it in memory; returns its start_ts and
/// for_update_ts.
fn lock_in_memory(c: &LocalCluster, key: &[u8]) -> (u64, u64) {
    let start_ts = timestamp(c);
    let for_update_ts = timestamp(c);
    let before = c.counters().in_memory_success;
    let r = lock_pessimistic(c, key, key, start_ts, for_update_ts);
    assert!(
        matches!(r, KvResponse::PessimisticLock { .. }),
        "lock: {r:?}"
    );
    assert_eq!(
        c.counters().in_memory_success,
        before + 1,
        "lock is in memory"
    );
    (start_ts, for_update_ts)
}

/// Runs `migrate` (a transfer or a merge, on `node`) and a two-phase prewrite of `key` by
/// the transaction `(start_ts, for_update_ts)` so that the prewrite runs its action first,
/// the migration then takes its locks, and the prewrite is proposed and applied before the
/// migration proposes them. Returns the migration's reply.
fn race_prewrite_with_migration(
    node: &KvNode,
    prewrite: KvRequest,
    migrate: KvRequest,
) -> KvResponse {
    let pause = node.pause_points();
    pause.arm(WRITE_BEFORE_PROPOSE);
    std::thread::scope(|s| {
        let prewriter = s.spawn(|| node.handle(prewrite));
        assert!(
            pause.wait_parked(WRITE_BEFORE_PROPOSE, PARK),
            "the prewrite never reached its proposal"
        );
        pause.arm(MIGRATION_LOCKS_TAKEN);
        let migrator = s.spawn(|| node.handle(migrate));
        assert!(
            pause.wait_parked(MIGRATION_LOCKS_TAKEN, PARK),
            "the migration never took its locks"
        );
        assert!(
            pause.release(WRITE_BEFORE_PROPOSE),
            "the prewrite went on by itself (its park ran out)"
        );
        let r = prewriter.join().expect("prewrite thread");
        assert!(matches!(r, KvResponse::Prewrite { .. }), "prewrite: {r:?}");
        assert!(
            pause.release(MIGRATION_LOCKS_TAKEN),
            "the migration went on by itself (its park ran out)"
        );
        migrator.join().expect("migration thread")
    })
}

/// Commits `key` of `start_ts` wherever its region now is, and checks that the prewritten
/// value is what a read at the commit timestamp sees.
fn commit_and_check(c: &LocalCluster, key: &[u8], start_ts: u64, value: &[u8]) {
    let locks = locks_in_region_of(c, key);
    let lock = locks
        .iter()
        .find(|l| l.key == key)
        .expect("the prewrite's lock");
    assert_eq!(
        lock.lock_type,
        LockType::Put,
        "the migrated pessimistic lock replaced the prewrite's lock: {lock:?}"
    );
    let commit_ts = timestamp(c);
    let r = commit_keys(c, &[key], start_ts, commit_ts);
    assert!(matches!(r, KvResponse::Done), "commit: {r:?}");
    assert_eq!(
        get_at(c, key, commit_ts),
        Some(value.to_vec()),
        "the acknowledged prewrite is lost: its commit wrote no record"
    );
}

#[test]
fn a_prewrite_racing_a_leader_transfer_is_not_overwritten_by_the_migrated_lock() {
    let (_d, c) = cluster(2);
    let key: &[u8] = b"\x10k";
    let (start_ts, for_update_ts) = lock_in_memory(&c, key);
    let (from, ctx) = leader_and_ctx(&c, key);
    let to = c
        .node_ids()
        .iter()
        .copied()
        .find(|n| *n != from)
        .expect("another node");
    let node = c.node(from).expect("leader node");
    let prewrite = prewrite_request(
        ctx,
        &[(key, b"v1")],
        txn_props(key, start_ts, for_update_ts, CommitKind::TwoPc),
    );
    let before = c.counters();
    let r = race_prewrite_with_migration(
        &node,
        prewrite,
        KvRequest::TransferLeader {
            region_id: ctx.region_id,
            to,
        },
    );
    // The prewrite replaced the one lock taken: none was proposed, and none is counted.
    assert!(
        matches!(r, KvResponse::RegionsChanged { locks: 0, .. }),
        "transfer: {r:?}"
    );
    assert_eq!(
        c.counters().since(&before).locks_migrated_on_transfer,
        0,
        "counted as migrated"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.leader_of_group(ctx.region_id) != Some(to) {
        assert!(Instant::now() < deadline, "node {to} never took over");
        std::thread::sleep(Duration::from_millis(10));
    }
    commit_and_check(&c, key, start_ts, b"v1");
}

#[test]
fn a_prewrite_racing_a_merge_is_not_overwritten_by_the_migrated_lock() {
    let (_d, c) = cluster(2);
    let key: &[u8] = b"\x10k";
    let source = c.region_of(key).expect("source").id;
    let target = c.region_of(b"\x90").expect("target").id;
    assert_ne!(source, target);
    let (start_ts, for_update_ts) = lock_in_memory(&c, key);
    let (leader, ctx) = leader_and_ctx(&c, key);
    let node = c.node(leader).expect("leader node");
    let prewrite = prewrite_request(
        ctx,
        &[(key, b"v1")],
        txn_props(key, start_ts, for_update_ts, CommitKind::TwoPc),
    );
    let before = c.counters();
    let r =
        race_prewrite_with_migration(&node, prewrite, KvRequest::MergeRegions { source, target });
    assert!(
        matches!(r, KvResponse::RegionsChanged { locks: 0, .. }),
        "merge: {r:?}"
    );
    assert_eq!(
        c.counters().since(&before).locks_migrated_on_merge,
        0,
        "counted as migrated"
    );
    assert_eq!(c.region_of(key).expect("merged").id, target);
    commit_and_check(&c, key, start_ts, b"v1");
}

/// A node other than `not`.
fn another_node(c: &LocalCluster, not: u64) -> u64 {
    c.node_ids()
        .iter()
        .copied()
        .find(|n| *n != not)
        .expect("another node")
}

/// Runs `migrate` on `node` with a split of `split` at `split_key` applied after the
/// migration read the region's version for its `MigrateLocks` entry and before that entry
/// is proposed, so that its apply refuses it (the version moved). Returns the reply.
fn migrate_across_a_split(
    c: &LocalCluster,
    node: &KvNode,
    migrate: KvRequest,
    split: u64,
    split_key: &[u8],
) -> KvResponse {
    let pause = node.pause_points();
    pause.arm(MIGRATION_BEFORE_PROPOSE);
    std::thread::scope(|s| {
        let migrator = s.spawn(|| node.handle(migrate));
        assert!(
            pause.wait_parked(MIGRATION_BEFORE_PROPOSE, PARK),
            "the migration never reached its proposal"
        );
        c.split_region(split, Some(split_key.to_vec()))
            .expect("split");
        assert!(
            pause.release(MIGRATION_BEFORE_PROPOSE),
            "the migration went on by itself (its park ran out)"
        );
        migrator.join().expect("migration thread")
    })
}

/// Whether the leader of `key`'s region holds the lock of `start_ts` on `key`.
fn holds_lock(c: &LocalCluster, key: &[u8], start_ts: u64) -> bool {
    locks_in_region_of(c, key)
        .iter()
        .any(|l| l.key == key && l.lock_ts == start_ts)
}

/// A leader transfer whose `MigrateLocks` entry is refused at apply (a split moved the
/// region's version after the entry was stamped) must not go on: the new leader would lack
/// the locks, and the old one would drop them as migrated. It answers a retryable error and
/// leaves the locks with the leader; asked again, it moves them.
#[test]
fn a_leader_transfer_whose_migrated_locks_were_refused_keeps_them() {
    let (_d, c) = cluster(2);
    let key: &[u8] = b"\x10k";
    let (start_ts, _) = lock_in_memory(&c, key);
    let (from, ctx) = leader_and_ctx(&c, key);
    let to = another_node(&c, from);
    let node = c.node(from).expect("leader node");
    let transfer = KvRequest::TransferLeader {
        region_id: ctx.region_id,
        to,
    };
    // The split key is above the locked key: the lock stays in the transferred region.
    let r = migrate_across_a_split(&c, &node, transfer.clone(), ctx.region_id, b"\x40");
    assert!(
        holds_lock(&c, key, start_ts),
        "the in-memory lock was lost: the transfer answered {r:?}, the region's leader holds \
         {:?}",
        locks_in_region_of(&c, key)
    );
    assert!(
        matches!(r, KvResponse::RegionError(RegionError::ServerIsBusy { .. })),
        "transfer: {r:?}"
    );
    assert_eq!(c.leader_of_group(ctx.region_id), Some(from), "not moved");

    let r = node.handle(transfer);
    assert!(
        matches!(r, KvResponse::RegionsChanged { locks: 1, .. }),
        "transfer asked again: {r:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.leader_of_group(ctx.region_id) != Some(to) {
        assert!(Instant::now() < deadline, "node {to} never took over");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(holds_lock(&c, key, start_ts), "the new leader has the lock");
}

/// A merge whose `MigrateLocks` entry is refused at apply must not prepare the merge: the
/// source's data would go to the target without the locks. It answers a retryable error,
/// the source stays writable with its locks, and a merge asked again moves them.
#[test]
fn a_merge_whose_migrated_locks_were_refused_keeps_them() {
    let (_d, c) = cluster(2);
    // The source is the upper region, so that it still borders the target after it split.
    let key: &[u8] = b"\x90k";
    let source = c.region_of(key).expect("source").id;
    let target = c.region_of(b"\x10").expect("target").id;
    assert_ne!(source, target);
    let (start_ts, _) = lock_in_memory(&c, key);
    let (leader, _) = leader_and_ctx(&c, key);
    let node = c.node(leader).expect("leader node");
    let merge = KvRequest::MergeRegions { source, target };
    // The split key is above the locked key: the lock stays in the merging region.
    let r = migrate_across_a_split(&c, &node, merge.clone(), source, b"\xc0");
    assert!(
        holds_lock(&c, key, start_ts),
        "the in-memory lock was lost: the merge answered {r:?}, the region of the key (now \
         {:?}) holds {:?}",
        c.region_of(key).map(|r| r.id),
        locks_in_region_of(&c, key)
    );
    assert!(
        matches!(r, KvResponse::RegionError(RegionError::ServerIsBusy { .. })),
        "merge: {r:?}"
    );
    assert_eq!(c.region_of(key).expect("region").id, source, "not merged");

    let r = node.handle(merge);
    assert!(
        matches!(r, KvResponse::RegionsChanged { locks: 1, .. }),
        "merge asked again: {r:?}"
    );
    assert_eq!(c.region_of(key).expect("merged").id, target);
    assert!(holds_lock(&c, key, start_ts), "the target has the lock");
}

/// A pessimistic rollback racing a leader transfer: it ran its action on the memory lock
/// before the transfer took its locks, and is proposed and applied before they are. A
/// pessimistic rollback leaves no record, so the apply rule (which puts a copy where the key
/// holds nothing) cannot tell its lock from one never written: only the latch re-copy keeps
/// the stale copy out of the log. Without it the released lock came back at the new leader.
#[test]
fn a_pessimistic_rollback_racing_a_leader_transfer_is_not_undone() {
    let (_d, c) = cluster(2);
    let key: &[u8] = b"\x10k";
    let (start_ts, _) = lock_in_memory(&c, key);
    let (from, ctx) = leader_and_ctx(&c, key);
    let to = another_node(&c, from);
    let node = c.node(from).expect("leader node");
    let pause = node.pause_points();
    pause.arm(WRITE_BEFORE_PROPOSE);
    std::thread::scope(|s| {
        let rollback = s.spawn(|| {
            node.handle(KvRequest::PessimisticRollback {
                ctx,
                keys: vec![key.to_vec()],
                start_ts,
                for_update_ts: u64::MAX,
            })
        });
        assert!(
            pause.wait_parked(WRITE_BEFORE_PROPOSE, PARK),
            "the rollback never reached its proposal"
        );
        pause.arm(MIGRATION_LOCKS_TAKEN);
        let transfer = s.spawn(|| {
            node.handle(KvRequest::TransferLeader {
                region_id: ctx.region_id,
                to,
            })
        });
        assert!(
            pause.wait_parked(MIGRATION_LOCKS_TAKEN, PARK),
            "the transfer never took its locks"
        );
        assert!(
            pause.release(WRITE_BEFORE_PROPOSE),
            "the rollback went on by itself (its park ran out)"
        );
        let r = rollback.join().expect("rollback thread");
        assert!(matches!(r, KvResponse::Done), "rollback: {r:?}");
        assert!(
            pause.release(MIGRATION_LOCKS_TAKEN),
            "the transfer went on by itself (its park ran out)"
        );
        let r = transfer.join().expect("transfer thread");
        assert!(
            matches!(r, KvResponse::RegionsChanged { .. }),
            "transfer: {r:?}"
        );
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.leader_of_group(ctx.region_id) != Some(to) {
        assert!(Instant::now() < deadline, "node {to} never took over");
        std::thread::sleep(Duration::from_millis(10));
    }
    let locks = locks_in_region_of(&c, key);
    assert!(
        locks.is_empty(),
        "the rolled-back lock came back with the transfer: {locks:?}"
    );
}

/// A transfer takes the latches of every key it migrates at once. A write holding one of
/// them (parked before its proposal here; a stream of writes of the key, their owners
/// re-locking through Raft during the transfer, would do the same) must not hold the transfer
/// off for good: it gives up at its proposal timeout (5 s), the region writable again, and a
/// transfer asked again once the key is free succeeds.
#[test]
fn a_leader_transfer_gives_up_on_a_latch_held_past_its_timeout() {
    let (_d, c) = cluster(2);
    let key: &[u8] = b"\x10k";
    let (start_ts, for_update_ts) = lock_in_memory(&c, key);
    let (from, ctx) = leader_and_ctx(&c, key);
    let to = another_node(&c, from);
    let node = c.node(from).expect("leader node");
    let transfer = KvRequest::TransferLeader {
        region_id: ctx.region_id,
        to,
    };
    let prewrite = prewrite_request(
        ctx,
        &[(key, b"v1")],
        txn_props(key, start_ts, for_update_ts, CommitKind::TwoPc),
    );
    let pause = node.pause_points();
    pause.arm(WRITE_BEFORE_PROPOSE);
    std::thread::scope(|s| {
        let prewriter = s.spawn(|| node.handle(prewrite));
        assert!(
            pause.wait_parked(WRITE_BEFORE_PROPOSE, PARK),
            "the prewrite never reached its proposal"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let (node, transfer) = (&node, transfer.clone());
        s.spawn(move || tx.send(node.handle(transfer)));
        let answer = rx.recv_timeout(Duration::from_secs(15));
        let still_parked = pause.release(WRITE_BEFORE_PROPOSE);
        let r = answer.expect(
            "the transfer did not answer within 15 s while the prewrite held its key's latch",
        );
        assert!(
            still_parked,
            "the prewrite went on by itself (its park ran out)"
        );
        assert!(
            matches!(r, KvResponse::RegionError(RegionError::ServerIsBusy { .. })),
            "transfer: {r:?}"
        );
        let r = prewriter.join().expect("prewrite thread");
        assert!(matches!(r, KvResponse::Prewrite { .. }), "prewrite: {r:?}");
    });
    assert_eq!(c.leader_of_group(ctx.region_id), Some(from), "not moved");
    // The table is writable again: a new lock goes to memory.
    lock_in_memory(&c, b"\x10other");

    let r = node.handle(transfer);
    assert!(
        matches!(r, KvResponse::RegionsChanged { .. }),
        "transfer asked again: {r:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.leader_of_group(ctx.region_id) != Some(to) {
        assert!(Instant::now() < deadline, "node {to} never took over");
        std::thread::sleep(Duration::from_millis(10));
    }
    commit_and_check(&c, key, start_ts, b"v1");
}
