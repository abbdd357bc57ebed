//! `LockWaitManager::close`, for a node that stops: every queued wait ends at once with
//! `Closed`, whatever its timeout, and later waits are refused; nothing is left queued and
//! no wait-for edge is left behind.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use surge_lock_table::{WaitOutcome, WaitRefused};

use crate::common::wait_manager;

/// Far longer than any of these tests may take: a wait that ends proves it was ended.
const LONG: Duration = Duration::from_secs(60);

/// Waits on three keys (one of them already given a delayed wake-up by a release, one
/// queued but not yet waiting) all end with `Closed` as soon as the manager closes.
#[test]
fn close_ends_every_queued_wait_at_once() {
    // A wake-up delay longer than the test: the delayed waiter is not woken by it.
    let waits = wait_manager(600_000);
    let mut threads = Vec::new();
    for (key, start_ts, holder) in [(&b"a"[..], 20, 10), (b"a", 30, 10), (b"b", 40, 11)] {
        let handle = waits.enqueue(key, start_ts, holder).unwrap();
        threads.push(thread::spawn(move || {
            let started = Instant::now();
            (handle.wait(Some(LONG)), started.elapsed())
        }));
    }
    let not_yet_waiting = waits.enqueue(b"c", 50, 12).unwrap();
    // Txn 10 releases "a": txn 20 is woken, txn 30 is given a wake-up in ten minutes.
    assert_eq!(waits.wake_up(b"a", 10).woken, Some(20));
    let (woken, _) = threads.remove(0).join().unwrap();
    assert_eq!(woken, WaitOutcome::Woken);
    assert_eq!(waits.total_waiters(), 3);
    assert_eq!(
        waits.with_detector(|d| d.edge_count()),
        2,
        "40 -> 11, 50 -> 12"
    );

    assert!(!waits.is_closed());
    assert_eq!(waits.close(), 3);
    assert!(waits.is_closed());
    for t in threads {
        let (outcome, waited) = t.join().unwrap();
        assert_eq!(outcome, WaitOutcome::Closed);
        assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    }
    let started = Instant::now();
    assert_eq!(not_yet_waiting.wait(Some(LONG)), WaitOutcome::Closed);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(waits.queued_keys(), 0);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}

/// After the close nothing waits: `enqueue` and `wait_for` are refused with `Closed`
/// without adding an edge (not even one that would close a cycle), a release wakes nobody,
/// and a second close ends nothing.
#[test]
fn a_closed_manager_refuses_every_later_wait() {
    let waits = wait_manager(20);
    let before = waits.enqueue(b"a", 1, 2).unwrap();
    assert_eq!(waits.close(), 1);
    assert_eq!(before.wait(Some(LONG)), WaitOutcome::Closed);
    assert_eq!(waits.enqueue(b"a", 3, 2).unwrap_err(), WaitRefused::Closed);
    // Would close the cycle 2 -> 1 -> 2 if the edge 1 -> 2 were still there.
    assert_eq!(waits.enqueue(b"b", 2, 1).unwrap_err(), WaitRefused::Closed);
    let started = Instant::now();
    assert_eq!(
        waits.wait_for(b"a", 4, 2, Some(LONG)).unwrap_err(),
        WaitRefused::Closed
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(waits.wake_up(b"a", 2).woken, None);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(waits.close(), 0);
}

/// Threads enqueue and wait (60 s timeouts) while the manager closes: each of them ends
/// promptly, with either a `Closed` wait (queued before the close) or a refused enqueue
/// (after it), and nothing is left queued or in the detector.
#[test]
fn waits_racing_the_close_all_end() {
    let waits = wait_manager(20);
    let ended_by_close = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (waits, ended_by_close) = (waits.clone(), ended_by_close.clone());
            thread::spawn(move || {
                let key = [b'k', (t % 4) as u8];
                match waits.wait_for(&key, 100 + t, 1, Some(LONG)) {
                    Ok(WaitOutcome::Closed) => {
                        ended_by_close.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(WaitRefused::Closed) => {}
                    Ok(other) => panic!("a wait nobody woke ended {other:?}"),
                    Err(other) => panic!("refused: {other}"),
                }
            })
        })
        .collect();
    // Let most threads park, then close.
    let started = Instant::now();
    while waits.total_waiters() < 4 && started.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(1));
    }
    let closed = waits.close();
    let closed_at = Instant::now();
    for t in threads {
        t.join().unwrap();
    }
    assert!(closed_at.elapsed() < Duration::from_secs(10));
    assert_eq!(ended_by_close.load(Ordering::Relaxed), closed);
    assert!(closed >= 4, "only {closed} waits were parked at the close");
    assert_eq!(waits.total_waiters(), 0);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}
