//! The unit tests of TiKV's `components/raftstore/src/store/txn_ext.rs`, mirrored.

use surge_lock_table::{KeyRange, MemoryBudget, RefuseReason};

use crate::common::*;

/// `test_memory_size`: sizes after insert, node total across tables, overwrite, remove, drop.
#[test]
fn test_memory_size() {
    let budget = MemoryBudget::default();
    let mut locks1 = leader(&budget, 1, 1);
    let mut locks2 = leader(&budget, 1, 1);

    locks1
        .try_insert(one(b"k1", lock(b"k1", 100)), 1, 1)
        .unwrap();
    assert_eq!(locks1.get(b"k1").unwrap().lock(), &lock(b"k1", 100));
    assert!(!locks1.get(b"k1").unwrap().is_deleted());
    assert_eq!(locks1.memory_size(), charge(b"k1", b"k1"));
    locks1
        .try_insert(one(b"k22", lock(b"k1", 100)), 1, 1)
        .unwrap();
    assert_eq!(
        locks1.memory_size(),
        charge(b"k1", b"k1") + charge(b"k22", b"k1")
    );

    locks2
        .try_insert(one(b"k333", lock(b"k1", 100)), 1, 1)
        .unwrap();
    assert_eq!(budget.used(), locks1.memory_size() + locks2.memory_size());

    // Replacing with a same-sized lock does not change the size.
    let before = locks1.memory_size();
    let report = locks1
        .try_insert(one(b"k22", lock(b"k2", 101)), 1, 1)
        .unwrap();
    assert_eq!((report.overwritten, report.bytes_delta), (1, 0));
    assert_eq!(locks1.get(b"k22").unwrap().lock(), &lock(b"k2", 101));
    assert_eq!(locks1.memory_size(), before);
    assert_eq!(budget.used(), locks1.memory_size() + locks2.memory_size());

    // Remove.
    assert!(locks1.remove_applied(b"k1", 1, 1));
    assert_eq!(locks1.memory_size(), charge(b"k22", b"k2"));
    assert_eq!(budget.used(), locks1.memory_size() + locks2.memory_size());
    assert!(!locks1.remove_applied(b"k1", 1, 1), "already removed");

    // Clear on leader loss.
    let lost = locks2.become_follower();
    assert_eq!((lost.locks, lost.bytes), (1, charge(b"k333", b"k1")));
    assert_eq!(locks2.memory_size(), 0);
    assert_eq!(budget.used(), locks1.memory_size());

    // Drop releases.
    drop(locks1);
    assert_eq!(budget.used(), 0);
    assert_eq!(budget.counters().current_locks, 0);
}

/// `test_insert_checking_memory_limit`: region and node limits, all-or-nothing.
#[test]
fn test_insert_checking_memory_limit() {
    let c = charge(b"k1", b"p");
    let budget = budget_with(3 * c, 2 * c);
    let mut locks1 = leader(&budget, 1, 1);
    let mut locks2 = leader(&budget, 1, 1);

    locks1.try_insert(one(b"k1", lock(b"p", 1)), 1, 1).unwrap();
    // Exceeding the region limit: both refused, nothing stored.
    let batch = vec![
        (b"k2".to_vec(), lock(b"p", 1)),
        (b"k3".to_vec(), lock(b"p", 1)),
    ];
    let refused = locks1.try_insert(batch.clone(), 1, 1).unwrap_err();
    assert!(
        matches!(refused.reason, RefuseReason::RegionBudgetFull { used, needed, limit }
        if used == c && needed == 2 * c && limit == 2 * c)
    );
    assert_eq!(refused.batch, batch);
    assert_eq!(locks1.len(), 1);
    assert!(locks1.get(b"k2").is_none());

    // Exactly at the region limit is fine.
    locks1.try_insert(one(b"k2", lock(b"p", 1)), 1, 1).unwrap();
    assert_eq!(locks1.memory_size(), 2 * c);

    // Overwriting an existing key of equal size needs no room.
    locks1.try_insert(one(b"k2", lock(b"q", 2)), 1, 1).unwrap();

    // Node limit: locks2 may take one more, not two.
    let refused = locks2.try_insert(batch, 1, 1).unwrap_err();
    assert!(
        matches!(refused.reason, RefuseReason::NodeBudgetFull { used, needed, limit }
        if used == 2 * c && needed == 2 * c && limit == 3 * c)
    );
    locks2.try_insert(one(b"k9", lock(b"p", 1)), 1, 1).unwrap();
    assert_eq!(budget.used(), 3 * c);

    let counters = budget.counters();
    assert_eq!(counters.refused_region_full, 1);
    assert_eq!(counters.refused_node_full, 1);
    assert_eq!(counters.inserted, 4);
    assert_eq!(counters.current_locks, 3);
    assert_eq!(counters.current_bytes, 3 * c as u64);
}

/// `test_group_locks_by_regions`: locks move to the region owning them, deleted marks cleared
/// on moved locks, kept locks keep their mark.
#[test]
fn test_group_locks_by_regions() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 3, 10);
    let keys: [&[u8]; 6] = [b"a", b"b", b"c", b"ca", b"d", b"e"];
    for k in keys {
        t.try_insert(one(k, lock(k, 5)), 3, 10).unwrap();
    }
    assert!(t.mark_deleted(b"a"));
    assert!(t.mark_deleted(b"c"));
    assert!(t.mark_deleted(b"e"));
    let total = t.memory_size();

    // Regions ["", "b") ["b", "c") ["c", "d") ["d", ""); the derived (kept) one is ["c", "d").
    let keep = KeyRange::new(b"c".to_vec(), b"d".to_vec());
    let others = [
        KeyRange::new(Vec::new(), b"b".to_vec()),
        KeyRange::new(b"b".to_vec(), b"c".to_vec()),
        KeyRange::from_start(b"d".to_vec()),
    ];
    let new = t.split(11, &keep, &others).unwrap();
    assert_eq!(t.version(), 11);
    let keys_of = |t: &Table| t.iter().map(|(k, _)| k.to_vec()).collect::<Vec<_>>();
    assert_eq!(keys_of(&t), vec![b"c".to_vec(), b"ca".to_vec()]);
    assert!(
        t.get(b"c").unwrap().is_deleted(),
        "kept locks keep the mark"
    );
    assert_eq!(keys_of(&new[0]), vec![b"a".to_vec()]);
    assert!(
        !new[0].get(b"a").unwrap().is_deleted(),
        "moved locks lose the mark"
    );
    assert_eq!(keys_of(&new[1]), vec![b"b".to_vec()]);
    assert_eq!(keys_of(&new[2]), vec![b"d".to_vec(), b"e".to_vec()]);
    assert!(!new[2].get(b"e").unwrap().is_deleted());
    for n in &new {
        assert_eq!(n.version(), 11);
        assert_eq!(n.term(), 3);
        assert_eq!(n.memory_size(), recount(n));
    }
    assert_eq!(t.memory_size(), recount(&t));
    let sum: usize = t.memory_size() + new.iter().map(|n| n.memory_size()).sum::<usize>();
    assert_eq!(sum, total);
    assert_eq!(budget.used(), total);
    assert_eq!(budget.counters().migrated_on_split, 4);
}

/// `test_scan_memory_lock`: ranges, limits and the has-more flag, in key order.
#[test]
fn test_scan_memory_lock() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    // Insert out of order.
    for k in [b"k3", b"k1", b"k5", b"k2", b"k4"] {
        t.try_insert(one(k, lock(b"k1", 10)), 1, 1).unwrap();
    }
    t.mark_deleted(b"k4");
    let keys = |s: surge_lock_table::LockScan<(&[u8], &surge_lock_table::LockEntry<PLock>)>| {
        (
            s.entries
                .iter()
                .map(|(k, _)| k.to_vec())
                .collect::<Vec<_>>(),
            s.has_more,
        )
    };
    let all = keys(t.scan(&KeyRange::all(), 0));
    assert_eq!(
        all.0,
        vec![
            b"k1".to_vec(),
            b"k2".to_vec(),
            b"k3".to_vec(),
            b"k4".to_vec(),
            b"k5".to_vec()
        ]
    );
    assert!(!all.1);
    assert_eq!(
        keys(t.scan(&KeyRange::new(b"k2".to_vec(), b"k4".to_vec()), 0)).0,
        vec![b"k2".to_vec(), b"k3".to_vec()]
    );
    let (limited, more) = keys(t.scan(&KeyRange::from_start(b"k2".to_vec()), 2));
    assert_eq!(limited, vec![b"k2".to_vec(), b"k3".to_vec()]);
    assert!(more);
    let (exact, more) = keys(t.scan(&KeyRange::from_start(b"k4".to_vec()), 2));
    assert_eq!(exact, vec![b"k4".to_vec(), b"k5".to_vec()]);
    assert!(!more, "limit reached exactly at the end");
    assert!(
        t.scan(&KeyRange::new(b"k4".to_vec(), b"k4".to_vec()), 0)
            .entries
            .is_empty()
    );
    assert!(
        t.scan(&KeyRange::new(b"k5".to_vec(), b"k1".to_vec()), 0)
            .entries
            .is_empty()
    );
    // Deleted-marked locks are still returned, flagged.
    let s = t.scan(&KeyRange::new(b"k4".to_vec(), b"k5".to_vec()), 0);
    assert!(s.entries[0].1.is_deleted());
}
