//! Region merge (TiKV `test_merge.rs` and its failpoint cases).

use surge_lock_table::{
    BudgetConfig, LockError, LockStatus, MemoryBudget, RefuseReason, SharedRegionLockTable,
};

use crate::common::*;

/// `test_propose_in_memory_pessimistic_locks` (merge): every source lock is proposed,
/// deleted-marked ones included; the target keeps its own memory lock unchanged and takes
/// the source's.
#[test]
fn test_propose_in_memory_pessimistic_locks_on_merge() {
    let budget = MemoryBudget::default();
    let mut source = leader(&budget, 1, 1);
    let mut target = leader(&budget, 1, 1);
    source
        .try_insert(one(b"k1", lock(b"k1", 10)), 1, 1)
        .unwrap();
    source
        .try_insert(one(b"k2", lock(b"k1", 10)), 1, 1)
        .unwrap();
    source.mark_deleted(b"k2");
    target
        .try_insert(one(b"t1", lock(b"t1", 20)), 1, 1)
        .unwrap();

    let proposed = source.start_merge(1 << 20).unwrap();
    assert_eq!(proposed.len(), 2, "deleted-marked locks are proposed too");
    assert_eq!(source.status(), LockStatus::MergingRegion);
    assert_eq!(source.len(), 2, "still readable during the merge");
    assert_eq!(budget.counters().migrated_on_merge, 2);

    target.insert_migrated(proposed).unwrap();
    assert_eq!(target.get(b"t1").unwrap().lock(), &lock(b"t1", 20));
    assert_eq!(target.len(), 3);
    drop(source); // the source peer is destroyed after the merge
    assert_eq!(budget.used(), target.memory_size());
}

/// Merging table to table in memory: `absorb` moves the locks and their charge.
#[test]
fn absorb_moves_locks_and_charge() {
    let budget = MemoryBudget::default();
    let source = SharedRegionLockTable::<PLock>::new(&budget);
    let target = SharedRegionLockTable::<PLock>::new(&budget);
    source.become_leader(1, 1);
    target.become_leader(1, 1);
    source.try_insert(one(b"a", lock(b"a", 1)), 1, 1).unwrap();
    source.mark_deleted(b"a");
    target.try_insert(one(b"b", lock(b"b", 2)), 1, 1).unwrap();
    let used = budget.used();
    assert_eq!(target.absorb(&source).unwrap(), 1);
    assert_eq!(
        target.absorb(&target).unwrap(),
        0,
        "absorbing itself moves nothing"
    );
    assert!(source.is_empty());
    assert_eq!(source.memory_size(), 0);
    assert!(!target.get(b"a").unwrap().is_deleted());
    assert_eq!(budget.used(), used);
    assert_eq!(target.memory_size(), used);
    assert_eq!(budget.counters().current_locks, 2);
}

/// Absorbing from another node's budget reserves here and releases there, or refuses.
#[test]
fn absorb_across_budgets() {
    let here = MemoryBudget::default();
    let there = MemoryBudget::default();
    let mut target = leader(&here, 1, 1);
    let mut source = leader(&there, 1, 1);
    source.try_insert(one(b"a", lock(b"a", 1)), 1, 1).unwrap();
    let bytes = source.memory_size();
    here.set_node_limit(bytes - 1);
    assert!(matches!(
        target.absorb(&mut source),
        Err(LockError::NodeBudgetFull { .. })
    ));
    assert_eq!(source.len(), 1);
    here.set_node_limit(BudgetConfig::DEFAULT_NODE_LIMIT);
    target.absorb(&mut source).unwrap();
    assert_eq!((here.used(), there.used()), (bytes, 0));
    assert_eq!(
        (
            here.counters().current_locks,
            there.counters().current_locks
        ),
        (1, 0)
    );
}

/// `test_merge_pessimistic_locks_when_gap_is_too_large`: the merge is refused and writes
/// are allowed again.
#[test]
fn test_merge_pessimistic_locks_when_gap_is_too_large() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    let size = t.memory_size();
    assert_eq!(
        t.start_merge(size - 1),
        Err(LockError::MergeTooLarge {
            memory_size: size,
            max_bytes: size - 1
        })
    );
    assert_eq!(t.status(), LockStatus::Normal);
    t.try_insert(one(b"j", lock(b"k", 10)), 1, 1).unwrap();
}

/// `test_merge_pessimistic_locks_repeated_merge`: a second merge attempt while merging is
/// refused and the status stays `MergingRegion`.
#[test]
fn test_merge_pessimistic_locks_repeated_merge() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.start_merge(1 << 20).unwrap();
    assert_eq!(
        t.start_merge(1 << 20),
        Err(LockError::MergeNotNormal {
            status: LockStatus::MergingRegion
        })
    );
    assert_eq!(t.status(), LockStatus::MergingRegion);
    // An empty table also becomes MergingRegion, with nothing to propose.
    let mut empty = leader(&budget, 1, 1);
    assert!(empty.start_merge(0).unwrap().is_empty());
    assert_eq!(empty.status(), LockStatus::MergingRegion);
}

/// `test_merge_with_concurrent_pessimistic_locking`: a lock before the locks are proposed
/// succeeds (and is proposed); later ones fall back.
#[test]
fn test_merge_with_concurrent_pessimistic_locking() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k1", lock(b"k1", 10)), 1, 1).unwrap();
    let proposed = t.start_merge(1 << 20).unwrap();
    assert_eq!(proposed, vec![(b"k1".to_vec(), lock(b"k1", 10))]);
    let refused = t.try_insert(one(b"k2", lock(b"k2", 11)), 1, 1).unwrap_err();
    assert_eq!(
        refused.reason,
        RefuseReason::NotWritable {
            status: LockStatus::MergingRegion
        }
    );
    // A transfer during a merge proposes nothing new.
    assert!(t.start_transfer().unwrap().is_empty());
}

/// `test_merge_pessimistic_locks_propose_fail`: the PrepareMerge proposal failed, so
/// `MergingRegion` goes back to `Normal`.
#[test]
fn test_merge_pessimistic_locks_propose_fail() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.start_merge(1 << 20).unwrap();
    assert!(t.abort_merge());
    assert_eq!(t.status(), LockStatus::Normal);
    assert!(!t.abort_merge());
    t.try_insert(one(b"j", lock(b"k", 10)), 1, 1).unwrap();
}

/// A merge cannot start during a leader transfer ("skip merging").
#[test]
fn merge_refused_while_transferring() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.start_transfer().unwrap();
    assert_eq!(
        t.start_merge(1 << 20),
        Err(LockError::MergeNotNormal {
            status: LockStatus::TransferringLeader
        })
    );
    assert_eq!(t.status(), LockStatus::TransferringLeader);
}

/// `test_merge_pessimistic_locks_with_concurrent_prewrite`: a prewrite in flight (its lock
/// marked deleted) when the merge starts: the lock is still proposed with the merge, the
/// prewrite's apply still removes it (same term and version), and later pessimistic locks
/// fall back.
#[test]
fn test_merge_pessimistic_locks_with_concurrent_prewrite() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k1", lock(b"k1", 10)), 1, 1).unwrap();
    t.try_insert(one(b"k2", lock(b"k1", 10)), 1, 1).unwrap();
    assert!(t.mark_deleted(b"k1"), "prewrite of k1 sent to Raft");
    let proposed = t.start_merge(1 << 20).unwrap();
    let keys: Vec<&[u8]> = proposed.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, vec![&b"k1"[..], b"k2"]);
    assert!(
        t.remove_applied(b"k1", 1, 1),
        "the in-flight prewrite applies"
    );
    assert!(matches!(
        t.try_insert(one(b"k3", lock(b"k3", 11)), 1, 1)
            .unwrap_err()
            .reason,
        RefuseReason::NotWritable {
            status: LockStatus::MergingRegion
        }
    ));
    assert_eq!(t.len(), 1);
    assert_eq!(budget.used(), t.memory_size());
}

/// Absorbing a source that holds keys the target holds too: the source's lock wins and the
/// replaced target entries are released, with the same budget and across budgets.
#[test]
fn absorb_overlapping_keys_releases_the_replaced_entries() {
    for one_budget in [true, false] {
        let here = MemoryBudget::default();
        let there = if one_budget {
            here.clone()
        } else {
            MemoryBudget::default()
        };
        let mut target = leader(&here, 1, 1);
        let mut source = leader(&there, 1, 1);
        target
            .try_insert(one(b"k", lock(b"short", 1)), 1, 1)
            .unwrap();
        target.try_insert(one(b"t", lock(b"t", 1)), 1, 1).unwrap();
        source
            .try_insert(one(b"k", lock(b"a-longer-primary", 2)), 1, 1)
            .unwrap();
        source.try_insert(one(b"s", lock(b"s", 2)), 1, 1).unwrap();
        source.mark_deleted(b"k");
        assert_eq!(target.absorb(&mut source).unwrap(), 2);
        assert_eq!(target.len(), 3);
        let k = target.get(b"k").unwrap();
        assert_eq!(k.lock().start_ts, 2);
        assert!(!k.is_deleted());
        assert_eq!(target.memory_size(), recount(&target));
        assert_eq!(
            target.memory_size(),
            charge(b"k", b"a-longer-primary") + charge(b"t", b"t") + charge(b"s", b"s")
        );
        assert_eq!(here.used(), target.memory_size());
        assert_eq!(here.counters().current_locks, 3);
        if !one_budget {
            assert_eq!((there.used(), there.counters().current_locks), (0, 0));
        }
        drop(source);
        drop(target);
        assert_eq!((here.used(), here.counters().current_locks), (0, 0));
    }
}
