//! The write and read paths: TiKV `src/storage/mod.rs` and failpoint scenarios that touch
//! inserting, marking deleted, removing on apply and reading with term/version checks.

use std::thread;
use std::time::Duration;

use surge_lock_table::{
    LockError, LockStatus, LockWaitManager, MemoryBudget, RefuseReason, SharedRegionLockTable,
    WaitConfig, WaitOutcome,
};

use crate::common::*;

/// `test_write_in_memory_pessimistic_locks`: the lock lands in the map, a second transaction
/// waits for it, and prewrite (mark deleted, then remove on apply) takes it out and wakes it.
#[test]
fn test_write_in_memory_pessimistic_locks() {
    let budget = MemoryBudget::default();
    let table = SharedRegionLockTable::<PLock>::new(&budget);
    table.become_leader(1, 1);
    table.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    assert_eq!(table.get(b"k").unwrap().lock().start_ts, 10);

    let waits =
        LockWaitManager::new(WaitConfig::default().with_default_timeout(Duration::from_secs(10)));
    let handle = waits.enqueue(b"k", 20, 10).unwrap();
    let waiter = thread::spawn(move || handle.wait(None));

    // Prewrite of txn 10 replaces the pessimistic lock through Raft: mark, apply, remove.
    {
        let mut guard = table.write();
        assert!(guard.mark_deleted(b"k"));
    }
    assert!(
        table.get(b"k").unwrap().is_deleted(),
        "visible until applied"
    );
    assert!(table.remove_applied(b"k", 1, 1));
    assert!(table.get(b"k").is_none());
    waits.wake_up(b"k", 10);
    assert_eq!(waiter.join().unwrap(), WaitOutcome::Woken);
    assert_eq!(budget.used(), 0);
}

/// `test_disable_in_memory_pessimistic_locks`: with a zero node budget every lock is refused
/// and handed back for the replicated path; nothing is stored.
#[test]
fn test_disable_in_memory_pessimistic_locks() {
    let budget = budget_with(0, 512 << 10);
    let mut t = leader(&budget, 1, 1);
    let refused = t.try_insert(one(b"k", lock(b"k", 1)), 1, 1).unwrap_err();
    assert!(matches!(
        refused.reason,
        RefuseReason::NodeBudgetFull { .. }
    ));
    assert!(refused.reason.should_fall_back());
    assert_eq!(refused.into_batch(), one(b"k", lock(b"k", 1)));
    assert!(t.is_empty());
}

/// `test_pessimistic_lock_check_epoch`: transferred out and back in a new term, a request of
/// the old term is refused (StaleCommand on the read path).
#[test]
fn test_pessimistic_lock_check_epoch() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 6, 1);
    t.become_follower();
    t.become_leader(8, 1);
    let refused = t.try_insert(one(b"k", lock(b"k", 1)), 6, 1).unwrap_err();
    assert_eq!(
        refused.reason,
        RefuseReason::TermMismatch {
            table: 8,
            request: 6
        }
    );
    assert_eq!(
        t.check_term_version(6, 1),
        Err(LockError::StaleCommand {
            table: 8,
            request: 6
        })
    );
    assert_eq!(budget.counters().refused_term_mismatch, 1);
}

/// `test_pessimistic_lock_check_valid`: while `TransferringLeader` an insert falls back
/// (no region error), and the map stays empty.
#[test]
fn test_pessimistic_lock_check_valid() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    assert!(t.start_transfer().unwrap().is_empty());
    let refused = t.try_insert(one(b"k", lock(b"k", 1)), 1, 1).unwrap_err();
    assert_eq!(
        refused.reason,
        RefuseReason::NotWritable {
            status: LockStatus::TransferringLeader
        }
    );
    assert!(t.is_empty());
    assert!(t.check_term_version(1, 1).is_ok(), "reads are still valid");
}

/// `test_concurrent_write_after_transfer_leader_invalidates_locks`: after the transfer
/// started, another transaction's prewrite still sees the memory lock.
#[test]
fn test_concurrent_write_after_transfer_leader_invalidates_locks() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.start_transfer().unwrap();
    let seen = t.get_checked(b"k", 1, 1).unwrap().unwrap();
    assert_eq!(
        seen.lock().start_ts,
        10,
        "prewrite of another txn gets Locked"
    );
}

/// `test_read_lock_after_become_follower`: prewrite on the old leader gets a region error,
/// never a spurious "lock not found".
#[test]
fn test_read_lock_after_become_follower() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.become_follower();
    assert_eq!(t.get_checked(b"k", 1, 1), Err(LockError::NotLeader));
    t.become_leader(2, 1);
    assert_eq!(
        t.get_checked(b"k", 1, 1),
        Err(LockError::StaleCommand {
            table: 2,
            request: 1
        })
    );
    assert_eq!(
        t.get_checked(b"k", 2, 0),
        Err(LockError::EpochNotMatch {
            table: 1,
            request: 0
        })
    );
    assert_eq!(t.get_checked(b"k", 2, 1), Ok(None));
}

/// `remove_applied` removes only when term and version are unchanged since the mark.
#[test]
fn remove_applied_checks_term_and_version() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    t.mark_deleted(b"k");
    assert!(!t.remove_applied(b"k", 0, 1));
    assert!(!t.remove_applied(b"k", 1, 2));
    assert!(t.get(b"k").is_some());
    assert!(t.remove_applied(b"k", 1, 1));
    assert!(!t.mark_deleted(b"k"), "nothing left to mark");
    t.try_insert(
        vec![
            (b"a".to_vec(), lock(b"a", 1)),
            (b"b".to_vec(), lock(b"a", 1)),
        ],
        1,
        1,
    )
    .unwrap();
    assert_eq!(t.remove_applied_batch(&[b"a", b"b", b"c"], 1, 2), 0);
    assert_eq!(t.remove_applied_batch(&[b"a", b"b", b"c"], 1, 1), 2);
    assert_eq!(budget.used(), 0);
}

/// Overwriting a key charges only the size difference, both ways, and clears the mark.
#[test]
fn overwrite_charges_only_the_difference() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"short", 1)), 1, 1).unwrap();
    t.mark_deleted(b"k");
    let grown = t
        .try_insert(one(b"k", lock(b"a-much-longer-primary", 2)), 1, 1)
        .unwrap();
    assert_eq!(
        grown.bytes_delta,
        ("a-much-longer-primary".len() - "short".len()) as isize
    );
    assert!(
        !t.get(b"k").unwrap().is_deleted(),
        "a new lock is not deleted"
    );
    assert_eq!(t.memory_size(), charge(b"k", b"a-much-longer-primary"));
    let shrunk = t.try_insert(one(b"k", lock(b"p", 3)), 1, 1).unwrap();
    assert_eq!(
        shrunk.bytes_delta,
        1 - "a-much-longer-primary".len() as isize
    );
    assert_eq!(t.memory_size(), charge(b"k", b"p"));
    assert_eq!(budget.used(), t.memory_size());
    assert_eq!(t.len(), 1);
}

/// A key repeated within one batch is stored once, with the later lock, charged once.
#[test]
fn duplicate_keys_in_a_batch_are_charged_once() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    let report = t
        .try_insert(
            vec![
                (b"k".to_vec(), lock(b"first", 1)),
                (b"j".to_vec(), lock(b"x", 1)),
                (b"k".to_vec(), lock(b"second!", 2)),
            ],
            1,
            1,
        )
        .unwrap();
    assert_eq!(report.overwritten, 1);
    assert_eq!(t.len(), 2);
    assert_eq!(t.get(b"k").unwrap().lock().start_ts, 2);
    assert_eq!(
        t.memory_size(),
        charge(b"k", b"second!") + charge(b"j", b"x")
    );
    assert_eq!(budget.used(), t.memory_size());
    assert_eq!(budget.counters().current_locks, 2);
}

/// Bad input: a key over the maximum is refused with an error naming it, not stored; the
/// maximum is configurable at run time.
#[test]
fn oversized_key_is_refused_not_stored() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    let big = vec![7u8; (64 << 10) + 1];
    let batch = vec![
        (b"ok".to_vec(), lock(b"p", 1)),
        (big.clone(), lock(b"p", 1)),
    ];
    let refused = t.try_insert(batch, 1, 1).unwrap_err();
    assert_eq!(
        refused.reason,
        RefuseReason::KeyTooLarge {
            index: 1,
            len: big.len(),
            max: 64 << 10
        }
    );
    assert!(!refused.reason.should_fall_back());
    assert!(refused.to_string().contains("key #1"), "{refused}");
    assert!(t.is_empty());
    // Exactly the maximum is accepted.
    t.try_insert(one(&big[..64 << 10], lock(b"p", 1)), 1, 1)
        .unwrap();
    budget.set_max_key_size(4);
    assert!(matches!(
        t.try_insert(one(b"12345", lock(b"p", 1)), 1, 1)
            .unwrap_err()
            .reason,
        RefuseReason::KeyTooLarge { len: 5, max: 4, .. }
    ));
    assert_eq!(budget.counters().refused_key_too_large, 2);
}

/// `test_leader_drop_with_pessimistic_lock`: isolating the leader loses its locks; on
/// re-election the map is empty, and the loss is counted.
#[test]
fn test_leader_drop_with_pessimistic_lock() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k1", lock(b"k1", 1)), 1, 1).unwrap();
    t.try_insert(one(b"k2", lock(b"k1", 1)), 1, 1).unwrap();
    let bytes = t.memory_size();
    let lost = t.become_follower();
    assert_eq!((lost.locks, lost.bytes), (2, bytes));
    assert_eq!(t.status(), LockStatus::NotLeader);
    assert!(matches!(
        t.try_insert(one(b"k3", lock(b"k3", 2)), 1, 1)
            .unwrap_err()
            .reason,
        RefuseReason::NotWritable {
            status: LockStatus::NotLeader
        }
    ));
    t.become_leader(3, 1);
    assert!(t.is_empty());
    let c = budget.counters();
    assert_eq!(
        (c.dropped_on_leader_loss, c.dropped_bytes_on_leader_loss),
        (2, bytes as u64)
    );
    assert_eq!(c.current_bytes, 0);
}

/// `test_flashback_with_in_memory_pessimistic_locks`: flashback clears and blocks, then the
/// table is writable again.
#[test]
fn test_flashback_with_in_memory_pessimistic_locks() {
    let budget = MemoryBudget::default();
    let mut t = leader(&budget, 1, 1);
    t.try_insert(one(b"k", lock(b"k", 1)), 1, 1).unwrap();
    assert_eq!(t.start_flashback().locks, 1);
    assert_eq!(t.status(), LockStatus::Flashback);
    assert_eq!(
        t.check_term_version(1, 1),
        Err(LockError::FlashbackInProgress)
    );
    assert!(t.try_insert(one(b"k", lock(b"k", 2)), 1, 1).is_err());
    assert!(t.end_flashback());
    t.try_insert(one(b"k", lock(b"k", 2)), 1, 1).unwrap();
    assert_eq!(budget.used(), t.memory_size());
}

/// tikv#19864: a lock refresh that falls back to Raft must not leave the older memory lock
/// shadowing the newer replicated one. The caller marks it deleted under the same guard; the
/// replicated write's apply then removes it.
#[test]
fn fallback_marks_the_stale_memory_lock_tikv_19864() {
    let budget = MemoryBudget::default();
    let table = SharedRegionLockTable::<PLock>::new(&budget);
    table.become_leader(1, 1);
    table.try_insert(one(b"k", lock(b"k", 10)), 1, 1).unwrap();
    table.start_transfer().unwrap(); // the refresh below now falls back
    let mut refreshed = lock(b"k", 10);
    refreshed.for_update_ts = 30;
    {
        let mut guard = table.write();
        let refused = guard.try_insert(one(b"k", refreshed), 1, 1).unwrap_err();
        assert!(refused.reason.should_fall_back());
        let keys: Vec<&[u8]> = refused.batch.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(guard.mark_deleted_batch(&keys), 1);
    }
    // Readers see the old lock flagged as deleted, so they go on to the persistent lock.
    let entry = table.get(b"k").unwrap();
    assert!(entry.is_deleted());
    assert_eq!(entry.lock().for_update_ts, 20);
    assert!(table.remove_applied(b"k", 1, 1));
    assert_eq!(table.mark_deleted_batch(&[b"k"]), 0);
}

/// A lock whose reported heap size changes between calls (a size read from state other threads change, say)
/// must not make the accounting drift: each entry is charged once, with the size that was
/// reserved, and the budget releases exactly that.
#[test]
fn unstable_heap_size_cannot_make_accounting_drift() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use surge_lock_table::{LockValue, RegionLockTable};

    #[derive(Debug, Clone)]
    struct Shifty(Arc<AtomicUsize>);
    impl LockValue for Shifty {
        fn heap_size(&self) -> usize {
            // 0, 100, 200, ... on successive calls.
            self.0.fetch_add(1, Ordering::Relaxed) * 100
        }
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let budget = MemoryBudget::default();
    let mut t = RegionLockTable::<Shifty>::new(&budget);
    t.become_leader(1, 1);
    t.try_insert(vec![(b"a".to_vec(), Shifty(calls.clone()))], 1, 1)
        .unwrap();
    t.try_insert(
        vec![
            (b"b".to_vec(), Shifty(calls.clone())),
            (b"c".to_vec(), Shifty(calls.clone())),
        ],
        1,
        1,
    )
    .unwrap();
    let recount: usize = t.iter().map(|(_, e)| e.charged_bytes()).sum();
    assert_eq!(t.memory_size(), recount);
    assert_eq!(budget.used(), t.memory_size());
    assert_eq!(t.remove_applied_batch(&[b"a", b"b", b"c"], 1, 1), 3);
    assert_eq!((t.memory_size(), budget.used()), (0, 0));
}
