//! `surgedb bench sysbench`: runs [`run_sysbench`] with a progress bar, then prints the
//! machine's figures, one table per experiment (or one JSON document) and draws a plot per
//! experiment.

use crate::bench::replica::{self as surgedb_replica, run_replica_bench};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::bench::sysbench::{
    HOTSPOT_OFF, HOTSPOT_ON, OltpReport, SysbenchOptions, SysbenchPoint, SysbenchReport,
    big_update_series, big_update_table, run_sysbench, size_label, sysbench_series, sysbench_table,
};
use crate::bench::{Plot, XAxis, YAxis, plot_svg};

use super::bench_run::Bar;

/// `surgedb bench sysbench`: runs `opts`, prints the report (`json`: one JSON document)
/// and, with `plot_dir`, writes `sysbench-000-locks.svg`, `sysbench-003-bigtxn.svg` and
/// `sysbench-004-hot-row.svg` there.
///
/// # Errors
/// The benchmark's error, or a failure to write the report or a plot.
pub fn bench_sysbench(
    opts: &SysbenchOptions,
    json: bool,
    plot_dir: Option<&Path>,
    out: &mut impl Write,
) -> Result<(), String> {
    // Before the run, so that a directory that cannot be made fails in a second, not after
    // the whole benchmark.
    if let Some(dir) = plot_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the plot directory {}: {e}", dir.display()))?;
    }
    let mut bar = Bar::new(opts.steps());
    let report = run_sysbench(opts, &mut bar).map_err(|e| e.to_string())?;
    drop(bar);
    let io = |e: std::io::Error| format!("cannot write the report: {e}");
    if json {
        let doc = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        writeln!(out, "{doc}").map_err(io)?;
    } else {
        write!(out, "{}", text(&report)).map_err(io)?;
    }
    if let Some(dir) = plot_dir {
        for (name, plot) in plots(&report) {
            let path: PathBuf = dir.join(name);
            plot_svg(&path, &plot).map_err(|e| e.to_string())?;
            if !json {
                writeln!(out, "plot: {}", path.display()).map_err(io)?;
            }
        }
    }
    Ok(())
}

/// `surgedb bench replica`: runs [`run_replica_bench`] and prints its table (or JSON).
///
/// # Errors
/// The benchmark's error, as text.
pub fn bench_replica(
    opts: &surgedb_replica::ReplicaBenchOptions,
    json: bool,
    out: &mut impl Write,
) -> Result<(), String> {
    let mut bar = Bar::new(5 * opts.rounds.max(1) as u64);
    let report = run_replica_bench(opts, &mut bar).map_err(|e| e.to_string())?;
    drop(bar);
    let io = |e: std::io::Error| format!("cannot write the report: {e}");
    if json {
        let doc = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        writeln!(out, "{doc}").map_err(io)
    } else {
        write!(out, "{}", report.text()).map_err(io)
    }
}

/// The report as text: machine, tables, the write-ups' ratios.
pub fn text(r: &SysbenchReport) -> String {
    let mut t = format!("{}\n", r.machine.describe());
    if !r.locks.is_empty() {
        t.push_str(
            "\n000 in-memory pessimistic locks: sysbench oltp_write_only (vs base: pessimistic)\n",
        );
        t.push_str(&sysbench_table(&r.locks, "pessimistic"));
        for threads in distinct_threads(&r.locks) {
            let at = |v: &str| find(&r.locks, v, threads);
            if let (Some(m), Some(s)) = (at("in-memory"), at("pessimistic")) {
                t.push_str(&format!(
                    "  {threads} threads: in-memory / pessimistic TPS {:.2}x (write-up: >= 1.3x), p95 {:.2}x (write-up: <= 0.85x)\n",
                    m.tps / s.tps.max(1e-9),
                    m.p95_ms / s.p95_ms.max(1e-9)
                ));
                if let (Some(mb), Some(sb)) =
                    (m.lock_raft_bytes_per_txn(), s.lock_raft_bytes_per_txn())
                {
                    t.push_str(&format!(
                        "  {threads} threads: Raft bytes for locks per transaction: in-memory {mb:.0}, pessimistic {sb:.0}\n"
                    ));
                }
            }
        }
    }
    if !r.big.is_empty() {
        t.push_str("\n003 large transactions: sysbench oltp_write_only beside a big UPDATE every few seconds\n");
        t.push_str(&big_update_table(&r.big));
    }
    if !r.hot.is_empty() {
        t.push_str("\n004 hot row: the hinted UPDATE of one row (vs base: hotspot OFF)\n");
        t.push_str(&sysbench_table(&r.hot, HOTSPOT_OFF));
        for threads in distinct_threads(&r.hot) {
            let at = |v: &str| find(&r.hot, v, threads);
            if let Some(on) = at(HOTSPOT_ON) {
                let mut line = format!("  {threads} threads: hotspot ON");
                if let Some(off) = at(HOTSPOT_OFF) {
                    line.push_str(&format!(" = {:.2}x OFF", on.tps / off.tps.max(1e-9)));
                }
                if let Some(m) = at("mariadb") {
                    line.push_str(&format!(", {:.2}x MariaDB", on.tps / m.tps.max(1e-9)));
                }
                t.push_str(&line);
                t.push('\n');
            }
        }
    }
    if !r.oltp.point_select.is_empty() {
        t.push_str(&oltp_text(&r.oltp));
    }
    t.push_str(&format!(
        "\nbinlog files verified with mariadb-binlog --verify-binlog-checksum: {}\n",
        r.verified_binlogs.len()
    ));
    t
}

/// The OLTP side-by-side: both tables (TPS relative to MariaDB's), SurgeDB / MariaDB
/// against the front end's targets (`integration/README.md`), and where the tables'
/// leaders were.
fn oltp_text(o: &OltpReport) -> String {
    let mut t = String::new();
    for (title, points, target) in [
        (
            "oltp_point_select (one SELECT per transaction: TPS = QPS)",
            &o.point_select,
            0.5,
        ),
        ("oltp_write_only", &o.write_only, 0.6),
    ] {
        t.push_str(&format!("\noltp: sysbench {title} (vs base: mariadb)\n"));
        t.push_str(&sysbench_table(points, "mariadb"));
        let at = |v: &str| points.iter().find(|p| p.variant == v);
        if let (Some(s), Some(m)) = (at("surgedb"), at("mariadb")) {
            let ratio = s.tps / m.tps.max(1e-9);
            t.push_str(&format!(
                "  {} threads: SurgeDB / MariaDB {ratio:.2}x (target >= {target}x: {})\n",
                s.threads,
                if ratio >= target { "met" } else { "not met" }
            ));
        }
    }
    let shares: Vec<String> = o
        .leaders
        .iter()
        .map(|l| format!("{} r{}: {}/{}", l.workload, l.round, l.local, l.regions))
        .collect();
    t.push_str(&format!(
        "  sbtest regions led by node 1 (sysbench's node) at the start of each SurgeDB slice: {}\n",
        shares.join(", ")
    ));
    t
}

fn distinct_threads(points: &[SysbenchPoint]) -> Vec<usize> {
    let mut v: Vec<usize> = points.iter().map(|p| p.threads).collect();
    v.dedup();
    v
}

fn find<'a>(
    points: &'a [SysbenchPoint],
    variant: &str,
    threads: usize,
) -> Option<&'a SysbenchPoint> {
    points
        .iter()
        .find(|p| p.variant == variant && p.threads == threads)
}

/// One plot per experiment that ran, with its file name.
fn plots(r: &SysbenchReport) -> Vec<(&'static str, Plot)> {
    let mut v = Vec::new();
    if !r.locks.is_empty() {
        v.push((
            "sysbench-000-locks.svg",
            Plot {
                title: "000 sysbench oltp_write_only: TPS by lock mode".into(),
                x_label: "sysbench threads".into(),
                y_label: "transactions/s".into(),
                x_axis: XAxis::Log2,
                y_axis: YAxis::Log10,
                series: sysbench_series(&r.locks, |p| p.tps),
            },
        ));
    }
    if !r.big.is_empty() {
        v.push((
            "sysbench-003-bigtxn.svg",
            Plot {
                title: "003 sysbench max latency beside a big transaction".into(),
                x_label: "big transaction's binlog size".into(),
                y_label: "sysbench max latency (ms)".into(),
                x_axis: XAxis::Ranked(size_label),
                y_axis: YAxis::Log10,
                series: big_update_series(&r.big),
            },
        ));
    }
    if !r.hot.is_empty() {
        v.push((
            "sysbench-004-hot-row.svg",
            Plot {
                title: "004 sysbench hot-row UPDATE: TPS".into(),
                x_label: "sysbench threads".into(),
                y_label: "transactions/s".into(),
                x_axis: XAxis::Log2,
                y_axis: YAxis::Log10,
                series: sysbench_series(&r.hot, |p| p.tps),
            },
        ));
    }
    v
}
