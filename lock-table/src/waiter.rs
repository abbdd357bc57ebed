//! One queued wait, as the manager and its handle both see it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::deadlock::DeadlockDetector;

/// Where a queued wait stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting; `wake_at` is set once a release scheduled a delayed wake-up.
    Waiting { wake_at: Option<Instant> },
    /// Removed from the queue by a release and woken at once.
    Woken,
    /// Removed from the queue by [`LockWaitManager::close`](crate::LockWaitManager::close).
    Closed,
}

/// Transaction `start_ts` waiting on a key it found locked by `lock_ts`.
#[derive(Debug)]
pub(crate) struct Waiter {
    /// Unique per manager; breaks ties between equal `start_ts` (first queued first).
    pub(crate) id: u64,
    pub(crate) start_ts: u64,
    /// The holder seen when the wait was queued. Only the wait-for edge names it: wake-ups
    /// go by key, since the lock may have changed hands before the wait was queued.
    pub(crate) lock_ts: u64,
    pub(crate) state: Mutex<State>,
    pub(crate) cond: Condvar,
    /// Whether this wait still owns its key on the edge `start_ts -> lock_ts` in the
    /// detector. Read and changed only with the detector locked, so exactly one of the
    /// release that wakes the wait and the handle's clean-up removes it, and neither
    /// removes the key a later wait of the same transaction put back on that edge.
    edge: AtomicBool,
}

impl Waiter {
    /// A new wait whose edge the caller has just added to `detector` (none when a
    /// transaction "waits" for itself, which is not an edge).
    pub(crate) fn new(id: u64, start_ts: u64, lock_ts: u64) -> Self {
        Waiter {
            id,
            start_ts,
            lock_ts,
            state: Mutex::new(State::Waiting { wake_at: None }),
            cond: Condvar::new(),
            edge: AtomicBool::new(start_ts != lock_ts),
        }
    }

    /// Removes this wait's key from its edge, once. `detector` must be the manager's,
    /// locked by the caller (that lock is what orders the flag).
    pub(crate) fn clean_edge(&self, detector: &mut DeadlockDetector, key: &[u8]) {
        if self.edge.swap(false, Ordering::Relaxed) {
            detector.clean_up_wait_for(self.start_ts, self.lock_ts, key);
        }
    }

    /// Restarts the expiry clock of this wait's edge, if it still owns one. An edge that
    /// already expired is not revived (see [`DeadlockDetector::refresh`]): the wait goes on
    /// without one.
    pub(crate) fn refresh_edge(&self, detector: &mut DeadlockDetector, now: Instant) {
        if self.edge.load(Ordering::Relaxed) && !detector.refresh(self.start_ts, self.lock_ts, now)
        {
            self.edge.store(false, Ordering::Relaxed);
        }
    }
}

/// The earlier of two optional instants, `None` standing for "never".
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
