//! Lock waiting: timeouts, smallest-start_ts-first wake-up, delayed wake of the others,
//! deadlock refusal and clean-up.

use std::thread;
use std::time::{Duration, Instant};

use surge_lock_table::{Deadlock, LockWaitManager, WaitConfig, WaitOutcome, WaitRefused};

use crate::common::{leader_handle, wait_manager as manager};

/// The deadlock an enqueue was refused with.
fn deadlock(refused: WaitRefused) -> Deadlock {
    match refused {
        WaitRefused::Deadlock(d) => d,
        other => panic!("refused for another reason: {other}"),
    }
}

#[test]
fn smallest_start_ts_is_woken_first_others_after_the_delay() {
    let waits = manager(300);
    let mut threads = Vec::new();
    for start_ts in [30u64, 10, 20] {
        let handle = waits.enqueue(b"k", start_ts, 5).unwrap();
        threads.push(thread::spawn(move || {
            let outcome = handle.wait(None);
            (start_ts, outcome, Instant::now())
        }));
    }
    assert_eq!(waits.waiters(b"k"), 3);
    let released = Instant::now();
    let report = waits.wake_up(b"k", 5);
    assert_eq!(report.woken, Some(10));
    assert_eq!(report.delayed, 2);
    let mut results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    results.sort_by_key(|r| r.0);
    assert_eq!(results[0].1, WaitOutcome::Woken);
    for (start_ts, outcome, at) in &results[1..] {
        assert_eq!(*outcome, WaitOutcome::WokenAfterDelay, "txn {start_ts}");
        assert!(at.duration_since(released) >= Duration::from_millis(300));
    }
    assert_eq!(waits.total_waiters(), 0);
}

#[test]
fn wait_times_out_and_leaves_the_queue() {
    let waits = manager(20);
    let started = Instant::now();
    let outcome = waits
        .wait_for(b"k", 2, 1, Some(Duration::from_millis(50)))
        .unwrap();
    assert_eq!(outcome, WaitOutcome::TimedOut);
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(waits.waiters(b"k"), 0);
    assert_eq!(
        waits.with_detector(|d| d.edge_count()),
        0,
        "edge cleaned up"
    );
    // Nobody left to wake.
    assert_eq!(waits.wake_up(b"k", 1).woken, None);
}

#[test]
fn enqueue_refuses_a_deadlock() {
    let waits = manager(20);
    let _t1_waits_t2 = waits.enqueue(b"a", 1, 2).unwrap();
    let _t2_waits_t3 = waits.enqueue(b"b", 2, 3).unwrap();
    let err = deadlock(waits.enqueue(b"c", 3, 1).unwrap_err());
    assert_eq!(err.wait_chain.len(), 3);
    assert_eq!(waits.waiters(b"c"), 0, "the victim is not queued");
}

#[test]
fn dropping_a_handle_leaves_the_queue_and_clears_the_edge() {
    let waits = manager(20);
    let handle = waits.enqueue(b"a", 1, 2).unwrap();
    assert_eq!(waits.waiters(b"a"), 1);
    drop(handle);
    assert_eq!(waits.waiters(b"a"), 0);
    // 2 waiting for 1 is no deadlock any more.
    let _h = waits.enqueue(b"b", 2, 1).unwrap();
}

/// Wake-ups go by key: a release of "k" wakes its waiters whichever holder they queued under
/// (the lock may have changed hands before they enqueued); a release of another key wakes
/// nobody.
#[test]
fn wake_up_wakes_the_waiters_of_the_key_whoever_the_holder() {
    let waits = manager(20);
    let h = waits.enqueue(b"k", 7, 5).unwrap();
    assert_eq!(waits.wake_up(b"other", 5).woken, None);
    assert_eq!(waits.waiters(b"k"), 1);
    let t = thread::spawn(move || h.wait(Some(Duration::from_secs(10))));
    assert_eq!(waits.wake_up(b"k", 6).woken, Some(7));
    assert_eq!(t.join().unwrap(), WaitOutcome::Woken);
}

#[test]
fn wake_before_wait_is_not_lost() {
    let waits = manager(20);
    let h = waits.enqueue(b"k", 7, 5).unwrap();
    assert_eq!(waits.wake_up(b"k", 5).woken, Some(7));
    assert_eq!(h.wait(Some(Duration::from_secs(5))), WaitOutcome::Woken);
}

/// Waiters with tiny timeouts race a thread that keeps releasing the lock: every waiter ends
/// with exactly one outcome, none hangs, and the queues and the wait-for graph end empty.
#[test]
fn waits_racing_wake_ups_all_finish_and_clean_up() {
    let waits = manager(1);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waker = {
        let (waits, stop) = (waits.clone(), stop.clone());
        thread::spawn(move || {
            let mut woken = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                woken += usize::from(waits.wake_up(b"k", 1).woken.is_some());
                thread::yield_now();
            }
            woken
        })
    };
    let started = Instant::now();
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let waits = waits.clone();
            thread::spawn(move || {
                let mut outcomes = [0usize; 3];
                for i in 0..60u64 {
                    let start_ts = 100 + t * 1000 + i;
                    let timeout = Duration::from_micros((i % 5) * 400);
                    let outcome = waits.wait_for(b"k", start_ts, 1, Some(timeout)).unwrap();
                    outcomes[match outcome {
                        WaitOutcome::Woken => 0,
                        WaitOutcome::WokenAfterDelay => 1,
                        WaitOutcome::TimedOut => 2,
                        WaitOutcome::Closed => panic!("nobody closed the manager"),
                        other => panic!("an outcome this test does not know: {other:?}"),
                    }] += 1;
                }
                outcomes
            })
        })
        .collect();
    let mut total = [0usize; 3];
    for t in threads {
        let o = t.join().unwrap();
        for i in 0..3 {
            total[i] += o[i];
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let woken_by_waker = waker.join().unwrap();
    assert_eq!(total.iter().sum::<usize>(), 8 * 60);
    assert_eq!(
        total[0], woken_by_waker,
        "each immediate wake reached its waiter"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(waits.queued_keys(), 0);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}

/// Huge durations (a caller's "wait forever") must not overflow `Instant` and panic: a huge
/// timeout waits until woken, a huge wake-up delay leaves the others to their own timeouts.
#[test]
fn huge_timeout_and_delay_do_not_panic() {
    let waits = LockWaitManager::new(
        WaitConfig::default()
            .with_default_timeout(Duration::MAX)
            .with_wake_up_delay(Duration::MAX),
    );
    let first = waits.enqueue(b"k", 1, 9).unwrap();
    let second = waits.enqueue(b"k", 2, 9).unwrap();
    let t = thread::spawn(move || first.wait(Some(Duration::MAX)));
    thread::sleep(Duration::from_millis(20));
    let report = waits.wake_up(b"k", 9);
    assert_eq!((report.woken, report.delayed), (Some(1), 1));
    assert_eq!(t.join().unwrap(), WaitOutcome::Woken);
    // The delayed one never reaches its (infinite) delay; its own short timeout ends it.
    assert_eq!(
        second.wait(Some(Duration::from_millis(30))),
        WaitOutcome::TimedOut
    );
    // The default timeout (Duration::MAX) also works, ended by a wake-up.
    let third = waits.enqueue(b"j", 3, 9).unwrap();
    let t = thread::spawn(move || third.wait(None));
    thread::sleep(Duration::from_millis(20));
    assert_eq!(waits.wake_up(b"j", 9).woken, Some(3));
    assert_eq!(t.join().unwrap(), WaitOutcome::Woken);
    assert_eq!(waits.total_waiters(), 0);
}

/// A wait longer than the detector's edge TTL keeps its wait-for edge alive, so a deadlock
/// closed late in the wait is still found (TTL here: 3 x 100 ms, refreshed every 150 ms,
/// which leaves a loaded CI machine 150 ms of slack; the wait lasts up to 10 s).
#[test]
fn long_wait_keeps_its_edge_so_late_deadlocks_are_found() {
    let waits = LockWaitManager::new(
        WaitConfig::default()
            .with_default_timeout(Duration::from_millis(100))
            .with_wake_up_delay(Duration::from_millis(20)),
    );
    let ttl = waits.with_detector(|d| d.ttl());
    let h = waits.enqueue(b"a", 1, 2).unwrap();
    let t = thread::spawn(move || h.wait(Some(Duration::from_secs(10))));
    thread::sleep(ttl * 4);
    // Txn 1 still waits for txn 2, so txn 2 waiting for txn 1 is a deadlock.
    let err = deadlock(waits.enqueue(b"b", 2, 1).unwrap_err());
    assert_eq!(err.wait_chain.len(), 2);
    assert_eq!(waits.wake_up(b"a", 2).woken, Some(1));
    assert_eq!(t.join().unwrap(), WaitOutcome::Woken);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}

/// Changing the default timeout at run time also stretches the edge TTL, which must outlive
/// the waits.
#[test]
fn set_config_keeps_the_edge_ttl_above_the_timeout() {
    let waits = LockWaitManager::new(
        WaitConfig::default()
            .with_default_timeout(Duration::from_millis(20))
            .with_wake_up_delay(Duration::from_millis(20)),
    );
    assert!(waits.with_detector(|d| d.ttl()) < Duration::from_secs(1));
    waits.set_config(
        WaitConfig::default()
            .with_default_timeout(Duration::from_secs(60))
            .with_wake_up_delay(Duration::from_millis(20)),
    );
    assert!(waits.with_detector(|d| d.ttl()) >= Duration::from_secs(60));
}

/// The enqueue / re-check / wait protocol: a release between the re-check and the wait (or
/// between the enqueue and the re-check) is never lost, the wait returns at once.
#[test]
fn release_between_recheck_and_wait_is_not_lost() {
    let budget = surge_lock_table::MemoryBudget::default();
    let table = leader_handle(&budget);
    let waits = manager(20);
    for round in 0..50u64 {
        let key = round.to_be_bytes();
        table.try_insert(vec![(key.to_vec(), 10)], 1, 1).unwrap();
        let handle = waits.enqueue(&key, 20 + round, 10).unwrap();
        let still_locked = table.get(&key).is_some();
        // The holder releases right after the re-check, from another thread.
        let releaser = {
            let (table, waits) = (table.clone(), waits.clone());
            thread::spawn(move || {
                table.mark_deleted(&key);
                table.remove_applied(&key, 1, 1);
                waits.wake_up(&key, 10)
            })
        };
        if still_locked {
            let started = Instant::now();
            // The default timeout is 20 s: returning fast proves the wake-up reached us.
            assert_eq!(handle.wait(None), WaitOutcome::Woken);
            assert!(started.elapsed() < Duration::from_secs(5));
        }
        assert_eq!(releaser.join().unwrap().woken, Some(20 + round));
    }
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(budget.used(), 0);
}

/// `test_detect_deadlock_when_updating_wait_info`: txn 1 waited for txn 2; txn 2 released and
/// txn 3 took the lock, so txn 1 now waits for txn 3. The old edge is gone (txn 2 waiting
/// for txn 1 is no deadlock) and the new one is live (txn 3 waiting for txn 1 is).
#[test]
fn test_detect_deadlock_when_updating_wait_info() {
    let waits = manager(20);
    let h = waits.enqueue(b"k", 1, 2).unwrap();
    assert_eq!(waits.wake_up(b"k", 2).woken, Some(1));
    assert_eq!(h.wait(None), WaitOutcome::Woken);
    // Txn 3 got the lock first; txn 1 waits again, for txn 3.
    let h = waits.enqueue(b"k", 1, 3).unwrap();
    let not_deadlocked = waits.enqueue(b"j", 2, 1).unwrap();
    let err = deadlock(waits.enqueue(b"m", 3, 1).unwrap_err());
    let chain: Vec<(u64, u64)> = err
        .wait_chain
        .iter()
        .map(|e| (e.txn, e.wait_for_txn))
        .collect();
    assert_eq!(chain, vec![(3, 1), (1, 3)]);
    drop((h, not_deadlocked));
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
    assert_eq!(waits.total_waiters(), 0);
}

/// `test_pessimistic_lock_impl` (in-memory mode): txn 10 locks two keys in memory, txn 20
/// conflicts and waits, txn 10 refreshes its lock (newer for_update_ts, no extra memory) and
/// then rolls back (mark, apply, wake); txn 20 is woken first and takes the lock.
#[test]
fn test_pessimistic_lock_impl() {
    use crate::common::*;
    use surge_lock_table::{MemoryBudget, SharedRegionLockTable};
    let budget = MemoryBudget::default();
    let table = SharedRegionLockTable::<PLock>::new(&budget);
    table.become_leader(1, 1);
    let waits = manager(20);
    table
        .try_insert(
            vec![
                (b"k1".to_vec(), lock(b"k1", 10)),
                (b"k2".to_vec(), lock(b"k1", 10)),
            ],
            1,
            1,
        )
        .unwrap();
    let before = budget.used();
    // Txn 20 finds k1 locked by txn 10: enqueue, re-check, wait.
    let handle = waits.enqueue(b"k1", 20, 10).unwrap();
    assert_eq!(table.get(b"k1").unwrap().lock().start_ts, 10);
    let waiter = thread::spawn(move || handle.wait(None));
    // Txn 10 locks k1 again with a newer for_update_ts: an overwrite of equal size.
    let mut refreshed = lock(b"k1", 10);
    refreshed.for_update_ts = 99;
    let report = table.try_insert(one(b"k1", refreshed), 1, 1).unwrap();
    assert_eq!((report.overwritten, report.bytes_delta), (1, 0));
    assert_eq!(budget.used(), before);
    // Txn 10 rolls back both keys.
    assert_eq!(table.mark_deleted_batch(&[b"k1", b"k2"]), 2);
    assert_eq!(table.write().remove_applied_batch(&[b"k1", b"k2"], 1, 1), 2);
    assert_eq!(waits.wake_up(b"k1", 10).woken, Some(20));
    assert_eq!(waiter.join().unwrap(), WaitOutcome::Woken);
    table.try_insert(one(b"k1", lock(b"k1", 20)), 1, 1).unwrap();
    assert_eq!(table.get(b"k1").unwrap().lock().start_ts, 20);
    assert_eq!(budget.used(), table.memory_size());
}

/// No queue is kept for a key nobody waits on, whichever way its waiters left: woken at once,
/// woken after the delay, timed out, or dropped without waiting.
#[test]
fn queues_of_keys_without_waiters_are_dropped() {
    let waits = manager(5);
    // Woken at once and after the delay.
    let a = waits.enqueue(b"a", 1, 9).unwrap();
    let b = waits.enqueue(b"a", 2, 9).unwrap();
    waits.wake_up(b"a", 9);
    assert_eq!(waits.queued_keys(), 1, "the delayed waiter is still queued");
    assert_eq!(a.wait(None), WaitOutcome::Woken);
    assert_eq!(b.wait(None), WaitOutcome::WokenAfterDelay);
    // Timed out.
    assert_eq!(
        waits
            .wait_for(b"b", 3, 9, Some(Duration::from_millis(1)))
            .unwrap(),
        WaitOutcome::TimedOut
    );
    // Dropped without waiting, and a waiter that queued under another holder of the key
    // (woken after the delay by the same release).
    let c = waits.enqueue(b"c", 4, 9).unwrap();
    let d = waits.enqueue(b"c", 5, 8).unwrap();
    assert_eq!(waits.wake_up(b"c", 9).woken, Some(4));
    assert_eq!(waits.queued_keys(), 1);
    drop((c, d));
    assert_eq!(waits.queued_keys(), 0);
    assert_eq!(waits.with_detector(|det| det.edge_count()), 0);
}

/// Lowering the default timeout while a wait is under way does not shorten the edge TTL
/// under it: the wait's edge stays live and a late deadlock is still found.
#[test]
fn lowering_the_timeout_during_a_wait_keeps_its_edge() {
    // TTL 600 ms, refresh every 300 ms.
    let waits = LockWaitManager::new(
        WaitConfig::default()
            .with_default_timeout(Duration::from_millis(200))
            .with_wake_up_delay(Duration::from_millis(20)),
    );
    let h = waits.enqueue(b"a", 1, 2).unwrap();
    let t = thread::spawn(move || h.wait(Some(Duration::from_secs(10))));
    thread::sleep(Duration::from_millis(50)); // the wait is under way with the old TTL
    waits.set_config(
        WaitConfig::default()
            .with_default_timeout(Duration::from_millis(10))
            .with_wake_up_delay(Duration::from_millis(20)),
    );
    assert_eq!(waits.with_detector(|d| d.ttl()), Duration::from_millis(600));
    thread::sleep(Duration::from_millis(1500));
    assert!(waits.enqueue(b"b", 2, 1).is_err(), "edge 1 -> 2 expired");
    assert_eq!(waits.wake_up(b"a", 2).woken, Some(1));
    assert_eq!(t.join().unwrap(), WaitOutcome::Woken);
}
