//! One parked request, woken with its own result or to lead; and the bells members sleep on.
//!
//! A member's result goes to its own mailbox ([`Waiter`]); the member sleeps on one of its key's
//! [`Bell`]s (a condition variable chosen by its group's sequence number). When a group is done
//! its leader delivers every result, then rings the group's bell once: one `notify_all`, that is
//! one wake system call for the whole group instead of one per member. Measured on 2 vCPUs:
//! ~30% less CPU per request than unparking each member (`examples/park_floor.rs` shows the same
//! for a bare hand-off). Members of the next group sleep on another bell, so they are not woken.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Bells per key. Consecutive groups use different bells, so ringing one group's bell does not
/// wake the group collecting behind it (a group up to three further on could share it; such a
/// member just finds its mailbox empty and sleeps again).
pub(crate) const BELLS: usize = 4;

/// A condition variable members of a group sleep on.
#[derive(Debug, Default)]
pub(crate) struct Bell {
    /// Guards nothing but the check-then-sleep of a member against the ring (no lost wake-up):
    /// a member checks its mailbox holding it; the leader fills mailboxes first, then takes it.
    lock: Mutex<()>,
    cv: Condvar,
}

impl Bell {
    fn lock(&self) -> MutexGuard<'_, ()> {
        // Nothing is ever done while holding it that could panic; poison carries no state here.
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every member sleeping on this bell. Call after filling their mailboxes.
    pub(crate) fn ring(&self) {
        drop(self.lock());
        self.cv.notify_all();
    }
}

enum Slot<T> {
    Waiting,
    Leader,
    Done(T),
}

/// How a parked request was woken.
pub(crate) enum Wake<T> {
    /// Its group finished; here is its own result.
    Done(T),
    /// It is now the first of the collecting group and must lead it.
    Leader,
}

/// A request's mailbox. Invariant: exactly one of `deliver` / `promote` is called per wait, by
/// the leader that owns the request's entry at that moment, and only the owner thread calls
/// `wait`.
pub(crate) struct Waiter<T> {
    slot: parking_lot::Mutex<Slot<T>>,
}

impl<T> std::fmt::Debug for Waiter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter").finish_non_exhaustive()
    }
}

impl<T> Waiter<T> {
    /// An empty mailbox.
    pub(crate) fn new() -> Self {
        Self {
            slot: parking_lot::Mutex::new(Slot::Waiting),
        }
    }

    /// Stores the result without waking the owner (ring its bell afterwards).
    pub(crate) fn deliver(&self, value: T) {
        *self.slot.lock() = Slot::Done(value);
    }

    /// Makes the owner the leader of the collecting group and wakes it on `bell`.
    pub(crate) fn promote(&self, bell: &Bell) {
        *self.slot.lock() = Slot::Leader;
        bell.ring();
    }

    /// Takes the result or the promotion if it is there.
    fn try_take(&self) -> Option<Wake<T>> {
        match std::mem::replace(&mut *self.slot.lock(), Slot::Waiting) {
            Slot::Done(v) => Some(Wake::Done(v)),
            Slot::Leader => Some(Wake::Leader),
            Slot::Waiting => None,
        }
    }

    /// Waits until delivered or promoted: first gives the CPU away up to `spin_yields` times
    /// (`sched_yield`), checking the mailbox in between, then sleeps on `bell` (rings for other
    /// members just loop).
    ///
    /// Why yield first: with more waiting clients than cores, a member's result usually arrives
    /// within a few rounds of the run queue, and a yield is far cheaper than the futex sleep and
    /// wake it replaces (measured at 256 clients on 2 vCPUs: about 1.7x the group throughput).
    /// With idle cores a yield returns at once, so the spin costs a few microseconds of CPU.
    pub(crate) fn wait(&self, bell: &Bell, spin_yields: u32) -> Wake<T> {
        for _ in 0..spin_yields {
            if let Some(w) = self.try_take() {
                return w;
            }
            std::thread::yield_now();
        }
        let mut guard = bell.lock();
        loop {
            // A separate statement: the slot guard must be released before sleeping.
            let taken = std::mem::replace(&mut *self.slot.lock(), Slot::Waiting);
            match taken {
                Slot::Done(v) => return Wake::Done(v),
                Slot::Leader => return Wake::Leader,
                Slot::Waiting => {
                    guard = bell.cv.wait(guard).unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;

    use super::*;

    #[test]
    fn complete_and_promote_wake_the_owner() {
        for promote in [false, true] {
            let bell = Arc::new(Bell::default());
            let (tx, rx) = std::sync::mpsc::channel();
            let b = Arc::clone(&bell);
            let h = thread::spawn(move || {
                let w = Arc::new(Waiter::<u32>::new());
                tx.send(Arc::clone(&w)).unwrap();
                match w.wait(&b, 0) {
                    Wake::Done(v) => Some(v),
                    Wake::Leader => None,
                }
            });
            let w = rx.recv().unwrap();
            if promote {
                w.promote(&bell);
            } else {
                w.deliver(7);
                bell.ring();
            }
            assert_eq!(h.join().unwrap(), if promote { None } else { Some(7) });
        }
    }

    #[test]
    fn one_ring_reaches_every_member() {
        for n in [1usize, 2, 3, 7, 64] {
            let bell = Arc::new(Bell::default());
            let (tx, rx) = std::sync::mpsc::channel();
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    let tx = tx.clone();
                    let b = Arc::clone(&bell);
                    thread::spawn(move || {
                        let w = Arc::new(Waiter::<usize>::new());
                        tx.send(Arc::clone(&w)).unwrap();
                        match w.wait(&b, 0) {
                            Wake::Done(v) => v,
                            Wake::Leader => usize::MAX,
                        }
                    })
                })
                .collect();
            let list: Vec<Arc<Waiter<usize>>> = (0..n).map(|_| rx.recv().unwrap()).collect();
            for (i, w) in list.iter().enumerate().rev() {
                w.deliver(i);
            }
            bell.ring();
            let mut got: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            got.sort_unstable();
            assert_eq!(got, (0..n).collect::<Vec<_>>());
        }
    }
}
