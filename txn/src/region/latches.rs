//! [`Latches`]: key latches, so two commands on one key never interleave on a leader.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// The latch slots of a region. [`Latches`] keeps only the slots held, in a set, so the
/// count costs no memory: it only decides how often two different keys share a slot. A
/// large transaction's prewrite or commit batch holds thousands of keys' slots from its
/// proposal to its apply; with 4,096 slots an 8,000-key batch held most of them, and
/// nearly every small statement in the same region waited for that batch's whole Raft
/// round (003: sysbench beside a big `UPDATE`). With 2^31 slots two keys share one about
/// once in two billion.
pub(crate) const LATCH_SLOTS: u32 = 1 << 31;

/// Key latches of one region (TiKV's scheduler latches): a command takes the slots of all
/// its keys at once before it reads, and releases them when its write is applied (or when
/// it wrote nothing).
///
/// # Invariants
/// - A command holds either all of its slots or none, so two commands can never each hold a
///   slot the other waits for (no latch deadlock).
/// - Keys hash to slots; two keys may share a slot, which only serializes more than needed.
#[derive(Debug)]
pub(crate) struct Latches {
    held: Mutex<HashSet<u32>>,
    freed: Condvar,
    slots: u32,
}

/// The slots a command holds; dropping it releases them. It may be dropped on another
/// thread than the one that took it (the apply thread releases a pipelined write's latches).
#[derive(Debug)]
pub(crate) struct LatchGuard {
    latches: Arc<Latches>,
    slots: Vec<u32>,
}

impl Latches {
    pub(crate) fn new(slots: u32) -> Arc<Latches> {
        Arc::new(Latches {
            held: Mutex::new(HashSet::new()),
            freed: Condvar::new(),
            slots: slots.max(1),
        })
    }

    fn slot(&self, key: &[u8]) -> u32 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        // The remainder of a division by a u32 fits a u32.
        u32::try_from(h.finish() % u64::from(self.slots)).unwrap_or(0)
    }

    /// As [`Latches::acquire`], calling `between` (with no latch lock held) every `tick`
    /// while it waits: a holder that will never release on its own (a write whose proposal
    /// was refused after its proposer stopped waiting) is dropped there.
    pub(crate) fn acquire_while<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: &[K],
        tick: Duration,
        mut between: impl FnMut(),
    ) -> LatchGuard {
        loop {
            let deadline = Instant::now() + Duration::from_secs(3600);
            if let Some(g) = self.acquire_until(keys, deadline, tick, &mut between) {
                return g;
            }
        }
    }

    /// As [`Latches::acquire_while`], giving up at `deadline`: `None` if some slot was still
    /// held then (nothing is taken). For a command that takes many keys' slots at once, which
    /// a stream of commands on any one of them could otherwise hold off for good.
    pub(crate) fn acquire_until<K: AsRef<[u8]>>(
        self: &Arc<Self>,
        keys: &[K],
        deadline: Instant,
        tick: Duration,
        mut between: impl FnMut(),
    ) -> Option<LatchGuard> {
        let mut slots: Vec<u32> = keys.iter().map(|k| self.slot(k.as_ref())).collect();
        slots.sort_unstable();
        slots.dedup();
        loop {
            let mut held = self.held.lock();
            let mut free = !slots.iter().any(|s| held.contains(s));
            if !free {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return None;
                }
                let _ = self.freed.wait_for(&mut held, tick.min(left));
                free = !slots.iter().any(|s| held.contains(s));
            }
            if free {
                held.extend(slots.iter().copied());
                return Some(LatchGuard {
                    latches: self.clone(),
                    slots,
                });
            }
            drop(held);
            between();
        }
    }

    /// Takes the latches of `keys`, waiting until all of them are free.
    #[cfg(test)]
    pub(crate) fn acquire<K: AsRef<[u8]>>(self: &Arc<Self>, keys: &[K]) -> LatchGuard {
        self.acquire_while(keys, Duration::from_secs(3600), || {})
    }

    /// Number of slots held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.lock().len()
    }
}

impl Drop for LatchGuard {
    fn drop(&mut self) {
        if self.slots.is_empty() {
            return;
        }
        let mut held = self.latches.held.lock();
        for s in &self.slots {
            held.remove(s);
        }
        drop(held);
        self.latches.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_second_command_on_a_key_waits_for_the_first() {
        let latches = Latches::new(64);
        let first = latches.acquire(&[b"k".to_vec(), b"x".to_vec()]);
        let entered = Arc::new(AtomicBool::new(false));
        let t = {
            let latches = latches.clone();
            let entered = entered.clone();
            std::thread::spawn(move || {
                let _g = latches.acquire(&[b"k".to_vec()]);
                entered.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !entered.load(Ordering::SeqCst),
            "entered while the key was latched"
        );
        drop(first);
        t.join().expect("second command");
        assert!(entered.load(Ordering::SeqCst));
        assert_eq!(latches.held(), 0);
    }

    #[test]
    fn released_on_another_thread() {
        let latches = Latches::new(8);
        let g = latches.acquire(&[b"a"]);
        std::thread::spawn(move || drop(g))
            .join()
            .expect("drop thread");
        let _again = latches.acquire(&[b"a"]);
    }

    /// A holder that never releases by itself is dropped by `between`, which the waiter
    /// calls every tick: the waiter then gets the latch instead of waiting for good.
    #[test]
    fn acquire_while_calls_between_until_the_latch_is_free() {
        let latches = Latches::new(16);
        let stuck = parking_lot::Mutex::new(Some(latches.acquire(&[b"k"])));
        let mut calls = 0;
        let _g = latches.acquire_while(&[b"k"], Duration::from_millis(5), || {
            calls += 1;
            if calls == 3 {
                stuck.lock().take();
            }
        });
        assert_eq!(calls, 3);
        assert_eq!(latches.held(), 1);
    }

    /// A command taking many keys' slots gives up at its deadline while one of them stays
    /// held (nothing taken: the others stay free), and gets them all once it is free.
    #[test]
    fn acquire_until_gives_up_at_its_deadline_and_takes_nothing() {
        let latches = Latches::new(4096);
        let holder = latches.acquire(&[b"b"]);
        let started = Instant::now();
        let deadline = started + Duration::from_millis(100);
        let got = latches.acquire_until(
            &[b"a", b"b", b"c"],
            deadline,
            Duration::from_millis(5),
            || {},
        );
        assert!(got.is_none(), "took a held slot");
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "gave up early"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "waited past its deadline"
        );
        assert_eq!(latches.held(), 1, "only the holder's slot is held");
        drop(holder);
        let deadline = Instant::now() + Duration::from_secs(5);
        let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
        let got = latches.acquire_until(&keys, deadline, Duration::from_millis(5), || {});
        assert!(got.is_some());
        let slots: HashSet<u32> = keys.iter().map(|k| latches.slot(k)).collect();
        assert_eq!(latches.held(), slots.len());
    }
}
