//! Criterion settings common to the lock-table benches: short runs, so that
//! `cargo bench -p surge-lock-table` finishes in a few minutes on 2 cores.

use std::time::Duration;

use criterion::Criterion;

/// 20 samples, 0.5 s warm-up, 3 s measurement.
pub fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}
