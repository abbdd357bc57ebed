//! Many threads inserting, removing, splitting and losing leadership on the regions of one
//! node, while a watcher checks that the node budget is never exceeded. At the end every
//! table's accounting is exact, every lock lies in its region, and dropping frees all.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use parking_lot::Mutex;
use surge_lock_table::{KeyRange, MemoryBudget, RefuseReason, SharedRegionLockTable};

use crate::common::*;

/// splitmix64: a tiny seeded PRNG.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Registry = Mutex<Vec<(KeyRange, SharedRegionLockTable<PLock>)>>;

fn key_of(k: u32) -> Vec<u8> {
    k.to_be_bytes().to_vec()
}

fn find(registry: &Registry, key: &[u8]) -> (SharedRegionLockTable<PLock>, u64, u64) {
    let regions = registry.lock();
    let (_, table) = regions
        .iter()
        .find(|(range, _)| range.contains(key))
        .expect("regions cover every key");
    let guard = table.read();
    (table.clone(), guard.term(), guard.version())
}

#[test]
fn threads_insert_remove_split_within_the_node_budget() {
    let node_limit = 48 << 10;
    let budget = budget_with(node_limit, 8 << 10);
    let root = SharedRegionLockTable::<PLock>::new(&budget);
    root.become_leader(1, 1);
    let registry: Arc<Registry> = Arc::new(Mutex::new(vec![(KeyRange::all(), root)]));
    let stop = Arc::new(AtomicBool::new(false));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let full_refusals = Arc::new(AtomicUsize::new(0));

    let watcher = {
        let (budget, stop, max_seen) = (budget.clone(), stop.clone(), max_seen.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let used = budget.used();
                max_seen.fetch_max(used, Ordering::Relaxed);
                assert!(used <= node_limit, "node budget exceeded: {used}");
                thread::yield_now();
            }
        })
    };

    let workers: Vec<_> = (0..8u64)
        .map(|seed| {
            let (registry, full_refusals) = (registry.clone(), full_refusals.clone());
            thread::spawn(move || {
                let mut rng = Rng(seed * 7919 + 1);
                for _ in 0..3000 {
                    let k = rng.below(4096) as u32;
                    match rng.below(100) {
                        0..=54 => {
                            let (table, term, version) = find(&registry, &key_of(k));
                            let primary = vec![b'p'; rng.below(64) as usize];
                            let res = table.try_insert(
                                vec![(key_of(k), lock(&primary, k as u64))],
                                term,
                                version,
                            );
                            if let Err(r) = res
                                && matches!(r.reason, RefuseReason::NodeBudgetFull { .. })
                            {
                                full_refusals.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        55..=94 => {
                            let (table, term, version) = find(&registry, &key_of(k));
                            table.mark_deleted(&key_of(k));
                            table.remove_applied(&key_of(k), term, version);
                        }
                        95..=97 => {
                            // Split the region holding k at k, if k is not its start.
                            let mut regions = registry.lock();
                            let at = key_of(k);
                            let i = regions
                                .iter()
                                .position(|(r, _)| r.contains(&at))
                                .expect("covered");
                            let (range, table) = regions[i].clone();
                            if range.start() == at.as_slice() {
                                continue;
                            }
                            let left = KeyRange::new(range.start().to_vec(), at.clone());
                            let right = match range.end() {
                                Some(end) => KeyRange::new(at.clone(), end.to_vec()),
                                None => KeyRange::from_start(at.clone()),
                            };
                            let version = table.version() + 1;
                            let mut new = table
                                .split(version, &left, std::slice::from_ref(&right))
                                .expect("valid split");
                            regions[i].0 = left;
                            regions.push((right, new.remove(0)));
                        }
                        _ => {
                            // Leadership lost and regained.
                            let (table, term, version) = find(&registry, &key_of(k));
                            let mut guard = table.write();
                            guard.become_follower();
                            guard.become_leader(term + 1, version);
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();

    let regions = registry.lock();
    let mut total = 0;
    for (range, table) in regions.iter() {
        let guard = table.read();
        assert_eq!(guard.memory_size(), recount(&guard));
        assert!(guard.memory_size() <= 8 << 10);
        for (key, _) in guard.iter() {
            assert!(range.contains(key), "lock outside its region");
        }
        total += guard.memory_size();
    }
    assert_eq!(budget.used(), total);
    assert!(regions.len() > 10, "splits happened: {}", regions.len());
    assert!(max_seen.load(Ordering::Relaxed) > 0);
    // The node budget must actually have been contended, or the watcher proved nothing.
    assert!(
        full_refusals.load(Ordering::Relaxed) > 0,
        "the node budget was never full"
    );
    drop(regions);
    drop(registry);
    assert_eq!(budget.used(), 0);
    assert_eq!(budget.counters().current_locks, 0);
}

/// Readers scan while writers insert and remove: every scan is in key order and consistent.
#[test]
fn concurrent_readers_see_ordered_consistent_scans() {
    let budget = MemoryBudget::default();
    let table = SharedRegionLockTable::<PLock>::new(&budget);
    table.become_leader(1, 1);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (table, stop) = (table.clone(), stop.clone());
            thread::spawn(move || {
                let mut scans = 0;
                while !stop.load(Ordering::Relaxed) || scans == 0 {
                    let s = table.scan(&KeyRange::all(), 0);
                    assert!(s.entries.windows(2).all(|w| w[0].0 < w[1].0));
                    let guard = table.read();
                    assert_eq!(guard.memory_size(), recount(&guard));
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    let writers: Vec<_> = (0..3u64)
        .map(|seed| {
            let table = table.clone();
            thread::spawn(move || {
                let mut rng = Rng(seed + 100);
                for _ in 0..5000 {
                    let k = key_of(rng.below(512) as u32);
                    if rng.below(2) == 0 {
                        let _ = table.try_insert(vec![(k, lock(b"p", 1))], 1, 1);
                    } else {
                        table.remove_applied(&k, 1, 1);
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(budget.used(), table.memory_size());
}

/// Two threads absorbing A into B and B into A at the same time must not deadlock on the two
/// write locks; the locks end up in one table or the other, with exact accounting.
#[test]
fn opposite_absorbs_do_not_deadlock() {
    let budget = MemoryBudget::default();
    let a = SharedRegionLockTable::<PLock>::new(&budget);
    let b = SharedRegionLockTable::<PLock>::new(&budget);
    a.become_leader(1, 1);
    b.become_leader(1, 1);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for (into, from, first_key) in [(a.clone(), b.clone(), 0u32), (b.clone(), a.clone(), 1)] {
        let done_tx = done_tx.clone();
        thread::spawn(move || {
            for i in 0..2000u32 {
                let k = key_of(i * 2 + first_key);
                let _ = into.try_insert(vec![(k, lock(b"p", 1))], 1, 1);
                into.absorb(&from).expect("same budget");
            }
            done_tx.send(()).expect("test waits");
        });
    }
    for _ in 0..2 {
        done_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("absorbs deadlocked");
    }
    assert_eq!(a.len() + b.len(), 4000);
    assert_eq!(budget.used(), a.memory_size() + b.memory_size());
    assert_eq!(budget.counters().current_locks, 4000);
}
