//! `LockWaitManager`: per-key lock wait queues with timeouts, smallest-`start_ts`-first
//! wake-up and deadlock detection (TiKV's lock waiting plus its detector, on one node).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::deadlock::DeadlockDetector;
use crate::wait_config::WaitConfig;
use crate::wait_handle::WaitHandle;
use crate::wait_outcome::{WaitOutcome, WakeUpReport};
use crate::wait_refused::WaitRefused;
use crate::waiter::{State, Waiter, earliest};

#[derive(Debug)]
struct Inner {
    /// Lock order: `queues` first; under it a waiter's `state` or the `detector`, never
    /// both at once, and neither of those is held while taking `queues`.
    queues: Mutex<HashMap<Vec<u8>, Vec<Arc<Waiter>>>>,
    detector: Mutex<DeadlockDetector>,
    config: Mutex<WaitConfig>,
    next_id: AtomicU64,
    /// Set once by `close`, under `queues`: an `enqueue` (which reads it under `queues`)
    /// either queued before the close, which then ends its wait, or is refused.
    closed: AtomicBool,
}

/// Lock waiting for one node: one queue per key of the transactions waiting for it to be
/// unlocked, plus a [`DeadlockDetector`] consulted before anyone waits. Cheap to clone;
/// clones share the queues.
///
/// # Not losing a release
/// A release wakes the waiters queued on its **key**, whichever holder each of them queued
/// under. A lock can change hands between the moment a transaction sees it and the moment
/// it enqueues: txn 20 sees `k` held by txn 10; txn 10 releases while nobody is queued; txn
/// 30 locks `k`; txn 20 enqueues naming txn 10. Txn 10's release is over, so only txn 30's
/// can wake txn 20, and it does. TiKV's lock manager likewise keeps one wait queue per key
/// and wakes its head whoever the holder was (`src/storage/lock_manager/lock_waiting_queue.rs`).
///
/// A release that happens before the enqueue still wakes nobody, so a waiter follows
/// **enqueue, re-check, wait**: enqueue first, then look at the lock again, and
/// - if the key is unlocked, drop the handle and retry at once;
/// - if another transaction than the `lock_ts` given now holds it, drop the handle and
///   enqueue again under that one: the wait would still be woken by the new holder's
///   release, but its wait-for edge would name the old holder, so a deadlock through the
///   new one would only end by timeout ([`WaitHandle::lock_ts`] gives the old holder);
/// - otherwise [`WaitHandle::wait`].
///
/// A release after the enqueue marks the handle woken even if `wait` has not been called
/// yet, so nothing is lost in between. [`wait_for`](Self::wait_for) skips the re-check; use
/// it only when releases cannot race the call (the key's latch is held, say).
///
/// # Wait-for edges
/// [`enqueue`](Self::enqueue) adds the edge `start_ts -> lock_ts`, under the same lock as
/// the queueing, so a release sees either both or neither. A release removes the edges of
/// every waiter it wakes, at once and after the delay, before it returns (TiKV's waiter
/// manager does the same for the waiter it wakes): they no longer wait for the former
/// holder, which may itself wait for one of them right away and must not be refused with a
/// deadlock that does not exist. During the delay the others wait for whoever takes the
/// lock next, which the manager cannot know; a cycle through them ends with the delay, when
/// they retry and enqueue again under the real holder. A wait that times out or whose
/// handle is dropped removes its own edge.
///
/// # Closing
/// [`close`](Self::close) is for a node that stops: every queued wait ends at once with
/// [`WaitOutcome::Closed`] (its edge removed) and every later [`enqueue`](Self::enqueue) is
/// refused with [`WaitRefused::Closed`], so no request can sit in a wait that the node's
/// shutdown would have to outlast. A closed manager stays closed.
///
/// ```
/// use std::time::Duration;
/// use surge_lock_table::{LockWaitManager, MemoryBudget, RegionLockTable, WaitOutcome};
///
/// let budget = MemoryBudget::default();
/// let mut table: RegionLockTable<u64> = RegionLockTable::new(&budget); // lock = holder's start_ts
/// table.become_leader(1, 1);
/// table.try_insert_one(b"k".to_vec(), 10, 1, 1)?;
/// let waits = LockWaitManager::default();
///
/// // Txn 20 finds "k" locked by txn 10: enqueue, then re-check before waiting.
/// let handle = waits.enqueue(b"k", 20, 10)?;
/// // ... txn 10 rolls back meanwhile: the lock goes and the key's waiters are woken.
/// table.remove_applied(b"k", 1, 1);
/// waits.wake_up(b"k", 10);
/// // The re-check (or the wait) sees it; no timeout is spent.
/// match table.get(b"k").map(|entry| *entry.lock()) {
///     None => drop(handle), // unlocked: retry at once
///     Some(holder) if holder != handle.lock_ts() => drop(handle), // enqueue under `holder`
///     Some(_) => assert_eq!(handle.wait(Some(Duration::from_secs(1))), WaitOutcome::Woken),
/// }
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct LockWaitManager {
    inner: Arc<Inner>,
}

impl Default for LockWaitManager {
    fn default() -> Self {
        LockWaitManager::new(WaitConfig::default())
    }
}

impl LockWaitManager {
    /// A manager with the given timing and a detector whose edges live three times the
    /// default timeout.
    pub fn new(config: WaitConfig) -> Self {
        let ttl = config.default_timeout.saturating_mul(3);
        LockWaitManager {
            inner: Arc::new(Inner {
                queues: Mutex::new(HashMap::new()),
                detector: Mutex::new(DeadlockDetector::new(ttl)),
                config: Mutex::new(config),
                next_id: AtomicU64::new(1),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// The current timing.
    pub fn config(&self) -> WaitConfig {
        *self.inner.config.lock()
    }

    /// Changes the timing for later waits and wake-ups. The detector's edge TTL is raised to
    /// three times the new default timeout if it is shorter, as in [`new`](Self::new), but
    /// never lowered: waits already under way refresh their edges at half the TTL they
    /// started with, and a shorter TTL could expire those edges and hide a deadlock. (A
    /// longer TTL only keeps the edges of leaked handles a little longer.)
    pub fn set_config(&self, config: WaitConfig) {
        *self.inner.config.lock() = config;
        let mut detector = self.inner.detector.lock();
        let ttl = detector.ttl().max(config.default_timeout.saturating_mul(3));
        detector.set_ttl(ttl);
    }

    /// Runs `f` on the deadlock detector (to clean up a finished transaction, say). The
    /// detector stays locked while `f` runs: `f` must not call this manager or its handles.
    pub fn with_detector<R>(&self, f: impl FnOnce(&mut DeadlockDetector) -> R) -> R {
        f(&mut self.inner.detector.lock())
    }

    /// Transaction `start_ts` will wait on `key`, which it found locked by `lock_ts`: the
    /// wait is queued on the key and the wait-for edge `start_ts -> lock_ts` added.
    ///
    /// # Errors
    /// [`WaitRefused::Deadlock`] if waiting would close a cycle, [`WaitRefused::Closed`]
    /// once the manager is closed; nothing is queued and no edge added then.
    pub fn enqueue(
        &self,
        key: &[u8],
        start_ts: u64,
        lock_ts: u64,
    ) -> Result<WaitHandle, WaitRefused> {
        let mut queues = self.inner.queues.lock();
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(WaitRefused::Closed);
        }
        self.inner.detector.lock().detect(start_ts, lock_ts, key)?;
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let waiter = Arc::new(Waiter::new(id, start_ts, lock_ts));
        queues
            .entry(key.to_vec())
            .or_default()
            .push(Arc::clone(&waiter));
        drop(queues);
        Ok(WaitHandle::new(self.clone(), waiter, key))
    }

    /// [`enqueue`](Self::enqueue) then [`WaitHandle::wait`], with no re-check of the lock in
    /// between: a release that happened before the call is missed and the wait lasts until
    /// the next release of the key or the timeout (see
    /// [Not losing a release](Self#not-losing-a-release)).
    ///
    /// # Errors
    /// As [`enqueue`](Self::enqueue).
    pub fn wait_for(
        &self,
        key: &[u8],
        start_ts: u64,
        lock_ts: u64,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, WaitRefused> {
        Ok(self.enqueue(key, start_ts, lock_ts)?.wait(timeout))
    }

    /// The lock of `lock_ts` on `key` was released: of the transactions waiting on `key`,
    /// whichever holder each queued under, the one with the smallest `start_ts` is woken
    /// now and the others after the wake-up delay. The wait-for edges of all of them are
    /// removed before this returns (see [Wait-for edges](Self#wait-for-edges)). `lock_ts`
    /// only names the releaser in traces.
    pub fn wake_up(&self, key: &[u8], lock_ts: u64) -> WakeUpReport {
        let delay = self.config().wake_up_delay;
        let mut report = WakeUpReport::default();
        let mut queues = self.inner.queues.lock();
        let Some(queue) = queues.get_mut(key) else {
            return report;
        };
        let first = queue
            .iter()
            .enumerate()
            .min_by_key(|(_, w)| (w.start_ts, w.id))
            .map(|(i, _)| i);
        let woken = first.map(|i| queue.remove(i));
        if let Some(waiter) = &woken {
            *waiter.state.lock() = State::Woken;
            waiter.cond.notify_one();
            report.woken = Some(waiter.start_ts);
        }
        // `None` when the delay is too large for an `Instant` (it would panic): those waiters
        // are then never woken by the delay, only by a later release or their own timeout.
        let wake_at = Instant::now().checked_add(delay);
        for waiter in queue.iter() {
            let mut state = waiter.state.lock();
            if let State::Waiting { wake_at: at } = &mut *state {
                *at = earliest(*at, wake_at);
                report.delayed += 1;
            }
            drop(state);
            waiter.cond.notify_one();
        }
        {
            let mut detector = self.inner.detector.lock();
            for waiter in woken.iter().chain(queue.iter()) {
                waiter.clean_edge(&mut detector, key);
            }
        }
        if queue.is_empty() {
            queues.remove(key);
        }
        drop(queues);
        tracing::trace!(
            released_by = lock_ts,
            woken = ?report.woken,
            delayed = report.delayed,
            "lock wait: key released"
        );
        report
    }

    /// Ends lock waiting for good (see [Closing](Self#closing)): every queued wait is
    /// removed from its queue and woken with [`WaitOutcome::Closed`], its wait-for edge
    /// removed before this returns, and every later [`enqueue`](Self::enqueue) is refused
    /// with [`WaitRefused::Closed`]. Returns how many waits it ended (0 when called again).
    ///
    /// A wait that a release had already woken, or whose timeout had passed, ends as it
    /// would have; the caller checks [`is_closed`](Self::is_closed) before it retries the
    /// lock, so that no request that waited is granted a lock after the close.
    pub fn close(&self) -> usize {
        let mut queues = self.inner.queues.lock();
        self.inner.closed.store(true, Ordering::SeqCst);
        let ended: Vec<(Vec<u8>, Arc<Waiter>)> = queues
            .drain()
            .flat_map(|(key, queue)| queue.into_iter().map(move |w| (key.clone(), w)))
            .collect();
        for (_, waiter) in &ended {
            *waiter.state.lock() = State::Closed;
            waiter.cond.notify_one();
        }
        {
            let mut detector = self.inner.detector.lock();
            for (key, waiter) in &ended {
                waiter.clean_edge(&mut detector, key);
            }
        }
        drop(queues);
        tracing::debug!(ended = ended.len(), "lock wait: closed");
        ended.len()
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    /// Number of transactions queued on `key`.
    pub fn waiters(&self, key: &[u8]) -> usize {
        self.inner.queues.lock().get(key).map_or(0, Vec::len)
    }

    /// Number of transactions queued on all keys.
    pub fn total_waiters(&self) -> usize {
        self.inner.queues.lock().values().map(Vec::len).sum()
    }

    /// Number of keys that have a wait queue. A queue is dropped with its last waiter, so
    /// this is also the number of keys with at least one waiter (no memory is kept for keys
    /// nobody waits on).
    pub fn queued_keys(&self) -> usize {
        self.inner.queues.lock().len()
    }

    /// Removes a waiter from its queue; returns whether it was still there.
    pub(crate) fn leave(&self, key: &[u8], id: u64) -> bool {
        let mut queues = self.inner.queues.lock();
        let Some(queue) = queues.get_mut(key) else {
            return false;
        };
        let Some(pos) = queue.iter().position(|w| w.id == id) else {
            return false;
        };
        queue.remove(pos);
        if queue.is_empty() {
            queues.remove(key);
        }
        true
    }
}
