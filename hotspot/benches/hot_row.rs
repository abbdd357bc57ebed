//! Criterion bench: N threads incrementing one durable hot counter (append + fdatasync per
//! commit), hotspot `on` (grouped) vs `off` (lock, update, flush, unlock per request).
//! Kept short; the full sweep with JSON output is `examples/hot_row.rs`.
#![allow(missing_docs, reason = "criterion_group! generates undocumented items")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use surge_hotspot::{Config, Coordinator, Hints};

#[path = "support/fifo_lock.rs"]
mod fifo_lock;
#[path = "support/file_counter.rs"]
mod file_counter;

use fifo_lock::FifoLock;
use file_counter::FileCounter;

fn run(
    threads: u64,
    iters: u64,
    on: bool,
    hot: &Coordinator<Arc<FileCounter>>,
    lock: &FifoLock,
) -> Duration {
    let each = iters.div_ceil(threads);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    if on {
                        hot.execute(&1, 1, Hints::hot_update()).expect("increment");
                    } else {
                        lock.lock().expect("row lock");
                        hot.executor().run_one(1, 1).expect("increment");
                        lock.unlock().expect("row lock");
                    }
                }
            });
        }
    });
    t.elapsed()
}

fn hot_row(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let counter = Arc::new(FileCounter::create(&dir.path().join("hot.log"), 0).expect("log file"));
    let hot = Coordinator::new(counter, Config::default()).expect("config");
    let lock = FifoLock::new();
    let mut g = c.benchmark_group("hot_row");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1));
    for threads in [1u64, 32] {
        for (mode, on) in [("off", false), ("on", true)] {
            g.bench_with_input(BenchmarkId::new(mode, threads), &threads, |b, &t| {
                b.iter_custom(|iters| run(t, iters, on, &hot, &lock));
            });
        }
    }
    g.finish();
}

criterion_group!(benches, hot_row);
criterion_main!(benches);
