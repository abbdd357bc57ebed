//! `surgedb bench replica`: what the replica stream costs and how far a MariaDB replica
//! lags, under sysbench `oltp_write_only` (issue 21's figures).
//!
//! Four runs of the same load, each on node 1's MySQL port of a fresh 3-node cluster:
//! 1. **no stream**: nodes started with `--no-stream` (no stream records, no follower): the
//!    cluster as it was before the replica stream;
//! 2. **records only**: `--no-stream-follower` (records written, no node following them):
//!    the records' own cost;
//! 3. **stream**: the default (records written, every node following), no replica;
//! 4. **stream + replica**: the same cluster with a private MariaDB 10.11 replica attached
//!    (`surgedb cluster start --replica`'s), while a probe measures the lag: every
//!    `probe_every` it updates one row through node 2 and times from the acknowledgement
//!    to the new value being visible on the replica.
//!
//! Reported: the four TPS and their ratios, the lag's p50/p99, the cluster's commit rate
//! against the rate the replica applied GTIDs during run 4, and how long the replica took
//! to reach the stream's end once the load stopped.

mod probe;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Latency;
use super::sysbench::{Endpoint, SysbenchError};
use crate::bench::Progress;
use crate::local::{ClusterManifest, StartOptions};

pub use probe::gtid_seq;

/// What to run.
#[derive(Debug, Clone)]
pub struct ReplicaBenchOptions {
    /// The `surgedb` executable that runs the nodes.
    pub surgedb_exe: PathBuf,
    /// Scratch directory (clusters `a/` and `b/` are made in it).
    pub dir: PathBuf,
    /// sysbench threads.
    pub threads: usize,
    /// Seconds per run.
    pub seconds: u64,
    /// `--tables`.
    pub tables: usize,
    /// `--table-size`.
    pub table_size: usize,
    /// Pause between two lag probes.
    pub probe_every: Duration,
}

impl ReplicaBenchOptions {
    /// 32 threads, 20 s runs, 4 tables of 10,000 rows, a probe every 100 ms.
    pub fn new(surgedb_exe: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> ReplicaBenchOptions {
        ReplicaBenchOptions {
            surgedb_exe: surgedb_exe.into(),
            dir: dir.into(),
            threads: 32,
            seconds: 20,
            tables: 4,
            table_size: 10_000,
            probe_every: Duration::from_millis(100),
        }
    }
}

/// The figures.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaBenchReport {
    /// sysbench threads.
    pub threads: usize,
    /// TPS without the stream (`--no-stream`).
    pub tps_no_stream: f64,
    /// TPS with the stream records written but no node following them
    /// (`--no-stream-follower`): the records' own cost.
    pub tps_records_only: f64,
    /// TPS with the stream, no replica.
    pub tps_stream: f64,
    /// TPS with the stream and a replica attached.
    pub tps_replica: f64,
    /// Lag from a commit's acknowledgement to its row on the replica (last run).
    pub lag: Latency,
    /// Probes measured.
    pub probes: usize,
    /// Probes that were not visible within 30 s (counted, not in `lag`).
    pub probes_lost: usize,
    /// The cluster's commits per second in the last run (sysbench's and the probe's).
    pub commits_per_s: f64,
    /// GTIDs per second the replica applied during the last run.
    pub replica_gtids_per_s: f64,
    /// After the last run's load stopped: milliseconds until the replica reached the stream's end.
    pub catch_up_ms: u64,
    /// Cores the replica's `mariadbd` kept busy during the last run (CPU seconds over wall
    /// seconds; `None` without `/proc`): what it took from the cluster on a shared machine.
    pub replica_cores: Option<f64>,
}

impl ReplicaBenchReport {
    /// The report as the README's table, with ratios.
    pub fn text(&self) -> String {
        let pct = |x: f64| (1.0 - x) * 100.0;
        let r2 = self.tps_stream / self.tps_no_stream.max(f64::MIN_POSITIVE);
        let r3 = self.tps_replica / self.tps_no_stream.max(f64::MIN_POSITIVE);
        let r1 = self.tps_records_only / self.tps_no_stream.max(f64::MIN_POSITIVE);
        format!(
            "oltp_write_only, {} threads, node 1's MySQL port:\n\
             | run | TPS | vs no stream |\n|---|---:|---:|\n\
             | no stream (`--no-stream`) | {:.1} | 1.00x |\n\
             | records only (`--no-stream-follower`) | {:.1} | {r1:.2}x ({:+.1}% cost) |\n\
             | stream, no replica | {:.1} | {r2:.2}x ({:+.1}% cost) |\n\
             | stream + MariaDB replica | {:.1} | {r3:.2}x ({:+.1}% cost) |\n\n\
             replica lag (acknowledged on SurgeDB -> visible on the replica), {} probes: \
             p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms{}\n\
             cluster commits {:.1}/s, replica applied {:.1} GTIDs/s ({:.2}x); \
             caught up {} ms after the load stopped{}\n",
            self.threads,
            self.tps_no_stream,
            self.tps_records_only,
            pct(r1),
            self.tps_stream,
            pct(r2),
            self.tps_replica,
            pct(r3),
            self.probes,
            self.lag.p50_us as f64 / 1000.0,
            self.lag.p99_us as f64 / 1000.0,
            self.lag.max_us as f64 / 1000.0,
            if self.probes_lost > 0 {
                format!(" ({} probes not seen within 30 s)", self.probes_lost)
            } else {
                String::new()
            },
            self.commits_per_s,
            self.replica_gtids_per_s,
            self.replica_gtids_per_s / self.commits_per_s.max(f64::MIN_POSITIVE),
            self.catch_up_ms,
            self.replica_cores
                .map(|c| format!("; the replica's mariadbd kept {c:.2} cores busy meanwhile"))
                .unwrap_or_default(),
        )
    }
}

/// Stops a cluster (and its replica) when dropped, whatever happened.
struct Guard(PathBuf);

impl Drop for Guard {
    fn drop(&mut self) {
        crate::local::stop_replica(&self.0, Duration::from_secs(30));
        let _ = crate::local::stop(&self.0, Duration::from_secs(60));
    }
}

fn setup(what: &str, detail: impl ToString) -> SysbenchError {
    SysbenchError::Setup {
        what: what.into(),
        detail: detail.to_string(),
    }
}

fn endpoint(manifest: &ClusterManifest, node: u64) -> Result<Endpoint, SysbenchError> {
    let addr = manifest
        .node(node)
        .and_then(|n| n.mysql_addr.clone())
        .ok_or_else(|| setup("the cluster", format!("node {node} has no MySQL port")))?;
    Endpoint::parse(&format!("surgedb node {node}"), &addr)
}

fn sysbench_args(opts: &ReplicaBenchOptions, command: &str) -> Vec<String> {
    vec![
        format!("--tables={}", opts.tables),
        format!("--table-size={}", opts.table_size),
        format!("--threads={}", opts.threads),
        format!("--time={}", opts.seconds),
        "oltp_write_only".into(),
        command.into(),
    ]
}

fn start_cluster(
    opts: &ReplicaBenchOptions,
    name: &str,
    args: &[&str],
) -> Result<(Guard, ClusterManifest), SysbenchError> {
    let dir = opts.dir.join(name);
    let start = StartOptions::new(&opts.surgedb_exe)
        .with_node_args(args.iter().map(|s| (*s).to_string()).collect())
        .with_ready_timeout(Duration::from_secs(120));
    let guard = Guard(dir.clone());
    let (manifest, _) =
        crate::local::start(&dir, 3, &start).map_err(|e| setup("the SurgeDB cluster", e))?;
    Ok((guard, manifest))
}

fn prepare(opts: &ReplicaBenchOptions, ep: &Endpoint) -> Result<(), SysbenchError> {
    ep.sql("DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest")?;
    let mut args = sysbench_args(opts, "prepare");
    args.retain(|a| !a.starts_with("--time"));
    ep.sysbench_quiet("sbtest", &args)
}

/// Runs the three runs (see the module docs).
///
/// # Errors
/// [`SysbenchError`] naming the step that failed; clusters and the replica are stopped.
pub fn run_replica_bench(
    opts: &ReplicaBenchOptions,
    progress: &mut dyn Progress,
) -> Result<ReplicaBenchReport, SysbenchError> {
    let alone = |name: &str, args: &[&str]| -> Result<f64, SysbenchError> {
        let (_g, manifest) = start_cluster(opts, name, args)?;
        let ep = endpoint(&manifest, 1)?;
        prepare(opts, &ep)?;
        Ok(ep.sysbench("sbtest", &sysbench_args(opts, "run"))?.tps)
    };
    progress.message("run 1: a cluster without the stream");
    let tps_no_stream = alone("a", &["--no-stream"])?;
    progress.step();
    progress.message("run 1b: stream records written, no node following them");
    let tps_records_only = alone("r", &["--no-stream-follower"])?;
    progress.step();
    progress.message("run 2: a cluster with the stream, no replica");
    let (_g, manifest) = start_cluster(opts, "b", &[])?;
    let ep = endpoint(&manifest, 1)?;
    prepare(opts, &ep)?;
    let tps_stream = ep.sysbench("sbtest", &sysbench_args(opts, "run"))?.tps;
    progress.step();

    progress.message("run 3: the same cluster with a MariaDB replica attached");
    let dir = opts.dir.join("b");
    let replica =
        crate::local::start_replica(&dir, &manifest).map_err(|e| setup("the replica", e))?;
    let probe_ep = endpoint(&manifest, 2)?;
    let mut probe = probe::Probe::start(&probe_ep, replica.port)?;
    // The replica first replays the history (schema, prepare, run 2).
    probe.wait_replica_at(&probe_ep, Duration::from_secs(600))?;
    let stop = Arc::new(AtomicBool::new(false));
    let gtid_before = probe.replica_seq()?;
    let cpu_before = crate::local::cpu_seconds(replica.pid);
    let t0 = Instant::now();
    let stop2 = stop.clone();
    let every = opts.probe_every;
    let prober = std::thread::spawn(move || {
        let samples = probe.run(&stop2, every);
        (probe, samples)
    });
    let run = ep.sysbench("sbtest", &sysbench_args(opts, "run"));
    stop.store(true, Ordering::SeqCst);
    let elapsed = t0.elapsed().as_secs_f64();
    let replica_cores = cpu_before
        .zip(crate::local::cpu_seconds(replica.pid))
        .map(|(a, b)| (b - a) / elapsed.max(f64::MIN_POSITIVE));
    let (mut probe, samples) = prober
        .join()
        .map_err(|_| setup("the lag probe", "its thread panicked"))?;
    let samples = samples?;
    let run = run?;
    let gtid_after = probe.replica_seq()?;
    let stopped = Instant::now();
    probe.wait_replica_at(&probe_ep, Duration::from_secs(600))?;
    let catch_up_ms = stopped.elapsed().as_millis() as u64;
    progress.step();
    let lost = samples.iter().filter(|s| s.is_none()).count();
    let lags: Vec<u64> = samples.iter().flatten().copied().collect();
    Ok(ReplicaBenchReport {
        threads: opts.threads,
        tps_no_stream,
        tps_records_only,
        tps_stream,
        tps_replica: run.tps,
        probes: lags.len(),
        probes_lost: lost,
        lag: Latency::of(lags),
        commits_per_s: run.tps + samples.len() as f64 / elapsed.max(f64::MIN_POSITIVE),
        replica_gtids_per_s: gtid_after.saturating_sub(gtid_before) as f64
            / elapsed.max(f64::MIN_POSITIVE),
        catch_up_ms,
        replica_cores,
    })
}
