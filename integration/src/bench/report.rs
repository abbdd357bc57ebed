//! The benchmarks' tables and plot series.

use std::fmt::Write as _;

use super::bigtxn::BigTxnPoint;
use super::hotspot::HotspotPoint;
use super::locks::LocksPoint;
use super::plot::Series;

/// `bench locks` as a table: one line per (clients, mode), and each mode's TPS relative to
/// sync at the same client count.
pub fn locks_table(points: &[LocksPoint]) -> String {
    let mut t = format!(
        "{:>7} {:<10} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9} {:>8} {:>10} {:>10}\n",
        "clients",
        "mode",
        "TPS",
        "vs sync",
        "s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "aborted",
        "raft B/txn",
        "lock B/txn"
    );
    for p in points {
        let sync = points
            .iter()
            .find(|q| q.clients == p.clients && q.mode == "sync")
            .map(|q| q.tps);
        let ratio = sync.map_or(String::new(), |s| format!("{:.2}x", p.tps / s.max(1e-9)));
        let _ = writeln!(
            t,
            "{:>7} {:<10} {:>9.0} {:>9} {:>6.1} {:>9.2} {:>9.2} {:>9.2} {:>8} {:>10} {:>10}",
            p.clients,
            p.mode,
            p.tps,
            ratio,
            p.seconds,
            p.latency.p50_us as f64 / 1e3,
            p.latency.p99_us as f64 / 1e3,
            p.latency.max_us as f64 / 1e3,
            p.aborted,
            p.raft_bytes_per_txn,
            p.lock_raft_bytes_per_txn
        );
    }
    t
}

/// TPS against clients, one line per mode.
pub fn locks_series(points: &[LocksPoint]) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for p in points {
        let point = (p.clients as f64, p.tps);
        match series.iter_mut().find(|s| s.name == p.mode) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name: p.mode.to_string(),
                points: vec![point],
            }),
        }
    }
    series
}

/// `bench hotspot` as a table.
pub fn hotspot_table(points: &[HotspotPoint]) -> String {
    let mut t = format!(
        "{:>7} {:>8} {:>6} {:>12} {:>7} {:>10} {:>10}\n",
        "clients", "grouping", "s", "updates/s", "on/off", "per commit", "acked"
    );
    for p in points {
        let _ = writeln!(
            t,
            "{:>7} {:>8} {:>6.2} {:>12.0} {:>7} {:>10.1} {:>10}",
            p.clients,
            p.grouping,
            p.seconds,
            p.updates_per_s,
            p.on_off.map_or(String::new(), |r| format!("{r:.2}x")),
            p.updates_per_commit,
            p.acknowledged
        );
    }
    t
}

/// Updates/s against clients, one line for grouping off and one for on.
pub fn hotspot_series(points: &[HotspotPoint]) -> Vec<Series> {
    ["off", "on"]
        .iter()
        .map(|g| Series {
            name: format!("grouping {g}"),
            points: points
                .iter()
                .filter(|p| p.grouping == *g)
                .map(|p| (p.clients as f64, p.updates_per_s))
                .collect(),
        })
        .collect()
}

/// `bench bigtxn` as a table.
pub fn bigtxn_table(points: &[BigTxnPoint]) -> String {
    let mut t = format!(
        "{:<7} {:>7} {:>9} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>10} {:>8} {:>9}\n",
        "method",
        "big MiB",
        "prewrite",
        "commit",
        "small",
        "p50 ms",
        "p99 ms",
        "max ms",
        "max vs",
        "in flight",
        "slowest",
        "max after",
        "renames",
        "read back"
    );
    let _ = writeln!(
        t,
        "{:<7} {:>7} {:>9} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>10} {:>8} {:>9}",
        "",
        "",
        "(s)",
        "step (ms)",
        "commits",
        "",
        "",
        "",
        "none",
        "in step",
        "of them (ms)",
        "step (ms)",
        "",
        ""
    );
    let none = points.iter().find(|p| p.method == "none");
    for p in points {
        let vs = match (p.small_max_ms, none.and_then(|n| n.small_max_ms)) {
            (Some(m), Some(n)) => format!("{:.2}x", m / n.max(1e-3)),
            _ => String::new(),
        };
        let ms = |v: Option<f64>| v.map_or_else(|| "none".to_string(), |v| format!("{v:.1}"));
        // Percentiles of no commit are no figures: none started in the window.
        let pct = |us: u64| {
            if p.small_commits == 0 {
                "none".to_string()
            } else {
                format!("{:.2}", us as f64 / 1e3)
            }
        };
        let (waiting, slowest) = if p.method == "none" {
            ("-".to_string(), "-".to_string())
        } else {
            (p.small_in_step.to_string(), ms(p.small_max_in_step_ms))
        };
        let _ = writeln!(
            t,
            "{:<7} {:>7} {:>9.1} {:>10.1} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>10} {:>8} {:>9}",
            p.method,
            p.big_mib,
            p.prewrite_s,
            p.commit_step_ms,
            p.small_commits,
            pct(p.small.p50_us),
            pct(p.small.p99_us),
            p.small_max_ms
                .map_or_else(|| "none".to_string(), |v| format!("{v:.2}")),
            vs,
            waiting,
            slowest,
            ms(p.small_max_after_step_ms),
            p.renames,
            if p.read_back_ok { "ok" } else { "MISSING" }
        );
    }
    t
}

/// `p50` for 50, ..., `max` for 100: the x ticks of [`bigtxn_series`].
pub fn percentile_name(p: f64) -> String {
    if p >= 100.0 {
        "max".into()
    } else {
        format!("p{p}")
    }
}

/// Small-commit latency (ms) at p50, p95, p99 and the maximum (x = 50, 95, 99, 100), one line
/// per method; the percentiles only when some small commit started in the window, the
/// maximum when one was in flight in it.
pub fn bigtxn_series(points: &[BigTxnPoint]) -> Vec<Series> {
    points
        .iter()
        .map(|p| {
            let mut points = Vec::new();
            if p.small_commits > 0 {
                points.extend([
                    (50.0, p.small.p50_us as f64 / 1e3),
                    (95.0, p.small.p95_us as f64 / 1e3),
                    (99.0, p.small.p99_us as f64 / 1e3),
                ]);
            }
            points.extend(p.small_max_ms.map(|m| (100.0, m)));
            Series {
                name: p.method.to_string(),
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bigtxn_point(method: &'static str, in_step: u64, slowest: Option<f64>) -> BigTxnPoint {
        BigTxnPoint {
            method,
            big_mib: if method == "none" { 0 } else { 256 },
            prewrite_s: 0.0,
            commit_step_ms: 224.0,
            small_commits: 100,
            small: crate::bench::Latency::of(vec![4_000; 100]),
            small_max_ms: Some(4.0),
            small_in_step: in_step,
            small_max_in_step_ms: slowest,
            small_max_after_step_ms: Some(5.0),
            renames: 0,
            read_back_ok: true,
            mariadb_binlog_ok: None,
        }
    }

    #[test]
    fn bigtxn_table_says_none_when_no_small_commit_was_in_flight_during_the_step() {
        let table = bigtxn_table(&[
            bigtxn_point("none", 0, None),
            bigtxn_point("copy", 3, Some(229.0)),
            bigtxn_point("rename", 0, None),
        ]);
        let cells = |m: &str| {
            table
                .lines()
                .find(|l| l.starts_with(m))
                .unwrap_or_else(|| panic!("{m}: {table}"))
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        // ..., max vs none, in flight in step, slowest of them, max after step, ...
        assert_eq!(cells("copy")[9..12], ["3", "229.0", "5.0"], "{table}");
        assert_eq!(cells("rename")[9..12], ["0", "none", "5.0"], "{table}");
        assert_eq!(cells("none")[9..11], ["-", "-"], "{table}");
    }

    #[test]
    fn a_window_no_small_commit_started_in_shows_none_and_the_stalled_commit_as_its_max() {
        // A copy that outlasted the window: no small commit started in it, four were stalled
        // across it, the slowest for 2411 ms.
        let mut copy = bigtxn_point("copy", 4, Some(2411.1));
        copy.small_commits = 0;
        copy.small = crate::bench::Latency::default();
        copy.small_max_ms = Some(2411.1);
        let points = [bigtxn_point("none", 0, None), copy];
        let table = bigtxn_table(&points);
        let cells: Vec<&str> = table
            .lines()
            .find(|l| l.starts_with("copy"))
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        // method, MiB, prewrite, step, small, p50, p99, max, vs none, ...
        assert_eq!(
            cells[4..9],
            ["0", "none", "none", "2411.10", "602.77x"],
            "{table}"
        );
        let series = bigtxn_series(&points);
        assert_eq!(series[1].points, [(100.0, 2411.1)]);
        assert_eq!(series[0].points.len(), 4);
    }

    #[test]
    fn percentiles_are_named_as_the_table_names_them() {
        let names: Vec<String> = [50.0, 95.0, 99.0, 100.0]
            .into_iter()
            .map(percentile_name)
            .collect();
        assert_eq!(names, ["p50", "p95", "p99", "max"]);
    }
}
