//! Insert + remove throughput: 1 and 8 threads, on one region and on 64 regions.
//!
//! Each iteration is one `try_insert` of a single lock (16-byte key, 16-byte primary) followed
//! by `mark_deleted` + `remove_applied` of the same key (the TiKV write path for a pessimistic
//! lock that is later replaced by prewrite). Multi-threaded variants report aggregate pairs/s.

// `criterion_group!` generates a public function without docs.
#![allow(missing_docs)]

mod support;

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use surge_lock_table::{LockValue, MemoryBudget, RegionLockTable, SharedRegionLockTable};

/// A lock shaped like TiKV's `PessimisticLock`; the timestamps only give it a real size.
#[derive(Debug, Clone)]
#[allow(dead_code)] // timestamps are never read, only carried
struct BenchLock {
    primary: Vec<u8>,
    start_ts: u64,
    for_update_ts: u64,
}

impl LockValue for BenchLock {
    fn heap_size(&self) -> usize {
        self.primary.len()
    }
}

fn keys(thread: usize, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("t{thread:02}_key_{i:08}").into_bytes())
        .collect()
}

fn lock(i: u64) -> BenchLock {
    BenchLock {
        primary: b"primary_key_0001".to_vec(),
        start_ts: i,
        for_update_ts: i + 1,
    }
}

/// One region, plain table, no lock around it: the raw cost of a pair.
fn single_thread_plain(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_remove");
    group.throughput(Throughput::Elements(1));
    let budget = MemoryBudget::default();
    let mut table: RegionLockTable<BenchLock> = RegionLockTable::new(&budget);
    table.become_leader(1, 1);
    // A realistic background: 1000 locks already held.
    for (i, k) in keys(99, 1000).into_iter().enumerate() {
        table.try_insert_one(k, lock(i as u64), 1, 1).expect("fits");
    }
    let ks = keys(0, 1024);
    let mut i = 0usize;
    group.bench_function("table_1thread_1region", |b| {
        b.iter(|| {
            let k = &ks[i & 1023];
            i += 1;
            table
                .try_insert_one(k.clone(), lock(i as u64), 1, 1)
                .expect("fits");
            table.mark_deleted(k);
            black_box(table.remove_applied(k, 1, 1));
        })
    });
    group.finish();
}

/// `threads` threads on `regions` regions behind `SharedRegionLockTable` handles; thread t rotates over the regions.
fn run_handles(threads: usize, regions: usize, iters: u64) -> Duration {
    let budget = MemoryBudget::default();
    let tables: Vec<SharedRegionLockTable<BenchLock>> = (0..regions)
        .map(|_| {
            let t = SharedRegionLockTable::new(&budget);
            t.become_leader(1, 1);
            t
        })
        .collect();
    let start = Instant::now();
    thread::scope(|s| {
        for t in 0..threads {
            let tables = &tables;
            s.spawn(move || {
                let ks = keys(t, 1024);
                for i in 0..iters as usize {
                    let table = &tables[(i + t * 7) % regions];
                    let k = &ks[i & 1023];
                    table
                        .try_insert(vec![(k.clone(), lock(i as u64))], 1, 1)
                        .expect("fits");
                    table.mark_deleted(k);
                    black_box(table.remove_applied(k, 1, 1));
                }
            });
        }
    });
    start.elapsed()
}

fn handles(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_remove");
    for &(threads, regions) in &[(1usize, 1usize), (8, 1), (1, 64), (8, 64)] {
        group.throughput(Throughput::Elements(threads as u64));
        group.bench_function(format!("handle_{threads}threads_{regions}regions"), |b| {
            b.iter_custom(|iters| run_handles(threads, regions, iters))
        });
    }
    group.finish();
}

criterion_group! { name = benches; config = support::config(); targets = single_thread_plain, handles }
criterion_main!(benches);
