//! One parked request, woken individually with its own result or to lead.
//!
//! Wake-ups fan out as a binary tree: the leader delivers every result first (children before
//! parents, so a member that picks its result up early never wakes a child that has none yet),
//! then unparks two members, and each woken member unparks two more before returning. Waking `n` members thus
//! takes about `log2(n)` wake latencies instead of `n`, and the wake system calls run on every
//! core instead of queueing on the leader's thread (on a 2-core VM, waking 128 members one by
//! one took most of a group's cycle).

use std::sync::Arc;
use std::thread::{self, Thread};

use parking_lot::Mutex;

/// The members of one finished group, shared so each can wake its children.
pub(crate) type WakeList<T> = Arc<[Arc<Waiter<T>>]>;

enum Slot<T> {
    Waiting,
    Leader,
    Done(T, Option<(WakeList<T>, usize)>),
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
    thread: Thread,
    slot: Mutex<Slot<T>>,
}

impl<T> std::fmt::Debug for Waiter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("thread", &self.thread.id())
            .finish_non_exhaustive()
    }
}

/// Unparks the members at the tree children of `index` (the leader is `None`: indices 0, 1).
pub(crate) fn wake_children<T>(list: &[Arc<Waiter<T>>], index: Option<usize>) {
    let first = index.map_or(0, |i| 2 * i + 2);
    for w in list.iter().skip(first).take(2) {
        w.thread.unpark();
    }
}

impl<T> Waiter<T> {
    /// A mailbox for the calling thread.
    pub(crate) fn for_current_thread() -> Arc<Self> {
        Arc::new(Self {
            thread: thread::current(),
            slot: Mutex::new(Slot::Waiting),
        })
    }

    /// Stores the result without waking the owner; `duty` is the owner's place in its group's
    /// wake tree (it wakes its children when it picks the result up).
    pub(crate) fn deliver(&self, value: T, duty: Option<(WakeList<T>, usize)>) {
        *self.slot.lock() = Slot::Done(value, duty);
    }

    /// Delivers the result and wakes the owner directly.
    #[cfg(test)]
    pub(crate) fn complete(&self, value: T) {
        self.deliver(value, None);
        self.thread.unpark();
    }

    /// Makes the owner the leader of the collecting group and wakes it.
    pub(crate) fn promote(&self) {
        *self.slot.lock() = Slot::Leader;
        self.thread.unpark();
    }

    /// Parks until delivered or promoted (spurious unparks just loop). On delivery, first wakes
    /// this member's children in the wake tree.
    pub(crate) fn wait(&self) -> Wake<T> {
        loop {
            let taken = std::mem::replace(&mut *self.slot.lock(), Slot::Waiting);
            match taken {
                Slot::Done(v, duty) => {
                    if let Some((list, i)) = duty {
                        wake_children(&list, Some(i));
                    }
                    return Wake::Done(v);
                }
                Slot::Leader => return Wake::Leader,
                Slot::Waiting => thread::park(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_and_promote_wake_the_owner() {
        for promote in [false, true] {
            let (tx, rx) = std::sync::mpsc::channel();
            let h = thread::spawn(move || {
                let w = Waiter::<u32>::for_current_thread();
                tx.send(Arc::clone(&w)).unwrap();
                match w.wait() {
                    Wake::Done(v) => Some(v),
                    Wake::Leader => None,
                }
            });
            let w = rx.recv().unwrap();
            if promote {
                w.promote();
            } else {
                w.complete(7);
            }
            assert_eq!(h.join().unwrap(), if promote { None } else { Some(7) });
        }
    }

    #[test]
    fn a_wake_tree_reaches_every_member() {
        for n in [1usize, 2, 3, 7, 64] {
            let (tx, rx) = std::sync::mpsc::channel();
            let hs: Vec<_> = (0..n)
                .map(|_| {
                    let tx = tx.clone();
                    thread::spawn(move || {
                        let w = Waiter::<usize>::for_current_thread();
                        tx.send(Arc::clone(&w)).unwrap();
                        match w.wait() {
                            Wake::Done(v) => v,
                            Wake::Leader => usize::MAX,
                        }
                    })
                })
                .collect();
            let list: WakeList<usize> = (0..n).map(|_| rx.recv().unwrap()).collect();
            for (i, w) in list.iter().enumerate().rev() {
                w.deliver(i, Some((Arc::clone(&list), i)));
            }
            wake_children(&list, None);
            let mut got: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            got.sort_unstable();
            assert_eq!(got, (0..n).collect::<Vec<_>>());
        }
    }
}
