//! Per-key lock wait queues with timeouts, smallest-`start_ts`-first wake-up and deadlock
//! detection (TiKV's `WaiterManager` plus its detector, on one node).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::deadlock::{Deadlock, DeadlockDetector};

/// Timing of lock waits; changeable at run time with [`LockWaitManager::set_config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitConfig {
    /// How long a waiter waits when no timeout is given (TiKV `wait-for-lock-timeout`, 1 s).
    pub default_timeout: Duration,
    /// After a release wakes the waiter with the smallest `start_ts`, the others are woken
    /// this much later (TiKV `wake-up-delay-duration`, 20 ms), so the first one can take the
    /// lock without a stampede.
    pub wake_up_delay: Duration,
}

impl Default for WaitConfig {
    fn default() -> Self {
        WaitConfig {
            default_timeout: Duration::from_secs(1),
            wake_up_delay: Duration::from_millis(20),
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The lock was released and this waiter had the smallest `start_ts`: retry at once.
    Woken,
    /// The lock was released and this waiter was woken after the wake-up delay.
    WokenAfterDelay,
    /// The timeout passed before the lock was released (a retryable lock-wait timeout).
    TimedOut,
}

/// What [`LockWaitManager::wake_up`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WakeUpReport {
    /// `start_ts` of the waiter woken at once, if any waited for that lock.
    pub woken: Option<u64>,
    /// Waiters that will be woken after the delay.
    pub delayed: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting; `wake_at` is set once a release scheduled a delayed wake-up.
    Waiting { wake_at: Option<Instant> },
    /// Removed from the queue by a release and woken at once.
    Woken,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    start_ts: u64,
    lock_ts: u64,
    state: Mutex<State>,
    cond: Condvar,
}

#[derive(Debug)]
struct Inner {
    /// Lock order: `queues`, then a waiter's `state`; `detector` is never held with either.
    queues: Mutex<HashMap<Vec<u8>, Vec<Arc<Waiter>>>>,
    detector: Mutex<DeadlockDetector>,
    config: Mutex<WaitConfig>,
    next_id: AtomicU64,
}

/// Lock waiting for one node: per-key queues of transactions waiting for a lock to be
/// released, plus a [`DeadlockDetector`] consulted before anyone waits. Cheap to clone;
/// clones share the queues.
///
/// # Not losing a release
/// [`wake_up`](Self::wake_up) only reaches waiters already queued: a release that happens
/// after a transaction saw the lock but before it enqueued wakes nobody, and the transaction
/// would sleep until its timeout. So a waiter follows **enqueue, re-check, wait**: enqueue
/// first, then look at the lock again, and wait only if it is still held. A release after
/// the enqueue marks the handle woken even if [`WaitHandle::wait`] has not been called yet,
/// so nothing is lost in between. [`wait_for`](Self::wait_for) skips the re-check; use it
/// only when releases cannot race the call (the key's latch is held, say).
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
/// // ... txn 10 rolls back meanwhile: the lock goes and the waiters are woken.
/// table.remove_applied(b"k", 1, 1);
/// waits.wake_up(b"k", 10);
/// // The re-check (or the wait) sees it; no timeout is spent.
/// if table.get(b"k").is_some() {
///     assert_eq!(handle.wait(Some(Duration::from_secs(1))), WaitOutcome::Woken);
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

/// A registered wait. [`wait`](Self::wait) blocks until woken or timed out; dropping the
/// handle without waiting leaves the queue and cleans the wait-for edge.
#[derive(Debug)]
pub struct WaitHandle {
    manager: LockWaitManager,
    waiter: Arc<Waiter>,
    key: Vec<u8>,
    finished: bool,
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

    /// Runs `f` on the deadlock detector (to clean up a finished transaction, say).
    pub fn with_detector<R>(&self, f: impl FnOnce(&mut DeadlockDetector) -> R) -> R {
        f(&mut self.inner.detector.lock())
    }

    /// Transaction `start_ts` will wait for the lock held by `lock_ts` on `key`.
    ///
    /// # Errors
    /// [`Deadlock`] if waiting would close a cycle; nothing is queued then.
    pub fn enqueue(&self, key: &[u8], start_ts: u64, lock_ts: u64) -> Result<WaitHandle, Deadlock> {
        self.inner.detector.lock().detect(start_ts, lock_ts, key)?;
        let waiter = Arc::new(Waiter {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            start_ts,
            lock_ts,
            state: Mutex::new(State::Waiting { wake_at: None }),
            cond: Condvar::new(),
        });
        self.inner
            .queues
            .lock()
            .entry(key.to_vec())
            .or_default()
            .push(Arc::clone(&waiter));
        Ok(WaitHandle {
            manager: self.clone(),
            waiter,
            key: key.to_vec(),
            finished: false,
        })
    }

    /// [`enqueue`](Self::enqueue) then [`WaitHandle::wait`], with no re-check of the lock in
    /// between: a release that happened before the call is missed and the wait lasts until
    /// the timeout (see [Not losing a release](Self#not-losing-a-release)).
    ///
    /// # Errors
    /// [`Deadlock`] if waiting would close a cycle.
    pub fn wait_for(
        &self,
        key: &[u8],
        start_ts: u64,
        lock_ts: u64,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, Deadlock> {
        Ok(self.enqueue(key, start_ts, lock_ts)?.wait(timeout))
    }

    /// The lock of `lock_ts` on `key` was released: the waiter with the smallest `start_ts`
    /// is woken now, the other waiters for that lock after the wake-up delay.
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
            .filter(|(_, w)| w.lock_ts == lock_ts)
            .min_by_key(|(_, w)| (w.start_ts, w.id))
            .map(|(i, _)| i);
        if let Some(i) = first {
            let waiter = queue.remove(i);
            *waiter.state.lock() = State::Woken;
            waiter.cond.notify_one();
            report.woken = Some(waiter.start_ts);
        }
        // `None` when the delay is too large for an `Instant` (it would panic): those waiters
        // are then never woken by the delay, only by a later release or their own timeout.
        let wake_at = Instant::now().checked_add(delay);
        for waiter in queue.iter().filter(|w| w.lock_ts == lock_ts) {
            let mut state = waiter.state.lock();
            if let State::Waiting { wake_at: at } = &mut *state {
                *at = earliest(*at, wake_at);
                report.delayed += 1;
            }
            drop(state);
            waiter.cond.notify_one();
        }
        if queue.is_empty() {
            queues.remove(key);
        }
        report
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
    fn leave(&self, key: &[u8], id: u64) -> bool {
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

/// Shortest interval between two refreshes of a waiter's wait-for edge (guards a zero TTL).
const REFRESH_FLOOR: Duration = Duration::from_millis(1);

/// The earlier of two optional instants, `None` standing for "never".
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

impl WaitHandle {
    /// The waiting transaction's `start_ts`.
    pub fn start_ts(&self) -> u64 {
        self.waiter.start_ts
    }

    /// Blocks until woken or until `timeout` (the manager's default when `None`) passes.
    /// A timeout too large to represent as an `Instant` (such as `Duration::MAX`) means
    /// "until woken".
    pub fn wait(mut self, timeout: Option<Duration>) -> WaitOutcome {
        let timeout = timeout.unwrap_or_else(|| self.manager.config().default_timeout);
        // `None`: no deadline (the addition would overflow `Instant`, which panics).
        let deadline = Instant::now().checked_add(timeout);
        let waiter = Arc::clone(&self.waiter);
        // A wait may outlast the detector's edge TTL (a long explicit timeout, or a TTL
        // changed meanwhile): refresh the edge every half TTL so that a deadlock closed late
        // in the wait is still found. Waits shorter than half the TTL never wake for this.
        let refresh_every = |ttl: Duration| (ttl / 2).max(REFRESH_FLOOR);
        let mut next_refresh =
            Instant::now().checked_add(refresh_every(self.manager.with_detector(|d| d.ttl())));
        let outcome = {
            let mut state = waiter.state.lock();
            loop {
                match *state {
                    State::Woken => break WaitOutcome::Woken,
                    State::Waiting { wake_at } => {
                        let until = earliest(wake_at, deadline);
                        let now = Instant::now();
                        if until.is_some_and(|until| now >= until) {
                            let delayed = wake_at.is_some_and(|t| deadline.is_none_or(|d| t <= d));
                            drop(state);
                            if self.manager.leave(&self.key, waiter.id) {
                                break if delayed {
                                    WaitOutcome::WokenAfterDelay
                                } else {
                                    WaitOutcome::TimedOut
                                };
                            }
                            // A release removed us meanwhile and set `Woken` before doing so.
                            state = waiter.state.lock();
                            continue;
                        }
                        if next_refresh.is_some_and(|at| now >= at) {
                            // Lock order: never hold a waiter's state with the detector.
                            drop(state);
                            let ttl = {
                                let mut detector = self.manager.inner.detector.lock();
                                detector.refresh(waiter.start_ts, waiter.lock_ts, now);
                                detector.ttl()
                            };
                            // Re-read: the TTL may have changed meanwhile (`set_ttl`).
                            next_refresh = now.checked_add(refresh_every(ttl));
                            state = waiter.state.lock();
                            continue;
                        }
                        match earliest(until, next_refresh) {
                            Some(until) => {
                                waiter.cond.wait_until(&mut state, until);
                            }
                            None => waiter.cond.wait(&mut state),
                        }
                    }
                }
            }
        };
        self.finish(false);
        outcome
    }

    /// Cleans the wait-for edge and, if `leave_queue`, leaves the queue. Idempotent.
    fn finish(&mut self, leave_queue: bool) {
        if self.finished {
            return;
        }
        self.finished = true;
        if leave_queue {
            self.manager.leave(&self.key, self.waiter.id);
        }
        self.manager.inner.detector.lock().clean_up_wait_for(
            self.waiter.start_ts,
            self.waiter.lock_ts,
            &self.key,
        );
    }
}

impl Drop for WaitHandle {
    fn drop(&mut self) {
        self.finish(true);
    }
}
