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
    /// Raft bytes proposed for pessimistic locks over all slices, every node's summed
    /// (SurgeDB only: its `Pessimistic_lock_raft_bytes` status before and after each slice).
    pub lock_raft_bytes: Option<u64>,
    /// Raft bytes proposed in all (the `Raft_bytes` status), as `lock_raft_bytes`.
    pub raft_bytes: Option<u64>,
    /// Transactions of the slices whose Raft bytes are known (a slice during which the
    /// set of nodes answering changed has none).
    pub raft_transactions: u64,
}

impl SysbenchPoint {
    /// `lock_raft_bytes` per acknowledged transaction (of the slices that have them).
    pub fn lock_raft_bytes_per_txn(&self) -> Option<f64> {
        self.lock_raft_bytes
            .map(|b| b as f64 / self.raft_transactions.max(1) as f64)
    }

    /// `raft_bytes` per acknowledged transaction (of the slices that have them).
    pub fn raft_bytes_per_txn(&self) -> Option<f64> {
        self.raft_bytes
            .map(|b| b as f64 / self.raft_transactions.max(1) as f64)
    }
}

/// What one slice cost in Raft bytes (SurgeDB's cluster counters, after minus before).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RaftBytes {
    /// Bytes proposed for pessimistic locks.
    pub(crate) locks: u64,
    /// Bytes proposed in all.
    pub(crate) all: u64,
}

/// Points being summed, in first-measured order.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    points: Vec<SysbenchPoint>,
}

impl Tally {
    /// Adds one slice of `variant` at `threads`.
    pub(crate) fn add(&mut self, variant: &str, threads: usize, r: &SysbenchResult) {
        self.add_with_raft(variant, threads, r, None);
    }

    /// Adds one slice of `variant` at `threads` with the Raft bytes it cost (`None`: not
    /// known, as for MariaDB).
    pub(crate) fn add_with_raft(
        &mut self,
        variant: &str,
        threads: usize,
        r: &SysbenchResult,
        raft: Option<RaftBytes>,
    ) {
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
                    lock_raft_bytes: None,
                    raft_bytes: None,
                    raft_transactions: 0,
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
        if let Some(b) = raft {
            p.lock_raft_bytes = Some(p.lock_raft_bytes.unwrap_or(0) + b.locks);
            p.raft_bytes = Some(p.raft_bytes.unwrap_or(0) + b.all);
            p.raft_transactions += r.transactions;
        }
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
        assert_eq!(a.lock_raft_bytes_per_txn(), None);
    }

    #[test]
    fn raft_bytes_sum_over_slices_and_divide_by_transactions() {
        let mut t = Tally::default();
        let b = |locks, all| Some(RaftBytes { locks, all });
        t.add_with_raft("sync", 8, &slice(100, 1.0, 10.0, 20.0), b(30_000, 90_000));
        t.add_with_raft("sync", 8, &slice(300, 1.0, 10.0, 20.0), b(10_000, 70_000));
        t.add_with_raft("in-memory", 8, &slice(200, 1.0, 10.0, 20.0), b(0, 50_000));
        // A slice without figures (a node stopped answering) counts in TPS, not per txn.
        t.add_with_raft("in-memory", 8, &slice(999, 1.0, 10.0, 20.0), None);
        let p = t.into_points();
        assert_eq!(p[0].lock_raft_bytes_per_txn(), Some(100.0));
        assert_eq!(p[0].raft_bytes_per_txn(), Some(400.0));
        assert_eq!(p[1].lock_raft_bytes_per_txn(), Some(0.0));
        assert_eq!(p[1].raft_bytes_per_txn(), Some(250.0));
    }
}
