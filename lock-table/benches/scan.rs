//! `scan` of a table holding 10k locks: the whole table, and 100 locks from the middle.

// `criterion_group!` generates a public function without docs.
#![allow(missing_docs)]

mod support;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use surge_lock_table::{BudgetConfig, KeyRange, MemoryBudget, RegionLockTable};

fn table(budget: &MemoryBudget) -> RegionLockTable<Vec<u8>> {
    let mut t = RegionLockTable::new(budget);
    t.become_leader(1, 1);
    for i in 0..10_000u32 {
        let key = format!("key_{i:08}").into_bytes();
        t.try_insert_one(key, b"primary_key_0001".to_vec(), 1, 1)
            .expect("fits");
    }
    t
}

fn scan(c: &mut Criterion) {
    // 10k locks exceed the default 512 KiB region limit; raise it for this bench.
    let budget = MemoryBudget::new(BudgetConfig::default().with_region_limit(16 << 20));
    let t = table(&budget);
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Elements(10_000));
    group.bench_function("all_10k", |b| {
        b.iter(|| black_box(t.scan(&KeyRange::all(), 0).entries.len()))
    });
    group.throughput(Throughput::Elements(100));
    let from = KeyRange::from_start(b"key_00005000".to_vec());
    group.bench_function("100_of_10k", |b| {
        b.iter(|| black_box(t.scan(&from, 100).entries.len()))
    });
    group.finish();
}

criterion_group! { name = benches; config = support::config(); targets = scan }
criterion_main!(benches);
