//! `surgedb bench locks|hotspot|bigtxn`: runs a benchmark with a progress bar on standard
//! error, then prints its table (or JSON) and draws its plot.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::bench::{
    self, BenchError, BenchTarget, BigTxnOptions, HotspotOptions, LocksOptions, Plot, Progress,
    Series, XAxis, YAxis,
};

/// How a benchmark's results are written.
#[derive(Debug, Clone, Default)]
pub struct BenchOutput {
    /// One JSON document instead of the table.
    pub json: bool,
    /// Draw the plot into this SVG file.
    pub plot: Option<PathBuf>,
}

/// A progress bar on standard error (hidden when it is not a terminal).
pub(super) struct Bar(ProgressBar);

impl Bar {
    pub(super) fn new(steps: u64) -> Bar {
        let bar = ProgressBar::new(steps);
        if let Ok(style) = ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Bar(bar)
    }
}

impl Progress for Bar {
    fn message(&mut self, text: &str) {
        self.0.set_message(text.to_string());
    }

    fn step(&mut self) {
        self.0.inc(1);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

#[derive(Serialize)]
struct JsonReport<'a, P: Serialize> {
    bench: &'static str,
    runs_on: &'a str,
    seconds: f64,
    points: &'a [P],
}

/// Prints `points` as JSON or as `header`, `table` and `summary`, and draws the plot.
#[allow(clippy::too_many_arguments)] // one report's parts, each used once
fn report<P: Serialize>(
    out: &mut impl Write,
    output: &BenchOutput,
    bench: &'static str,
    runs_on: &str,
    begun: Instant,
    points: &[P],
    text: [String; 2],
    plot: Plot,
) -> Result<(), String> {
    let seconds = begun.elapsed().as_secs_f64();
    let io = |e: std::io::Error| format!("cannot write the report: {e}");
    if output.json {
        let doc = JsonReport {
            bench,
            runs_on,
            seconds,
            points,
        };
        let json = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        writeln!(out, "{json}").map_err(io)?;
    } else {
        let [table, summary] = text;
        write!(out, "{table}").map_err(io)?;
        writeln!(out, "{summary}").map_err(io)?;
        writeln!(out, "(whole run: {seconds:.1} s)").map_err(io)?;
    }
    if let Some(path) = &output.plot {
        bench::plot_svg(path, &plot).map_err(|e| e.to_string())?;
        if !output.json {
            writeln!(out, "plot: {}", path.display()).map_err(io)?;
        }
    }
    Ok(())
}

/// A [`Plot`] of `series`.
fn plot(title: &str, x: &str, y: &str, axes: (XAxis, YAxis), series: Vec<Series>) -> Plot {
    Plot {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        x_axis: axes.0,
        y_axis: axes.1,
        series,
    }
}

fn text(e: BenchError) -> String {
    e.to_string()
}

/// `surgedb bench locks` against `target`.
///
/// # Errors
/// The benchmark's error, or a failure to write the report.
pub fn bench_locks(
    target: &BenchTarget,
    opts: &LocksOptions,
    output: &BenchOutput,
    out: &mut impl Write,
) -> Result<(), String> {
    let begun = Instant::now();
    let runs_on = target.describe();
    if !output.json {
        let _ = writeln!(
            out,
            "bench locks: sysbench oltp_write_only as key-value transactions on {} rows \
             (TiKV 6.0's in-memory pessimistic locks write-up)\non {runs_on}\n{:.1} s \
             measured per point in slices of {:.1} s rotating through the modes, {:.1} s \
             warmup per slice",
            opts.rows, opts.seconds, opts.slice, opts.warmup
        );
    }
    let mut bar = Bar::new(opts.steps());
    let points = bench::run_locks(target, opts, &mut bar).map_err(text)?;
    drop(bar);
    let most = opts.clients.iter().copied().max().unwrap_or(0);
    let tps = |mode: &str| {
        points
            .iter()
            .find(|p| p.clients == most && p.mode == mode)
            .map(|p| p.tps)
    };
    let summary = match (tps("in-memory"), tps("sync")) {
        (Some(m), Some(s)) => format!(
            "Shows: at {most} clients in-memory locks ran {m:.0} TPS, {:.2}x sync's {s:.0} TPS \
             (lock records no longer go through Raft: see lock B/txn).",
            m / s.max(1e-9)
        ),
        _ => String::from("Shows: TPS per lock mode (run with sync and in-memory to compare)."),
    };
    report(
        out,
        output,
        "locks",
        &runs_on,
        begun,
        &points,
        [bench::locks_table(&points), summary],
        plot(
            "oltp_write_only TPS by lock mode",
            "clients (log2 scale)",
            "committed transactions/s",
            (XAxis::Log2, YAxis::Linear),
            bench::locks_series(&points),
        ),
    )
}

/// `surgedb bench hotspot`: through `surge-txn` against `target`, or with `target` `None` on
/// `surge-hotspot` alone in a scratch directory under `dir` (the system's when `None`).
///
/// # Errors
/// The benchmark's error, or a failure to write the report.
pub fn bench_hotspot(
    target: Option<&BenchTarget>,
    dir: Option<&Path>,
    opts: &HotspotOptions,
    output: &BenchOutput,
    out: &mut impl Write,
) -> Result<(), String> {
    let begun = Instant::now();
    let runs_on = match target {
        Some(t) => format!(
            "surge-txn on {}: grouping on = TxnClient::hot_update (a group takes one \
             pessimistic lock and commits in one single-key 1PC); off = each client's own \
             pessimistic transaction (get_for_update, put, commit)",
            t.describe()
        ),
        None => "surge-hotspot alone in this process: one counter row, every update appended \
                 to a file and fdatasynced"
            .to_string(),
    };
    if !output.json {
        let _ = writeln!(
            out,
            "bench hotspot: AliSQL hot-row group commit, one hot row, grouping off vs on\non \
             {runs_on}\n{:.1} s measured per client count and mode, in slices off, on, on, off",
            opts.seconds
        );
    }
    let run = match target {
        Some(t) => {
            let mut bar = Bar::new(bench::hot_txn_steps(opts.clients.len()));
            bench::run_hot_txn(t, &opts.clients, opts.seconds, &mut bar)
        }
        None => {
            let scratch = scratch(dir)?;
            let mut bar = Bar::new(opts.steps());
            bench::run_hotspot(scratch.path(), opts, &mut bar)
        }
    }
    .map_err(text)?;
    let points = run.points;
    let ratio = |n: usize| {
        points
            .iter()
            .find(|p| p.clients == n && p.on_off.is_some())
            .and_then(|p| p.on_off)
    };
    let (least, most) = (
        opts.clients.iter().copied().min().unwrap_or(0),
        opts.clients.iter().copied().max().unwrap_or(0),
    );
    let summary = match (ratio(least), ratio(most)) {
        (Some(a), Some(b)) => format!(
            "Shows: grouping on vs off: {b:.1}x the updates/s at {most} clients (a group shares \
             one durable commit), {a:.2}x at {least}.\nCheck: {}.",
            run.check
        ),
        _ => String::from("Shows: updates/s with grouping off and on."),
    };
    report(
        out,
        output,
        "hotspot",
        &runs_on,
        begun,
        &points,
        [bench::hotspot_table(&points), summary],
        plot(
            "hot-row updates/s, grouping off vs on",
            "clients (log2 scale)",
            "updates/s (log scale)",
            (XAxis::Log2, YAxis::Log10),
            bench::hotspot_series(&points),
        ),
    )
}

/// `surgedb bench bigtxn` through `surge-txn`: on a fresh embedded cluster per run when
/// `target` is `None`, else on `target`; binlogs in a scratch directory under `dir` (the
/// system's when `None`).
///
/// # Errors
/// The benchmark's error, or a failure to write the report.
pub fn bench_bigtxn(
    target: Option<&BenchTarget>,
    dir: Option<&Path>,
    opts: &BigTxnOptions,
    output: &BenchOutput,
    out: &mut impl Write,
) -> Result<(), String> {
    let begun = Instant::now();
    let scratch = scratch(dir)?;
    let cluster = match target {
        Some(t @ BenchTarget::Remote { .. }) => t.describe(),
        _ => "a fresh embedded 3-node cluster per run (surge-txn LocalCluster, 16 regions x 3 \
              replicas, durable WALs)"
            .to_string(),
    };
    let runs_on = format!(
        "surge-txn on {cluster}: one coordinator (TxnClient with its binlog, secondaries \
         committed in the background) serves {} threads of two-row transactions and the big \
         transaction, whose rows are prewritten before the window",
        opts.clients
    );
    if !output.json {
        let _ = writeln!(
            out,
            "bench bigtxn: AliSQL / MariaDB 11.7 large-transaction binlog commit by rename, \
             small commits beside a {} MiB transaction's commit step: none vs copy vs rename\n\
             on {runs_on}\neach run: the window of {} ms opens at the commit step; {} round(s)",
            opts.mib, opts.window_ms, opts.rounds
        );
    }
    let mut bar = Bar::new(opts.steps());
    let points = bench::run_bigtxn(scratch.path(), target, opts, &mut bar).map_err(text)?;
    drop(bar);
    let max = |m: &str| {
        points
            .iter()
            .find(|p| p.method == m)
            .and_then(|p| p.small_max_ms)
    };
    let in_step = |m: &str| {
        points
            .iter()
            .find(|p| p.method == m)
            .map(|p| match p.small_max_in_step_ms {
                Some(ms) => format!("{ms:.1} ms"),
                None => "none in flight".to_string(),
            })
    };
    let summary = match (max("none"), max("copy"), max("rename")) {
        (Some(n), Some(c), Some(r)) => format!(
            "Shows: during the commit step the slowest small commit in flight took {} beside \
             the rename and {} beside the copy (the copy writes the whole cache under the \
             binlog's log lock); over the window the slowest took {r:.1} ms beside the rename \
             ({:.2}x none's {n:.1} ms) and {c:.1} ms beside the copy ({:.2}x).",
            in_step("rename").unwrap_or_default(),
            in_step("copy").unwrap_or_default(),
            r / n.max(1e-6),
            c / n.max(1e-6)
        ),
        _ => String::from("Shows: small-commit latency beside a big commit."),
    };
    report(
        out,
        output,
        "bigtxn",
        &runs_on,
        begun,
        &points,
        [bench::bigtxn_table(&points), summary],
        plot(
            "small-commit latency beside a big transaction's commit step",
            "small commits in the window: percentile",
            "ms (log scale)",
            (XAxis::Ranked(bench::percentile_name), YAxis::Log10),
            bench::bigtxn_series(&points),
        ),
    )
}

fn scratch(dir: Option<&Path>) -> Result<tempfile::TempDir, String> {
    match dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .map_err(|e| format!("cannot create a scratch directory: {e}"))
}
