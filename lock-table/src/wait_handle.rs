//! `WaitHandle`: one registered wait, and the blocking wait itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::lock_wait::LockWaitManager;
use crate::wait_outcome::WaitOutcome;
use crate::waiter::{State, Waiter, earliest};

/// Shortest interval between two refreshes of a waiter's wait-for edge (guards a zero TTL).
const REFRESH_FLOOR: Duration = Duration::from_millis(1);

/// A registered wait. [`wait`](Self::wait) blocks until woken or timed out; dropping the
/// handle without waiting leaves the queue and cleans the wait-for edge.
#[derive(Debug)]
pub struct WaitHandle {
    manager: LockWaitManager,
    waiter: Arc<Waiter>,
    key: Vec<u8>,
    finished: bool,
}

impl WaitHandle {
    pub(crate) fn new(manager: LockWaitManager, waiter: Arc<Waiter>, key: &[u8]) -> Self {
        WaitHandle {
            manager,
            waiter,
            key: key.to_vec(),
            finished: false,
        }
    }

    /// The waiting transaction's `start_ts`.
    pub fn start_ts(&self) -> u64 {
        self.waiter.start_ts
    }

    /// The holder this wait was queued under (the `lock_ts` given to
    /// [`LockWaitManager::enqueue`]), which its wait-for edge names. If the re-check finds
    /// the key locked by another transaction, drop this handle and enqueue again under that
    /// one (see [Not losing a release](LockWaitManager#not-losing-a-release)).
    pub fn lock_ts(&self) -> u64 {
        self.waiter.lock_ts
    }

    /// Blocks until woken, until the manager is closed, or until `timeout` (the manager's
    /// default when `None`) passes.
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
                    State::Closed => break WaitOutcome::Closed,
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
                            // A release (or `close`) removed us meanwhile and set `Woken`
                            // (or `Closed`) before doing so.
                            state = waiter.state.lock();
                            continue;
                        }
                        if next_refresh.is_some_and(|at| now >= at) {
                            // Lock order: never hold a waiter's state with the detector.
                            drop(state);
                            let ttl = self.manager.with_detector(|detector| {
                                waiter.refresh_edge(detector, now);
                                detector.ttl()
                            });
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

    /// Cleans the wait-for edge (unless the release that woke this wait already did) and,
    /// if `leave_queue`, leaves the queue. Idempotent.
    fn finish(&mut self, leave_queue: bool) {
        if self.finished {
            return;
        }
        self.finished = true;
        if leave_queue {
            self.manager.leave(&self.key, self.waiter.id);
        }
        let (waiter, key) = (&self.waiter, &self.key);
        self.manager
            .with_detector(|detector| waiter.clean_edge(detector, key));
    }
}

impl Drop for WaitHandle {
    fn drop(&mut self) {
        self.finish(true);
    }
}
