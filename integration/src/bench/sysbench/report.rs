//! `bench sysbench`'s tables and plot series.

use std::fmt::Write as _;

use super::big_update::BigUpdatePoint;
use super::tally::SysbenchPoint;
use crate::bench::Series;

/// 000 or 004 as a table: one line per (threads, variant) with TPS relative to `base`
/// (the variant the write-up compares against) at the same threads.
pub fn sysbench_table(points: &[SysbenchPoint], base: &str) -> String {
    // Raft bytes per transaction only where a point has them (SurgeDB in 000).
    let raft = points.iter().any(|p| p.raft_bytes.is_some());
    let mut t = format!(
        "{:>7} {:<12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6}",
        "threads", "variant", "TPS", "vs base", "p95 ms", "max ms", "txns", "ign.err", "s"
    );
    if raft {
        let _ = write!(t, " {:>14} {:>14}", "lock Raft B/tx", "Raft B/tx");
    }
    t.push('\n');
    let bytes = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
    for p in points {
        let b = points
            .iter()
            .find(|q| q.threads == p.threads && q.variant == base)
            .map(|q| q.tps);
        let ratio = b.map_or(String::new(), |b| format!("{:.2}x", p.tps / b.max(1e-9)));
        let _ = write!(
            t,
            "{:>7} {:<12} {:>10.1} {:>9} {:>9.2} {:>9.2} {:>9} {:>8} {:>6.1}",
            p.threads,
            p.variant,
            p.tps,
            ratio,
            p.p95_ms,
            p.max_ms,
            p.transactions,
            p.ignored_errors,
            p.seconds
        );
        if raft {
            let _ = write!(
                t,
                " {:>14} {:>14}",
                bytes(p.lock_raft_bytes_per_txn()),
                bytes(p.raft_bytes_per_txn())
            );
        }
        t.push('\n');
    }
    t
}

/// 003 as a table, each size's latency relative to the same server's run alone.
pub fn big_update_table(points: &[BigUpdatePoint]) -> String {
    let mut t = format!(
        "{:<17} {:>8} {:>9} {:>9} {:>6} {:>9} {:>8} {:>9} {:>9} {:>9} {:>8}\n",
        "server",
        "size MiB",
        "binlogMiB",
        "rows",
        "bigs",
        "big ms",
        "TPS",
        "max ms",
        "p99 worst",
        "p99 med",
        "max/alone"
    );
    for p in points {
        let alone = points
            .iter()
            .find(|q| q.variant == p.variant && q.size_mib == 0)
            .map(|q| q.max_ms);
        let ratio = alone.map_or(String::new(), |a| format!("{:.2}x", p.max_ms / a.max(1e-9)));
        let _ = writeln!(
            t,
            "{:<17} {:>8} {:>9.1} {:>9} {:>6} {:>9.0} {:>8.1} {:>9.2} {:>9.2} {:>9.2} {:>8}",
            p.variant,
            p.size_mib,
            p.binlog_mib,
            p.rows,
            p.big_commits,
            p.big_ms,
            p.tps,
            p.max_ms,
            p.p99_worst_ms,
            p.p99_median_ms,
            ratio
        );
    }
    t
}

/// `y` against threads, one line per variant.
pub fn sysbench_series(points: &[SysbenchPoint], y: fn(&SysbenchPoint) -> f64) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for p in points {
        let point = (p.threads as f64, y(p));
        match series.iter_mut().find(|s| s.name == p.variant) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name: p.variant.clone(),
                points: vec![point],
            }),
        }
    }
    series
}

/// Sysbench's max latency against the big transaction's size (0: alone), one line per
/// server: the write-up's plot.
pub fn big_update_series(points: &[BigUpdatePoint]) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for p in points {
        let point = (p.size_mib as f64, p.max_ms);
        match series.iter_mut().find(|s| s.name == p.variant) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name: p.variant.clone(),
                points: vec![point],
            }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// An x tick of the 003 plot: `alone` or the size.
pub fn size_label(mib: f64) -> String {
    if mib == 0.0 {
        "alone".into()
    } else {
        format!("{mib:.0} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(variant: &str, threads: usize, tps: f64) -> SysbenchPoint {
        SysbenchPoint {
            variant: variant.into(),
            threads,
            transactions: tps as u64,
            seconds: 1.0,
            tps,
            p95_ms: 1.0,
            max_ms: 2.0,
            ignored_errors: 0,
            lock_raft_bytes: None,
            raft_bytes: None,
            raft_transactions: 0,
            slices: 1,
        }
    }

    #[test]
    fn tables_give_each_variant_relative_to_the_base_at_the_same_threads() {
        let pts = [
            point("pessimistic", 32, 100.0),
            point("in-memory", 32, 150.0),
            point("in-memory", 1, 10.0),
        ];
        let t = sysbench_table(&pts, "pessimistic");
        assert!(t.lines().nth(2).is_some_and(|l| l.contains("1.50x")), "{t}");
        let s = sysbench_series(&pts, |p| p.tps);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].points, vec![(32.0, 150.0), (1.0, 10.0)]);
        assert_eq!(size_label(0.0), "alone");
        assert_eq!(size_label(64.0), "64 MiB");
    }
}
