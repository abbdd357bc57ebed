//! [`PausePoints`]: named places in a node's region code where a test can park one thread,
//! to put two commands in an exact order (a write between a transfer's taking its locks and
//! proposing them, say) instead of hoping a sleep lands them there.
//!
//! Inert unless a test arms a point: the code's check is one atomic load. Each node has its
//! own set (reached through [`crate::KvNode::pause_points`]), so tests running side by side
//! in one process never stop each other's threads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Names of the points, in the order a command passes them.
pub mod region_pause_points {
    /// A write command ran its action under its keys' latches and is about to mark the
    /// in-memory locks it replaces as deleted and propose its batch (the leader's write
    /// path, `RegionPeer::propose`). A one-phase commit has registered its guards here.
    pub const WRITE_BEFORE_PROPOSE: &str = "region.write.before_propose";
    /// A leader transfer or a merge changed the lock table's status (no new in-memory
    /// locks from now on) and took the list of locks to migrate; they are not proposed yet.
    pub const MIGRATION_LOCKS_TAKEN: &str = "region.migration.locks_taken";
    /// A replica applying a split (the Raft driver thread) made the child and is about to
    /// add it to its node's region map (the map's write lock not taken yet).
    pub const SPLIT_CHILD_BEFORE_HOST: &str = "region.split.child_before_host";
    /// The transfer or merge copied its locks again under their keys' latches (still held)
    /// and read the region's version for their `MigrateLocks` entry; the entry is not
    /// proposed yet.
    pub const MIGRATION_BEFORE_PROPOSE: &str = "region.migration.before_propose";
    /// A merge's `PrepareMerge` applied at the source's leader, which has the source's
    /// data and is about to ask the target to absorb it (the service's merge driver).
    pub const MERGE_AFTER_PREPARE: &str = "region.merge.after_prepare";
    /// A pessimistic lock request's action checked a key, read it at `for_update_ts` and
    /// buffered its lock (the leader's lock handler, once per key that passed its checks):
    /// the request holds the keys' latches and the region's lock table (read side), its
    /// epoch checked, its proposal not made.
    pub const LOCK_AFTER_READ: &str = "region.lock.after_read";
    /// A range read (`Scan`, `ScanLock`, `ScanWrites`) checked its epoch and has its read
    /// index; it has not looked at the region's range to clamp its end yet.
    pub const RANGE_READ_AFTER_READY: &str = "region.range_read.after_ready";
}

/// How long a thread stays parked at most: a test that fails before it releases its point
/// must not leave a node's thread (and the Raft guard it holds) stuck for good. A thread that
/// gives up removes its point, so a later [`PausePoints::release`] answers `false`.
#[cfg(not(test))]
const PARK_LIMIT: Duration = Duration::from_secs(30);
/// Short in unit tests, so that the give-up path is tested in reasonable time.
#[cfg(test)]
const PARK_LIMIT: Duration = Duration::from_secs(2);

/// One armed point: whether a thread parked there, and whether the test let it go.
#[derive(Debug, Default)]
struct Point {
    parked: bool,
    released: bool,
}

/// Named points where the next thread to arrive parks until the test releases it.
///
/// # Invariants
/// - `armed` is the number of entries in `points`; `reach` looks at nothing else while it
///   is zero.
/// - An armed point parks one thread: the first to reach it. Later ones pass.
#[derive(Debug, Default)]
pub struct PausePoints {
    armed: AtomicUsize,
    points: Mutex<HashMap<&'static str, Point>>,
    changed: Condvar,
}

impl PausePoints {
    /// The next thread to reach `name` parks there until [`PausePoints::release`] (or for
    /// 30 s at most). Arming an armed point changes nothing.
    pub fn arm(&self, name: &'static str) {
        let mut points = self.points.lock();
        if !points.contains_key(name) {
            points.insert(name, Point::default());
            self.armed.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Waits until a thread is parked at `name`; `false` if none arrived within `timeout`.
    pub fn wait_parked(&self, name: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut points = self.points.lock();
        loop {
            if points.get(name).is_some_and(|p| p.parked && !p.released) {
                return true;
            }
            if self.changed.wait_until(&mut points, deadline).timed_out() {
                return points.get(name).is_some_and(|p| p.parked && !p.released);
            }
        }
    }

    /// Lets the thread parked at `name` go on, or disarms `name` if none reached it yet.
    ///
    /// Returns whether a thread was still parked there: `false` when none reached the point,
    /// or when the one that did gave up after 30 s and went on by itself (the order the test
    /// meant to force did not happen, so a test asserts it).
    #[must_use = "false means the thread was not held where the test meant it to be"]
    pub fn release(&self, name: &str) -> bool {
        let mut points = self.points.lock();
        let was_parked = match points.get_mut(name) {
            Some(p) if p.parked => {
                p.released = true;
                true
            }
            Some(_) => {
                points.remove(name);
                self.armed.fetch_sub(1, Ordering::SeqCst);
                false
            }
            None => false,
        };
        drop(points);
        self.changed.notify_all();
        was_parked
    }

    /// Parks here if `name` is armed and no thread took it yet.
    pub(crate) fn reach(&self, name: &'static str) {
        if self.armed.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut points = self.points.lock();
        match points.get_mut(name) {
            Some(p) if !p.parked => p.parked = true,
            _ => return,
        }
        self.changed.notify_all();
        tracing::debug!(point = name, "parked at a pause point");
        let deadline = Instant::now() + PARK_LIMIT;
        while !points.get(name).is_some_and(|p| p.released) {
            if self.changed.wait_until(&mut points, deadline).timed_out() {
                tracing::warn!(point = name, "pause point never released; going on");
                break;
            }
        }
        points.remove(name);
        self.armed.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn an_unarmed_point_does_not_stop_anyone() {
        let points = PausePoints::default();
        points.reach(region_pause_points::WRITE_BEFORE_PROPOSE);
        assert!(!points.wait_parked(region_pause_points::WRITE_BEFORE_PROPOSE, Duration::ZERO));
    }

    #[test]
    fn the_first_thread_at_an_armed_point_waits_for_release_and_later_ones_pass() {
        let points = Arc::new(PausePoints::default());
        points.arm(region_pause_points::WRITE_BEFORE_PROPOSE);
        let through = Arc::new(AtomicBool::new(false));
        let first = {
            let (points, through) = (points.clone(), through.clone());
            std::thread::spawn(move || {
                points.reach(region_pause_points::WRITE_BEFORE_PROPOSE);
                through.store(true, Ordering::SeqCst);
            })
        };
        assert!(points.wait_parked(
            region_pause_points::WRITE_BEFORE_PROPOSE,
            Duration::from_secs(10)
        ));
        // Another point, and a second thread at the armed one, are not stopped.
        points.reach(region_pause_points::MIGRATION_LOCKS_TAKEN);
        points.reach(region_pause_points::WRITE_BEFORE_PROPOSE);
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !through.load(Ordering::SeqCst),
            "went on before its release"
        );
        assert!(
            points.release(region_pause_points::WRITE_BEFORE_PROPOSE),
            "the first thread was parked"
        );
        first.join().expect("parked thread");
        assert!(through.load(Ordering::SeqCst));
        assert_eq!(points.armed.load(Ordering::SeqCst), 0, "disarmed after use");
    }

    #[test]
    fn releasing_a_point_nobody_reached_disarms_it() {
        let points = PausePoints::default();
        points.arm(region_pause_points::MIGRATION_LOCKS_TAKEN);
        assert!(
            !points.release(region_pause_points::MIGRATION_LOCKS_TAKEN),
            "nobody was parked"
        );
        assert_eq!(points.armed.load(Ordering::SeqCst), 0);
        points.reach(region_pause_points::MIGRATION_LOCKS_TAKEN);
    }

    /// A parked thread that nobody releases goes on after the limit; the late release then
    /// says it found nobody, so the test that meant to hold the thread knows it did not.
    #[test]
    fn a_release_after_the_park_limit_says_nobody_was_parked() {
        let points = Arc::new(PausePoints::default());
        points.arm(region_pause_points::WRITE_BEFORE_PROPOSE);
        let parked = {
            let points = points.clone();
            std::thread::spawn(move || points.reach(region_pause_points::WRITE_BEFORE_PROPOSE))
        };
        assert!(points.wait_parked(
            region_pause_points::WRITE_BEFORE_PROPOSE,
            Duration::from_secs(10)
        ));
        parked.join().expect("went on by itself after the limit");
        assert!(!points.release(region_pause_points::WRITE_BEFORE_PROPOSE));
        assert_eq!(points.armed.load(Ordering::SeqCst), 0);
    }
}
