//! [`SysbenchResult`]: the figures of one `sysbench ... run`, read from its report.

use serde::Serialize;

use super::error::{SysbenchError, tail};

/// One line of sysbench's `--report-interval` output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Seconds since the run began (the end of the interval).
    pub at_s: f64,
    /// Transactions per second in the interval.
    pub tps: f64,
    /// The interval's latency percentile (the run's `--percentile`), in milliseconds.
    pub lat_ms: f64,
}

/// What one `sysbench ... run` reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SysbenchResult {
    /// Transactions sysbench counted as done (each acknowledged by the server).
    pub transactions: u64,
    /// Its transactions per second.
    pub tps: f64,
    /// Errors sysbench ignored (`--mysql-ignore-errors`: deadlocks, lock waits; each
    /// transaction rolled back and retried).
    pub ignored_errors: u64,
    /// The run's length in seconds (`total time`).
    pub seconds: f64,
    /// The run's latency percentile (`--percentile`, 95 by default), milliseconds.
    pub pct_ms: f64,
    /// The slowest transaction, milliseconds.
    pub max_ms: f64,
    /// The per-interval lines (empty without `--report-interval`).
    pub intervals: Vec<Interval>,
}

/// Reads sysbench 1.0's report.
///
/// # Errors
/// [`SysbenchError::Parse`] naming the first figure missing.
pub fn parse_sysbench(text: &str) -> Result<SysbenchResult, SysbenchError> {
    let missing = |field| SysbenchError::Parse {
        field,
        excerpt: tail(text, 600),
    };
    let (transactions, tps) =
        counted(text, "transactions:").ok_or_else(|| missing("transactions"))?;
    let ignored_errors = counted(text, "ignored errors:").map_or(0, |(n, _)| n);
    let seconds = after(text, "total time:")
        .and_then(|v| v.trim_end_matches('s').parse().ok())
        .ok_or_else(|| missing("total time"))?;
    let pct_ms = text
        .lines()
        .find(|l| l.contains("th percentile:"))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| missing("latency percentile"))?;
    let max_ms = after(text, "max:")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| missing("max latency"))?;
    let intervals = text.lines().filter_map(interval).collect();
    Ok(SysbenchResult {
        transactions,
        tps,
        ignored_errors,
        seconds,
        pct_ms,
        max_ms,
        intervals,
    })
}

/// `label   N   (R per sec.)` -> (N, R).
fn counted(text: &str, label: &str) -> Option<(u64, f64)> {
    let rest = text.lines().find_map(|l| l.trim().strip_prefix(label))?;
    let mut words = rest.split_whitespace();
    let n = words.next()?.parse().ok()?;
    let rate = words.next()?.trim_start_matches('(').parse().ok()?;
    Some((n, rate))
}

/// The first word after `label` on the first line that starts with it.
fn after<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))?
        .split_whitespace()
        .next()
}

/// `[ 3s ] thds: 4 tps: 812.00 qps: ... lat (ms,99%): 12.08 err/s: ...`.
fn interval(line: &str) -> Option<Interval> {
    let rest = line.trim().strip_prefix('[')?;
    let (at, rest) = rest.split_once(']')?;
    let at_s = at.trim().trim_end_matches('s').parse().ok()?;
    let tps = rest
        .split_once("tps:")?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let lat = rest.split_once("lat (ms,")?.1.split_once(':')?.1;
    let lat_ms = lat.split_whitespace().next()?.parse().ok()?;
    Some(Interval { at_s, tps, lat_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4
Report intermediate results every 1 second(s)

[ 1s ] thds: 4 tps: 812.57 qps: 4875.44 (r/w/o: 0.00/3250.29/1625.15) lat (ms,99%): 12.08 err/s: 0.00 reconn/s: 0.00
[ 2s ] thds: 4 tps: 790.00 qps: 4740.00 (r/w/o: 0.00/3160.00/1580.00) lat (ms,99%): 150.29 err/s: 0.00 reconn/s: 0.00
SQL statistics:
    queries performed:
        read:                            0
        write:                           6410
        other:                           3205
        total:                           9615
    transactions:                        1602   (800.55 per sec.)
    queries:                             9615   (4804.90 per sec.)
    ignored errors:                      3      (1.50 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          2.0011s
    total number of events:              1602

Latency (ms):
         min:                                    1.90
         avg:                                    4.99
         max:                                  151.02
         99th percentile:                      150.29
         sum:                                 7993.23
";

    #[test]
    fn reads_the_totals_and_the_intervals() {
        let r = parse_sysbench(REPORT).expect("parses");
        assert_eq!(r.transactions, 1602);
        assert!((r.tps - 800.55).abs() < 1e-9);
        assert_eq!(r.ignored_errors, 3);
        assert!((r.seconds - 2.0011).abs() < 1e-9);
        assert!((r.pct_ms - 150.29).abs() < 1e-9);
        assert!((r.max_ms - 151.02).abs() < 1e-9);
        assert_eq!(r.intervals.len(), 2);
        assert_eq!(
            r.intervals[1],
            Interval {
                at_s: 2.0,
                tps: 790.0,
                lat_ms: 150.29
            }
        );
    }

    #[test]
    fn a_failed_run_names_the_missing_figure() {
        let e = parse_sysbench("FATAL: unable to connect to MySQL server on host '127.0.0.1'")
            .expect_err("no report");
        assert!(e.to_string().contains("no transactions"), "{e}");
        assert!(e.to_string().contains("unable to connect"), "{e}");
    }

    #[test]
    fn a_report_without_latency_is_refused() {
        let cut = REPORT.split("Latency (ms)").next().unwrap_or_default();
        let e = parse_sysbench(cut).expect_err("cut");
        assert!(e.to_string().contains("latency percentile"), "{e}");
    }
}
