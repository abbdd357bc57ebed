//! The node budget of all regions: limits, run-time changes, release on every path.

use surge_lock_table::{BudgetConfig, KeyRange, MemoryBudget, RefuseReason};

use crate::common::*;

/// `test_mvcc_scan_memory_and_cf_locks`: 1040 keys with ~1 KiB locks overflow the 512 KiB
/// region budget; the overflowing ones are refused (to go to the persistent lock column),
/// and the stored ones stay scannable in order.
#[test]
fn test_mvcc_scan_memory_and_cf_locks_overflow() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    let primary = vec![b'p'; 1024];
    let (mut stored, mut refused) = (Vec::new(), Vec::new());
    for i in 0..1040u32 {
        let key = format!("key{i:05}").into_bytes();
        match t.try_insert(one(&key, lock(&primary, 1)), 1, 1) {
            Ok(_) => stored.push(key),
            Err(r) => {
                assert!(matches!(r.reason, RefuseReason::RegionBudgetFull { .. }));
                refused.push(key);
            }
        }
    }
    let per = charge(b"key00000", &primary);
    assert_eq!(stored.len(), (512 << 10) / per);
    assert_eq!(stored.len() + refused.len(), 1040);
    assert!(!refused.is_empty());
    assert!(t.memory_size() <= 512 << 10);
    let scan = t.scan(&KeyRange::all(), 0);
    let keys: Vec<Vec<u8>> = scan.entries.iter().map(|(k, _)| k.to_vec()).collect();
    assert_eq!(keys, stored);
    assert_eq!(budget.counters().refused_region_full, refused.len() as u64);
}

/// One node budget serves every region; lowering and raising it at run time works,
/// and releases happen on remove, clear and drop.
#[test]
fn node_budget_serves_every_region_and_is_changeable() {
    let c = charge(b"k0", b"p");
    let budget = MemoryBudget::new(
        BudgetConfig::default()
            .with_node_limit(4 * c)
            .with_region_limit(512 << 10)
            .with_max_key_size(1024),
    );
    let mut tables: Vec<Table> = (0..4).map(|_| leader(&budget, 1, 1)).collect();
    for (i, t) in tables.iter_mut().enumerate() {
        t.try_insert(one(format!("k{i}").as_bytes(), lock(b"p", 1)), 1, 1)
            .unwrap();
    }
    assert_eq!(budget.used(), 4 * c);
    let mut extra = leader(&budget, 1, 1);
    assert!(matches!(
        extra
            .try_insert(one(b"k9", lock(b"p", 1)), 1, 1)
            .unwrap_err()
            .reason,
        RefuseReason::NodeBudgetFull { .. }
    ));
    // Raise at run time.
    budget.set_node_limit(5 * c);
    extra.try_insert(one(b"k9", lock(b"p", 1)), 1, 1).unwrap();
    // Lower below usage: existing locks stay, new ones are refused.
    budget.set_node_limit(2 * c);
    assert_eq!(budget.used(), 5 * c);
    assert!(extra.try_insert(one(b"k8", lock(b"p", 1)), 1, 1).is_err());
    // Release by remove, by clear, by drop.
    assert!(tables[0].remove_applied(b"k0", 1, 1));
    tables[1].become_follower();
    drop(extra);
    assert_eq!(budget.used(), 2 * c);
    tables.clear();
    assert_eq!(budget.used(), 0);
    assert_eq!(budget.counters().current_locks, 0);
}

/// The region limit is changeable at run time and applies per table.
#[test]
fn region_limit_changes_at_run_time() {
    let c = charge(b"k0", b"p");
    let budget = budget_with(100 << 20, c);
    let mut a = leader(&budget, 1, 1);
    let mut b = leader(&budget, 1, 1);
    a.try_insert(one(b"k0", lock(b"p", 1)), 1, 1).unwrap();
    b.try_insert(one(b"k0", lock(b"p", 1)), 1, 1).unwrap();
    assert!(matches!(
        a.try_insert(one(b"k1", lock(b"p", 1)), 1, 1)
            .unwrap_err()
            .reason,
        RefuseReason::RegionBudgetFull { .. }
    ));
    budget.set_region_limit(2 * c);
    a.try_insert(one(b"k1", lock(b"p", 1)), 1, 1).unwrap();
    assert_eq!(budget.region_limit(), 2 * c);
}

/// Every refusal reason is counted under its own counter.
#[test]
fn counters_count_refusals_by_reason() {
    let budget = budget_with(100 << 20, 512 << 10);
    let mut t = leader(&budget, 2, 3);
    let _ = t.try_insert(one(b"k", lock(b"p", 1)), 1, 3); // term
    let _ = t.try_insert(one(b"k", lock(b"p", 1)), 2, 4); // version
    let _ = t.try_insert(one(&vec![0; 70_000], lock(b"p", 1)), 2, 3); // key
    let _ = t.try_insert(one(b"k", lock(&vec![0; 600 << 10], 1)), 2, 3); // region
    t.start_transfer().unwrap();
    let _ = t.try_insert(one(b"k", lock(b"p", 1)), 2, 3); // status
    let c = budget.counters();
    assert_eq!(
        (
            c.refused_term_mismatch,
            c.refused_version_mismatch,
            c.refused_key_too_large,
            c.refused_region_full,
            c.refused_not_writable,
            c.refused_node_full
        ),
        (1, 1, 1, 1, 1, 0)
    );
    assert_eq!(c.refused_total(), 5);
    assert_eq!(c.inserted, 0);
}

/// A lock reporting an absurd heap size is refused by the budgets, not a panic or overflow.
#[test]
fn absurd_heap_size_is_refused_without_overflow() {
    #[derive(Debug, Clone)]
    struct Huge;
    impl surge_lock_table::LockValue for Huge {
        fn heap_size(&self) -> usize {
            usize::MAX
        }
    }
    let budget = MemoryBudget::default();
    let mut t = surge_lock_table::RegionLockTable::<Huge>::new(&budget);
    t.become_leader(1, 1);
    let refused = t
        .try_insert(vec![(b"a".to_vec(), Huge), (b"b".to_vec(), Huge)], 1, 1)
        .unwrap_err();
    assert!(matches!(
        refused.reason,
        RefuseReason::RegionBudgetFull { .. }
    ));
    budget.set_region_limit(usize::MAX);
    let refused = t.try_insert(vec![(b"a".to_vec(), Huge)], 1, 1).unwrap_err();
    assert!(matches!(
        refused.reason,
        RefuseReason::NodeBudgetFull { .. }
    ));
    assert_eq!((t.memory_size(), budget.used()), (0, 0));
}
