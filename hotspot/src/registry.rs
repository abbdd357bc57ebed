//! Key → group object map (AliSQL's `GroupUpdateMgr`) plus the free list (`GroupUpdatePool`).

use std::collections::HashMap;
use std::collections::hash_map::{Entry, RandomState};
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::{Mutex, RwLock};

use crate::key_state::KeyState;
use crate::stats::Counters;

const SHARDS: usize = 16;
/// Idle group objects kept for reuse; beyond this they are freed.
const POOL_CAP: usize = 1024;
/// Group buffer capacity an idle pooled object keeps.
const POOLED_CAPACITY: usize = 64;

/// One shard of the key map.
type Shard<K, M> = RwLock<HashMap<K, Arc<KeyState<M>>>>;

/// Maps keys with requests in flight to their group object. A key's object leaves the map when
/// its last request returns and goes to the free list, so memory follows the number of keys
/// being updated right now, not the number ever updated.
#[derive(Debug)]
pub(crate) struct Registry<K, M> {
    hasher: RandomState,
    shards: Box<[Shard<K, M>]>,
    pool: Mutex<Vec<Arc<KeyState<M>>>>,
}

impl<K: Hash + Eq + Clone, M> Registry<K, M> {
    pub(crate) fn new() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            pool: Mutex::new(Vec::new()),
        }
    }

    fn shard(&self, key: &K) -> &Shard<K, M> {
        let h = self.hasher.hash_one(key);
        // Truncation is fine: only the low bits pick a shard.
        &self.shards[(h as usize) % SHARDS]
    }

    /// Returns the key's group object with `in_flight` already counting the caller.
    pub(crate) fn acquire(&self, key: &K, counters: &Counters) -> Arc<KeyState<M>> {
        let shard = self.shard(key);
        {
            let map = shard.read();
            if let Some(ks) = map.get(key) {
                // Under the read lock: the recycler holds the write lock, so it cannot see zero
                // and recycle the object between our lookup and this increment.
                ks.in_flight.fetch_add(1, Ordering::AcqRel);
                return Arc::clone(ks);
            }
        }
        let mut map = shard.write();
        match map.entry(key.clone()) {
            Entry::Occupied(o) => {
                o.get().in_flight.fetch_add(1, Ordering::AcqRel);
                Arc::clone(o.get())
            }
            Entry::Vacant(v) => {
                let pooled = self.pool.lock().pop();
                let ks = match pooled {
                    Some(ks) => {
                        Counters::add(&counters.reuse, 1);
                        ks
                    }
                    None => {
                        Counters::add(&counters.total, 1);
                        Arc::new(KeyState::new())
                    }
                };
                ks.in_flight.store(1, Ordering::Release);
                v.insert(Arc::clone(&ks));
                ks
            }
        }
    }

    /// Drops the caller's count; the last one out recycles the object.
    pub(crate) fn release(&self, key: &K, ks: Arc<KeyState<M>>) {
        if ks.in_flight.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let shard = self.shard(key);
        let mut map = shard.write();
        // Someone may have re-acquired it (count > 0 again), or recycled it already and another
        // object may now serve the key: only remove our own object, and only while idle.
        let ours = map.get(key).is_some_and(|cur| Arc::ptr_eq(cur, &ks));
        if !ours || ks.in_flight.load(Ordering::Acquire) != 0 {
            return;
        }
        map.remove(key);
        drop(map);
        {
            let mut c = ks.collect.lock();
            debug_assert!(c.pending.is_empty(), "idle key with pending members");
            // A pooled object may have served a huge group; keep only a modest buffer.
            c.pending.shrink_to(POOLED_CAPACITY);
            c.spare.shrink_to(POOLED_CAPACITY);
        }
        let mut pool = self.pool.lock();
        if pool.len() < POOL_CAP {
            pool.push(ks);
        }
    }

    /// Idle objects in the free list.
    pub(crate) fn free_count(&self) -> usize {
        self.pool.lock().len()
    }

    /// Requests in flight for `key` (0 when the key is idle).
    pub(crate) fn in_flight(&self, key: &K) -> usize {
        self.shard(key)
            .read()
            .get(key)
            .map_or(0, |ks| ks.in_flight.load(Ordering::Acquire))
    }

    /// Runs `f` on the key's object if the key has requests in flight.
    pub(crate) fn with<T>(&self, key: &K, f: impl FnOnce(&KeyState<M>) -> T) -> Option<T> {
        self.shard(key).read().get(key).map(|ks| f(ks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_pooled_and_reused() {
        let r: Registry<u32, ()> = Registry::new();
        let c = Counters::default();
        let a = r.acquire(&1, &c);
        let a2 = r.acquire(&1, &c);
        assert!(Arc::ptr_eq(&a, &a2));
        assert_eq!(r.in_flight(&1), 2);
        let b = r.acquire(&2, &c);
        assert_eq!(c.snapshot(0).total_count, 2);
        r.release(&1, a);
        assert_eq!(r.free_count(), 0, "still one request on key 1");
        r.release(&1, a2);
        assert_eq!((r.free_count(), r.in_flight(&1)), (1, 0));
        let c3 = r.acquire(&3, &c);
        let s = c.snapshot(r.free_count() as u64);
        assert_eq!((s.total_count, s.reuse_count, s.free_count), (2, 1, 0));
        r.release(&3, c3);
        r.release(&2, b);
        assert_eq!(r.free_count(), 2);
    }
}
