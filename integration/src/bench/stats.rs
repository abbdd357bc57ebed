//! Latency summaries of a benchmark point.

use serde::Serialize;

/// Percentiles and maximum of a set of latencies, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
}

impl Latency {
    /// The summary of `samples` (microseconds, any order); all zero when empty.
    pub fn of(mut samples: Vec<u64>) -> Latency {
        samples.sort_unstable();
        Latency {
            p50_us: percentile(&samples, 0.50),
            p95_us: percentile(&samples, 0.95),
            p99_us: percentile(&samples, 0.99),
            max_us: samples.last().copied().unwrap_or(0),
        }
    }

    /// Each figure the larger of `self`'s and `other`'s (the worst of several runs).
    pub fn worst(&self, other: &Latency) -> Latency {
        Latency {
            p50_us: self.p50_us.max(other.p50_us),
            p95_us: self.p95_us.max(other.p95_us),
            p99_us: self.p99_us.max(other.p99_us),
            max_us: self.max_us.max(other.max_us),
        }
    }
}

/// The nearest-rank `p` quantile (0.0..=1.0) of sorted `samples`; 0 when empty.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_of_one_to_a_hundred() {
        let l = Latency::of((1..=100).rev().collect());
        assert_eq!((l.p50_us, l.p95_us, l.p99_us, l.max_us), (50, 95, 99, 100));
        assert_eq!(Latency::of(Vec::new()), Latency::default());
        assert_eq!(Latency::of(vec![7]).p99_us, 7);
    }
}
