//! [`Tally`]: the slices of one (variant, threads) point summed over the rounds.

use serde::Serialize;

use super::output::SysbenchResult;

/// One point of a sysbench experiment: a variant at a thread count, over its slices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SysbenchPoint {
    /// Which variant (`in-memory`, `hotspot ON`, `mariadb`, ...).
    pub variant: String,
    /// Sysbench threads.
    pub threads: usize,
    /// Transactions acknowledged over all slices.
    pub transactions: u64,
    /// Seconds measured over all slices.
    pub seconds: f64,
    /// `transactions / seconds`.
    pub tps: f64,
    /// The mean of the slices' latency percentile (sysbench's 95th), milliseconds.
    pub p95_ms: f64,
    /// The slowest transaction of any slice, milliseconds.
    pub max_ms: f64,
    /// Errors sysbench ignored (and retried) over all slices.
    pub ignored_errors: u64,
    /// Slices measured.
    pub slices: usize,
}

/// Points being summed, in first-measured order.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    points: Vec<SysbenchPoint>,
}

impl Tally {
    /// Adds one slice of `variant` at `threads`.
    pub(crate) fn add(&mut self, variant: &str, threads: usize, r: &SysbenchResult) {
        let i = match self
            .points
            .iter()
            .position(|p| p.variant == variant && p.threads == threads)
        {
            Some(i) => i,
            None => {
                self.points.push(SysbenchPoint {
                    variant: variant.to_string(),
                    threads,
                    transactions: 0,
                    seconds: 0.0,
                    tps: 0.0,
                    p95_ms: 0.0,
                    max_ms: 0.0,
                    ignored_errors: 0,
                    slices: 0,
                });
                self.points.len() - 1
            }
        };
        let p = &mut self.points[i];
        p.p95_ms = (p.p95_ms * p.slices as f64 + r.pct_ms) / (p.slices + 1) as f64;
        p.slices += 1;
        p.transactions += r.transactions;
        p.seconds += r.seconds;
        p.tps = p.transactions as f64 / p.seconds.max(1e-9);
        p.max_ms = p.max_ms.max(r.max_ms);
        p.ignored_errors += r.ignored_errors;
    }

    /// The points, sorted by threads then in first-measured variant order.
    pub(crate) fn into_points(self) -> Vec<SysbenchPoint> {
        let mut points = self.points;
        points.sort_by_key(|p| p.threads);
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(transactions: u64, seconds: f64, pct_ms: f64, max_ms: f64) -> SysbenchResult {
        SysbenchResult {
            transactions,
            tps: transactions as f64 / seconds,
            ignored_errors: 1,
            seconds,
            pct_ms,
            max_ms,
            intervals: Vec::new(),
        }
    }

    #[test]
    fn slices_sum_into_one_point_per_variant_and_threads() {
        let mut t = Tally::default();
        t.add("a", 8, &slice(100, 1.0, 10.0, 20.0));
        t.add("b", 1, &slice(5, 1.0, 1.0, 2.0));
        t.add("a", 8, &slice(300, 1.0, 30.0, 90.0));
        let p = t.into_points();
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].variant.as_str(), p[0].threads), ("b", 1));
        let a = &p[1];
        assert_eq!((a.transactions, a.slices, a.ignored_errors), (400, 2, 2));
        assert!((a.tps - 200.0).abs() < 1e-9);
        assert!((a.p95_ms - 20.0).abs() < 1e-9);
        assert!((a.max_ms - 90.0).abs() < 1e-9);
    }
}
