//! Named pause points: a test parks one transaction's request at an exact step on the node
//! (under the latches and guards that step holds), does something else meanwhile (a split,
//! another transaction), and lets the request go on. This is how a race that depends on the
//! order of two events inside one node is made to happen every time instead of once in many
//! runs.
//!
//! Inert unless a test armed a point: passing a point costs one atomic load. A point parks
//! only the transaction it was armed for (by `start_ts`), only once, and never for longer
//! than [`MAX_PAUSE`], so a test that fails before releasing it cannot hang the node.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Names of the pause points.
pub mod pause_points {
    /// In [`crate::acquire_pessimistic_lock`], after the key's checks and its read at
    /// `for_update_ts`, before the lock is written: the request holds the key's latches
    /// and the region's lock table (read side), its epoch checked, its proposal not made.
    pub const LOCK_AFTER_READ: &str = "actions.acquire_pessimistic_lock.after_read";
}

/// The longest a request stays parked: a guard not released by then lets it go on.
pub const MAX_PAUSE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Armed,
    Parked,
    Released,
}

#[derive(Debug)]
struct Armed {
    point: &'static str,
    start_ts: u64,
    stage: Mutex<Stage>,
    changed: Condvar,
}

/// How many points are armed: zero makes [`pause_point`] return at once.
static ARMED_COUNT: AtomicUsize = AtomicUsize::new(0);
static ARMED: Mutex<Vec<Arc<Armed>>> = Mutex::new(Vec::new());

/// An armed pause point (see [`arm_pause`]); dropping it releases a parked request and
/// disarms the point.
#[derive(Debug)]
pub struct PauseGuard {
    armed: Arc<Armed>,
}

/// Arms `point` for the transaction `start_ts`: the next request of that transaction to
/// pass the point parks there until the guard is released or dropped.
pub fn arm_pause(point: &'static str, start_ts: u64) -> PauseGuard {
    let armed = Arc::new(Armed {
        point,
        start_ts,
        stage: Mutex::new(Stage::Armed),
        changed: Condvar::new(),
    });
    ARMED.lock().push(Arc::clone(&armed));
    ARMED_COUNT.fetch_add(1, Ordering::SeqCst);
    PauseGuard { armed }
}

impl PauseGuard {
    /// Waits until a request is parked at the point; `false` if none came within `timeout`.
    pub fn wait_parked(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut stage = self.armed.stage.lock();
        while *stage == Stage::Armed {
            if self
                .armed
                .changed
                .wait_until(&mut stage, deadline)
                .timed_out()
            {
                break;
            }
        }
        *stage != Stage::Armed
    }

    /// Lets the parked request (if any) go on; the point stays passed for good.
    pub fn release(self) {
        drop(self);
    }
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        *self.armed.stage.lock() = Stage::Released;
        self.armed.changed.notify_all();
        ARMED.lock().retain(|a| !Arc::ptr_eq(a, &self.armed));
        ARMED_COUNT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Parks here if a test armed `point` for `start_ts` (see the module documentation).
pub(crate) fn pause_point(point: &'static str, start_ts: u64) {
    if ARMED_COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let found = ARMED
        .lock()
        .iter()
        .find(|a| a.point == point && a.start_ts == start_ts)
        .cloned();
    let Some(armed) = found else { return };
    let mut stage = armed.stage.lock();
    if *stage != Stage::Armed {
        return;
    }
    *stage = Stage::Parked;
    armed.changed.notify_all();
    let deadline = Instant::now() + MAX_PAUSE;
    while *stage == Stage::Parked {
        if armed.changed.wait_until(&mut stage, deadline).timed_out() {
            tracing::warn!(point, start_ts, "pause point never released; going on");
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_parks_only_its_transaction_once_until_released() {
        const POINT: &str = "test.point";
        pause_point(POINT, 7); // nothing armed: returns at once
        let guard = arm_pause(POINT, 7);
        pause_point(POINT, 8); // another transaction: not parked
        let parked = std::thread::spawn(|| {
            let t = Instant::now();
            pause_point(POINT, 7);
            t.elapsed()
        });
        assert!(guard.wait_parked(Duration::from_secs(10)), "it parked");
        std::thread::sleep(Duration::from_millis(50));
        guard.release();
        let waited = parked.join().expect("parked thread");
        assert!(
            waited >= Duration::from_millis(50),
            "held until released ({waited:?})"
        );
        let t = Instant::now();
        pause_point(POINT, 7); // disarmed
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
