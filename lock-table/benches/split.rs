//! `split` of a full 512 KiB region table, into 2 and into 8 regions. The table is rebuilt
//! outside the timed part for every iteration.

// `criterion_group!` generates a public function without docs.
#![allow(missing_docs)]

mod support;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use surge_lock_table::{BudgetConfig, KeyRange, MemoryBudget, RegionLockTable};

/// Fills a table until the 512 KiB region budget refuses; returns it and its lock count.
fn full_table(budget: &MemoryBudget) -> (RegionLockTable<Vec<u8>>, usize) {
    let mut t = RegionLockTable::new(budget);
    t.become_leader(1, 1);
    let mut i = 0u32;
    while t
        .try_insert_one(
            format!("key_{i:08}").into_bytes(),
            b"primary_key_0001".to_vec(),
            1,
            1,
        )
        .is_ok()
    {
        i += 1;
    }
    let n = t.len();
    (t, n)
}

fn ranges(n: usize, parts: usize) -> (KeyRange, Vec<KeyRange>) {
    let bounds: Vec<Vec<u8>> = (1..parts)
        .map(|j| format!("key_{:08}", j * n / parts).into_bytes())
        .collect();
    let keep = KeyRange::new(Vec::new(), bounds[0].clone());
    let mut others: Vec<KeyRange> = bounds
        .windows(2)
        .map(|w| KeyRange::new(w[0].clone(), w[1].clone()))
        .collect();
    others.push(KeyRange::from_start(bounds[parts - 2].clone()));
    (keep, others)
}

fn split(c: &mut Criterion) {
    // Many full tables may be alive at once while criterion prepares a batch: give the node
    // budget room so that every table is full (checked below), only the region limit binds.
    let budget = MemoryBudget::new(BudgetConfig::default().with_node_limit(usize::MAX / 2));
    let (probe, n) = full_table(&budget);
    eprintln!(
        "full table: {n} locks, {} bytes (limit {})",
        probe.memory_size(),
        budget.region_limit()
    );
    drop(probe);
    let mut group = c.benchmark_group("split");
    for parts in [2usize, 8] {
        let (keep, others) = ranges(n, parts);
        group.bench_function(format!("full_512KiB_into_{parts}"), |b| {
            b.iter_batched(
                || {
                    let (t, len) = full_table(&budget);
                    assert_eq!(len, n, "every table is full");
                    t
                },
                |mut t| {
                    let new = t.split(2, &keep, &others).expect("valid split");
                    black_box((t, new))
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group! { name = benches; config = support::config(); targets = split }
criterion_main!(benches);
