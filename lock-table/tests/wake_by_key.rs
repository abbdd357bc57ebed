//! A release wakes the waiters of its key whoever they queued under: a lock that changed
//! hands before a waiter enqueued must not cost that waiter its whole timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use surge_lock_table::{LockWaitManager, MemoryBudget, SharedRegionLockTable, WaitOutcome};

use crate::common::{leader_handle, wait_manager};

/// Removes `key`'s lock as a commit or rollback does once applied, then wakes its waiters.
fn release(table: &SharedRegionLockTable<u64>, waits: &LockWaitManager, key: &[u8], holder: u64) {
    table.mark_deleted(key);
    assert!(table.remove_applied(key, 1, 1));
    waits.wake_up(key, holder);
}

/// The lost wake-up: txn 20 sees "k" held by txn 10; txn 10 releases (nobody is queued,
/// nobody is woken); txn 30 locks "k"; txn 20 enqueues under txn 10, re-checks ("k" is still
/// locked, by txn 30) and waits. Txn 30's release must wake it.
#[test]
fn wake_up_reaches_a_waiter_queued_under_an_earlier_holder() {
    let budget = MemoryBudget::default();
    let table = leader_handle(&budget);
    let waits = wait_manager(20);
    table.try_insert(vec![(b"k".to_vec(), 10)], 1, 1).unwrap();
    let seen_holder = *table.get(b"k").unwrap().lock();
    assert_eq!(seen_holder, 10);
    // Txn 10 releases before txn 20 enqueues: nobody to wake.
    release(&table, &waits, b"k", 10);
    table.try_insert(vec![(b"k".to_vec(), 30)], 1, 1).unwrap();
    // Txn 20: enqueue, re-check, wait.
    let handle = waits.enqueue(b"k", 20, seen_holder).unwrap();
    assert_eq!(table.get(b"k").map(|e| *e.lock()), Some(30));
    // A 3 s bound keeps a failing run short; the default timeout here is 20 s.
    let waiter = thread::spawn(move || {
        let started = Instant::now();
        (handle.wait(Some(Duration::from_secs(3))), started.elapsed())
    });
    table.mark_deleted(b"k");
    assert!(table.remove_applied(b"k", 1, 1));
    let report = waits.wake_up(b"k", 30);
    assert_eq!(report.woken, Some(20), "txn 30's release reaches txn 20");
    let (outcome, waited) = waiter.join().unwrap();
    assert_eq!(outcome, WaitOutcome::Woken);
    assert!(waited < Duration::from_secs(2), "waited {waited:?}");
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}

/// Waiters queued under different holders of one key are all woken by its next release,
/// the smallest `start_ts` at once and the others after the delay.
#[test]
fn waiters_under_different_holders_are_ordered_by_start_ts() {
    let waits = wait_manager(200);
    let late = waits.enqueue(b"k", 40, 10).unwrap();
    let early = waits.enqueue(b"k", 20, 30).unwrap();
    let report = waits.wake_up(b"k", 30);
    assert_eq!((report.woken, report.delayed), (Some(20), 1));
    assert_eq!(early.wait(None), WaitOutcome::Woken);
    let started = Instant::now();
    assert_eq!(late.wait(None), WaitOutcome::WokenAfterDelay);
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Threads contend for one key with the full protocol (look, enqueue under the holder seen,
/// re-check, wait; release = remove the lock, then wake the key), so the lock often changes
/// hands between a look and an enqueue. No wait may time out: every release reaches the
/// waiters that were queued when it happened.
#[test]
fn contended_key_with_changing_holders_never_times_out() {
    const THREADS: u64 = 6;
    const ROUNDS: u64 = 150;
    let budget = MemoryBudget::default();
    let table = leader_handle(&budget);
    let waits = wait_manager(1);
    let timeouts = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (table, waits, timeouts) = (table.clone(), waits.clone(), timeouts.clone());
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    if timeouts.load(Ordering::Relaxed) > 0 {
                        return; // already failed: end soon
                    }
                    let me = 1000 * (round + 1) + t; // a new transaction each round
                    loop {
                        let holder = {
                            let mut guard = table.write();
                            match guard.get(b"k").map(|e| *e.lock()) {
                                Some(holder) => holder,
                                None => {
                                    guard.try_insert_one(b"k".to_vec(), me, 1, 1).unwrap();
                                    break;
                                }
                            }
                        };
                        // Let the lock change hands between the look and the enqueue.
                        thread::yield_now();
                        let handle = match waits.enqueue(b"k", me, holder) {
                            Ok(handle) => handle,
                            Err(deadlock) => panic!("one key cannot deadlock: {deadlock}"),
                        };
                        if table.get(b"k").is_none() {
                            continue; // released meanwhile: retry at once
                        }
                        if handle.wait(Some(Duration::from_secs(5))) == WaitOutcome::TimedOut {
                            timeouts.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    thread::yield_now();
                    release(&table, &waits, b"k", me);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(timeouts.load(Ordering::Relaxed), 0, "a release was lost");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
    assert_eq!(budget.used(), 0);
}
