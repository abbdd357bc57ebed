//! Region split (TiKV `test_split_region.rs` and its failpoint cases).

use surge_lock_table::{
    KeyRange, LockError, LockStatus, MemoryBudget, RefuseReason, SharedRegionLockTable,
};

use crate::common::*;

fn left_right(split_key: &[u8]) -> (KeyRange, KeyRange) {
    (
        KeyRange::new(Vec::new(), split_key.to_vec()),
        KeyRange::from_start(split_key.to_vec()),
    )
}

/// `test_split_with_in_memory_pessimistic_locks`: two locks end up one per new region,
/// still in memory, with the new version.
#[test]
fn test_split_with_in_memory_pessimistic_locks() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"a", lock(b"a", 10)), 1, 1).unwrap();
    t.try_insert(one(b"z", lock(b"a", 10)), 1, 1).unwrap();
    let (left, right) = left_right(b"m");
    let new = t.split(2, &left, &[right]).unwrap();
    assert_eq!(new.len(), 1);
    assert_eq!(t.get(b"a").unwrap().lock(), &lock(b"a", 10));
    assert!(t.get(b"z").is_none());
    assert_eq!(new[0].get(b"z").unwrap().lock(), &lock(b"a", 10));
    assert_eq!((t.version(), new[0].version()), (2, 2));
    assert_eq!(new[0].status(), LockStatus::Normal);
    assert_eq!(budget.used(), t.memory_size() + new[0].memory_size());
}

/// `test_split_with_concurrent_pessimistic_locking`: locking with the old version after the
/// split is refused (EpochNotMatch on the read path); the new version works.
#[test]
fn test_split_with_concurrent_pessimistic_locking() {
    let budget = MemoryBudget::default();
    let t = SharedRegionLockTable::<PLock>::new(&budget);
    t.become_leader(1, 1);
    let (left, right) = left_right(b"m");
    let new = t.split(2, &left, &[right]).unwrap();
    let refused = t.try_insert(one(b"a", lock(b"a", 10)), 1, 1).unwrap_err();
    assert_eq!(
        refused.reason,
        RefuseReason::VersionMismatch {
            table: 2,
            request: 1
        }
    );
    assert_eq!(
        t.get_checked(b"a", 1, 1),
        Err(LockError::EpochNotMatch {
            table: 2,
            request: 1
        })
    );
    t.try_insert(one(b"a", lock(b"a", 10)), 1, 2).unwrap();
    new[0].try_insert(one(b"x", lock(b"x", 10)), 1, 2).unwrap();
    assert_eq!(budget.used(), t.memory_size() + new[0].memory_size());
}

/// `test_split_pessimistic_locks_with_concurrent_prewrite`: a prewrite that marked a lock in
/// the old epoch cannot remove it after the split (version changed): the moved lock stays,
/// unmarked, in the new region.
#[test]
fn test_split_pessimistic_locks_with_concurrent_prewrite() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"z", lock(b"z", 10)), 1, 1).unwrap();
    t.mark_deleted(b"z");
    let (left, right) = left_right(b"m");
    let mut new = t.split(2, &left, &[right]).unwrap();
    assert!(!new[0].remove_applied(b"z", 1, 1), "stale epoch");
    assert!(!new[0].get(b"z").unwrap().is_deleted());
}

/// Bad split ranges are errors and change nothing.
#[test]
fn split_rejects_bad_ranges_and_changes_nothing() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"c", lock(b"c", 1)), 1, 1).unwrap();
    t.try_insert(one(b"x", lock(b"c", 1)), 1, 1).unwrap();
    let keep = KeyRange::new(b"a".to_vec(), b"m".to_vec());
    // Overlap.
    assert_eq!(
        t.split(2, &keep, &[KeyRange::from_start(b"l".to_vec())])
            .unwrap_err(),
        LockError::OverlappingSplitRanges {
            first: 0,
            second: 1
        }
    );
    // Gap holding a lock.
    assert_eq!(
        t.split(2, &keep, &[KeyRange::from_start(b"y".to_vec())])
            .unwrap_err(),
        LockError::KeyOutsideSplitRanges { key: b"x".to_vec() }
    );
    // Lock before the first range.
    assert_eq!(
        t.split(
            2,
            &KeyRange::new(b"d".to_vec(), b"m".to_vec()),
            &[KeyRange::from_start(b"m".to_vec())]
        )
        .unwrap_err(),
        LockError::KeyOutsideSplitRanges { key: b"c".to_vec() }
    );
    // Lock after the last range.
    assert_eq!(
        t.split(2, &keep, &[KeyRange::new(b"m".to_vec(), b"w".to_vec())])
            .unwrap_err(),
        LockError::KeyOutsideSplitRanges { key: b"x".to_vec() }
    );
    // Empty range.
    assert_eq!(
        t.split(2, &keep, &[KeyRange::new(b"z".to_vec(), b"z".to_vec())])
            .unwrap_err(),
        LockError::EmptySplitRange { index: 1 }
    );
    assert_eq!((t.len(), t.version()), (2, 1));
    // A gap without locks is fine.
    let new = t
        .split(2, &keep, &[KeyRange::from_start(b"w".to_vec())])
        .unwrap();
    assert_eq!((t.len(), new[0].len()), (1, 1));
}

/// Splitting a full 512 KiB region into many: every lock lands in exactly one table, memory
/// adds up exactly, and the new tables can be split again.
#[test]
fn split_full_region_into_many() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    let mut i = 0u32;
    loop {
        let key = format!("key{i:08}").into_bytes();
        if t.try_insert(one(&key, lock(b"primary-key-000", 1)), 1, 1)
            .is_err()
        {
            break;
        }
        i += 1;
    }
    let n = t.len();
    assert!(t.memory_size() <= 512 << 10 && t.memory_size() > (512 << 10) - 200);
    let bounds: Vec<Vec<u8>> = (1..8)
        .map(|j| format!("key{:08}", j * n / 8).into_bytes())
        .collect();
    let keep = KeyRange::new(Vec::new(), bounds[0].clone());
    let mut others: Vec<KeyRange> = bounds
        .windows(2)
        .map(|w| KeyRange::new(w[0].clone(), w[1].clone()))
        .collect();
    others.push(KeyRange::from_start(bounds[6].clone()));
    let before = t.memory_size();
    let mut new = t.split(2, &keep, &others).unwrap();
    let total: usize = new.iter().map(|x| x.len()).sum::<usize>() + t.len();
    assert_eq!(total, n);
    let bytes: usize = new.iter().map(|x| x.memory_size()).sum::<usize>() + t.memory_size();
    assert_eq!(bytes, before);
    for x in &new {
        assert_eq!(x.memory_size(), recount(x));
        assert!(x.len() >= n / 8 - 1);
    }
    // Split a child again.
    let child_keep = KeyRange::new(
        bounds[0].clone(),
        format!("key{:08}", n / 8 + 5).into_bytes(),
    );
    let child_other = KeyRange::new(
        format!("key{:08}", n / 8 + 5).into_bytes(),
        bounds[1].clone(),
    );
    let grand = new[0].split(3, &child_keep, &[child_other]).unwrap();
    assert_eq!(new[0].len(), 5);
    assert_eq!(budget.used(), bytes);
    drop(grand);
    drop(new);
    drop(t);
    assert_eq!(budget.used(), 0);
}
