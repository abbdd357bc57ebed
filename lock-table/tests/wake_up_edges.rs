//! A wake-up removes the wait-for edges of the waiters it wakes at once, not when their
//! threads get to run: in between, the former holder may wait for a lock of a woken
//! transaction, and the stale edge would refuse it with a deadlock that does not exist.

use surge_lock_table::{WaitOutcome, WaitRefused};

use crate::common::wait_manager;

/// Txns 20 and 25 wait for txn 10's lock on "k"; txn 10 releases it (20 is woken at once, 25
/// after the delay) and, before either woken thread runs, waits for locks of txns 20 and 25.
/// Neither is a deadlock: 20 and 25 no longer wait for 10.
#[test]
fn former_holder_may_wait_for_woken_transactions_at_once() {
    let waits = wait_manager(300);
    let first = waits.enqueue(b"k", 20, 10).unwrap();
    let delayed = waits.enqueue(b"k", 25, 10).unwrap();
    let report = waits.wake_up(b"k", 10);
    assert_eq!((report.woken, report.delayed), (Some(20), 1));
    let on_20 = waits
        .enqueue(b"a", 10, 20)
        .expect("txn 20 was woken: no edge 20 -> 10 is left");
    let on_25 = waits
        .enqueue(b"b", 10, 25)
        .expect("txn 25 will be woken: no edge 25 -> 10 is left");
    assert_eq!(
        waits.with_detector(|d| d.edge_count()),
        2,
        "10 -> 20, 10 -> 25"
    );
    assert_eq!(first.wait(None), WaitOutcome::Woken);
    assert_eq!(delayed.wait(None), WaitOutcome::WokenAfterDelay);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 2);
    drop((on_20, on_25));
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}

/// The edge removed by the wake-up is not removed a second time by the woken handle: when
/// the same wait (txn 20 for txn 10 on "k") was queued again meanwhile, as when txn 10 took
/// the lock back before txn 20 retried, the new wait keeps its edge and a real deadlock
/// through it is still found.
#[test]
fn woken_handle_leaves_the_edge_of_a_later_wait_alone() {
    let waits = wait_manager(20);
    let old = waits.enqueue(b"k", 20, 10).unwrap();
    assert_eq!(waits.wake_up(b"k", 10).woken, Some(20));
    let again = waits.enqueue(b"k", 20, 10).unwrap();
    assert_eq!(old.wait(None), WaitOutcome::Woken);
    let err = waits
        .enqueue(b"j", 10, 20)
        .expect_err("txn 20 waits for txn 10 again");
    let WaitRefused::Deadlock(err) = err else {
        panic!("refused for another reason: {err}");
    };
    assert_eq!(err.wait_chain.len(), 2);
    drop(again);
    assert_eq!(waits.with_detector(|d| d.edge_count()), 0);
}
