//! Voluntary leader transfer (TiKV `test_transfer_leader.rs` and its failpoint cases).

use surge_lock_table::{LockError, LockStatus, MemoryBudget, RefuseReason};

use crate::common::*;

/// `test_propose_in_memory_pessimistic_locks`: the locks to propose before the transfer
/// are exactly the table's locks, in key order; they stay readable meanwhile.
#[test]
fn test_propose_in_memory_pessimistic_locks_on_transfer() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k2", lock(b"k1", 10)), 1, 1).unwrap();
    t.try_insert(one(b"k1", lock(b"k1", 10)), 1, 1).unwrap();
    let locks = t.start_transfer().unwrap();
    assert_eq!(
        locks,
        vec![
            (b"k1".to_vec(), lock(b"k1", 10)),
            (b"k2".to_vec(), lock(b"k1", 10))
        ]
    );
    assert_eq!(t.status(), LockStatus::TransferringLeader);
    assert_eq!(t.len(), 2);
    assert_eq!(budget.counters().migrated_on_transfer, 2);
    // The transfer completes: the old leader clears its map.
    assert_eq!(t.become_follower().locks, 2);
    // The new leader receives them as migrated locks.
    let mut new_leader = leader(&budget, 2, 1);
    new_leader.insert_migrated(locks).unwrap();
    assert_eq!(new_leader.len(), 2);
    assert_eq!(budget.used(), new_leader.memory_size());
    assert_eq!(budget.counters().received_migrated, 2);
}

/// `test_memory_pessimistic_locks_status_after_transfer_leader_failure`: the transfer did not
/// happen; after the caller's timeout the table is writable again and kept its locks.
#[test]
fn test_memory_pessimistic_locks_status_after_transfer_leader_failure() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.start_transfer().unwrap();
    assert!(matches!(
        t.try_insert(one(b"j", lock(b"j", 11)), 1, 1)
            .unwrap_err()
            .reason,
        RefuseReason::NotWritable {
            status: LockStatus::TransferringLeader
        }
    ));
    assert!(t.abort_transfer());
    assert_eq!(t.status(), LockStatus::Normal);
    assert!(!t.abort_transfer(), "second abort changes nothing");
    t.try_insert(one(b"j", lock(b"j", 11)), 1, 1).unwrap();
    assert_eq!(t.len(), 2);
}

/// A retried transfer (status already non-writable) proposes no locks a second time.
#[test]
fn transfer_retry_proposes_nothing() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    assert_eq!(t.start_transfer().unwrap().len(), 1);
    assert!(t.start_transfer().unwrap().is_empty());
    assert_eq!(t.status(), LockStatus::TransferringLeader);
    t.become_follower();
    assert_eq!(t.start_transfer(), Err(LockError::NotLeader));
}

/// `test_delete_lock_proposed_before_proposing_locks`: a lock marked deleted before the
/// transfer is not proposed; the delete's apply then removes it.
#[test]
fn test_delete_lock_proposed_before_proposing_locks() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.try_insert(one(b"j", lock(b"k", 10)), 1, 1).unwrap();
    t.mark_deleted(b"k");
    let proposed = t.start_transfer().unwrap();
    assert_eq!(proposed, vec![(b"j".to_vec(), lock(b"k", 10))]);
    assert!(t.remove_applied(b"k", 1, 1));
    assert_eq!(t.len(), 1);
}

/// `test_delete_lock_proposed_after_proposing_locks_{1,2}`: the cleanup marks the lock after
/// the locks were proposed (once or twice); its apply still removes it, so the new leader
/// ends with no lock once the cleanup applies there too.
#[test]
fn test_delete_lock_proposed_after_proposing_locks_1() {
    delete_lock_proposed_after_proposing_locks(1);
}

/// As `_1`, with two transfer messages (the second proposes nothing).
#[test]
fn test_delete_lock_proposed_after_proposing_locks_2() {
    delete_lock_proposed_after_proposing_locks(2);
}

#[allow(clippy::unwrap_used)] // a helper of two #[test] fns, as strict as they are
fn delete_lock_proposed_after_proposing_locks(transfer_messages: usize) {
    {
        let budget = MemoryBudget::default();
        let mut t = leader(&budget, 1, 1);
        t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
        let mut proposed = Vec::new();
        for _ in 0..transfer_messages {
            proposed.extend(t.start_transfer().unwrap());
        }
        assert_eq!(proposed.len(), 1, "locks are proposed once");
        t.mark_deleted(b"k");
        assert!(t.remove_applied(b"k", 1, 1));
        assert!(t.is_empty());
        // On the new leader: the proposed lock, then the cleanup, apply in log order.
        let mut new_leader = leader(&budget, 2, 1);
        new_leader.insert_migrated(proposed).unwrap();
        assert!(new_leader.remove_applied(b"k", 2, 1));
        assert!(new_leader.is_empty());
    }
}

/// `test_scan_locks_with_in_progress_transfer_leader`: while the locks are being proposed
/// they are still in memory; a scan returns each key once.
#[test]
fn test_scan_locks_with_in_progress_transfer_leader() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    for k in [b"a", b"b", b"c"] {
        t.try_insert(one(k, lock(b"a", 10)), 1, 1).unwrap();
    }
    t.start_transfer().unwrap();
    let scan = t.scan(&surge_lock_table::KeyRange::all(), 0);
    let keys: Vec<&[u8]> = scan.entries.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, vec![&b"a"[..], b"b", b"c"]);
}
