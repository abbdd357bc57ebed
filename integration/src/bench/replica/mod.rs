//! `surgedb bench replica`: what the replica stream costs and how far a MariaDB replica
//! lags, under sysbench `oltp_write_only` (issue 21's figures).
//!
//! Five runs of the same load, each on node 1's MySQL port of a fresh 3-node cluster (a
//! cluster's first seconds: with the stream, its records make a region split sooner as it
//! ages, see "Longer runs" in the README), every data region's leadership handed to one
//! node after the prepare (`leaders_on`, node 1 by default: the node sysbench talks to;
//! the meta group, which holds the timestamp oracle, stays where it was elected):
//! 1. **no stream**: nodes started with `--no-stream` (no stream records, no follower): the
//!    cluster as it was before the replica stream;
//! 2. **records only**: `--no-stream-follower` (records written, no node following them):
//!    the records' own cost;
//! 3. **stream**: the default (records written, every node following), no replica;
//! 4. **stream + reader**: the stream while the stock `mariadb-binlog
//!    --read-from-remote-server --raw --stop-never` reads node 1's stream into files: what
//!    serving a replica costs the cluster, without a replica's apply on the same cores;
//! 5. **stream + replica**: the stream with a private MariaDB 10.11 replica attached
//!    (`surgedb cluster start --replica`'s), while a probe measures the lag: every
//!    `probe_every` it updates one row through node 2 and times from the acknowledgement
//!    to the new value being visible on the replica.
//!
//! Reported: the five TPS and their ratios, the three nodes' CPU time per committed
//! transaction in each run (on a CPU-bound machine the stream's cost per transaction;
//! often steadier from run to run than the TPS, not always: both move with the machine),
//! the lag's p50/p99, the cluster's commit rate
//! against the rate the replica applied GTIDs during run 5, and how long the replica took
//! to reach the stream's end once the load stopped.

mod probe;
mod reader;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Latency;
use super::sysbench::{Endpoint, SysbenchError, SysbenchResult, move_leaders};
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
    /// How many times the five runs are repeated (medians reported; at least 1).
    pub rounds: usize,
    /// Arguments given to every node of every cluster, after the variant's own (e.g.
    /// `--stream-round-ms=50`).
    pub node_args: Vec<String>,
    /// Hand every region's leadership to this node after the prepare (default node 1, the
    /// one sysbench talks to; `None` leaves them where the bootstrap put them). A fresh
    /// cluster's leaders all sit on node 1 or node 2 depending on which won the first
    /// election, and with node 2 leading every statement of node 1's sessions crosses
    /// TCP: runs compared that way measured the leader's place as much as the stream.
    pub leaders_on: Option<u64>,
}

impl ReplicaBenchOptions {
    /// 32 threads, 20 s runs, 4 tables of 10,000 rows, a probe every 100 ms, one round.
    pub fn new(surgedb_exe: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> ReplicaBenchOptions {
        ReplicaBenchOptions {
            surgedb_exe: surgedb_exe.into(),
            dir: dir.into(),
            threads: 32,
            seconds: 20,
            tables: 4,
            table_size: 10_000,
            probe_every: Duration::from_millis(100),
            rounds: 1,
            node_args: Vec::new(),
            leaders_on: Some(1),
        }
    }
}

/// The figures.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaBenchReport {
    /// sysbench threads.
    pub threads: usize,
    /// The node every region's leadership was handed to before each run (`None`: left
    /// where the bootstrap put them).
    pub leaders_on: Option<u64>,
    /// TPS without the stream (`--no-stream`).
    pub tps_no_stream: f64,
    /// TPS with the stream records written but no node following them
    /// (`--no-stream-follower`): the records' own cost.
    pub tps_records_only: f64,
    /// TPS with the stream, no replica.
    pub tps_stream: f64,
    /// TPS with the stream read by `mariadb-binlog` (served, not applied).
    pub tps_reader: f64,
    /// Bytes `mariadb-binlog` saved during that run (the last round's; it first caught up
    /// with the stream of the schema and the prepare, not counted).
    pub reader_bytes: u64,
    /// Cores `mariadb-binlog` kept busy during that run (`None` without `/proc`).
    pub reader_cores: Option<f64>,
    /// TPS with the stream and a replica attached.
    pub tps_replica: f64,
    /// Every round's five TPS, in the order of the fields above (the TPS fields are their
    /// medians).
    pub rounds: Vec<[f64; 5]>,
    /// Every round's five CPU costs: the three node processes' CPU time during the run
    /// (user and system, from `/proc`) per transaction sysbench committed, in microseconds
    /// (0 without `/proc`). On a CPU-bound machine this is what the stream costs the
    /// cluster per transaction; it is often steadier from run to run than the TPS, though
    /// not always (a slower run also spends more per transaction).
    pub rounds_cpu_us: Vec<[f64; 5]>,
    /// Lag from a commit's acknowledgement to its row on the replica (every round's
    /// replica run).
    pub lag: Latency,
    /// Probes measured.
    pub probes: usize,
    /// Probes that were not visible within 30 s (counted, not in `lag`; every round).
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
        let base = self.tps_no_stream.max(f64::MIN_POSITIVE);
        let medians = [
            self.tps_no_stream,
            self.tps_records_only,
            self.tps_stream,
            self.tps_reader,
            self.tps_replica,
        ];
        let mut out = format!(
            "oltp_write_only, {} threads, node 1's MySQL port, {}, {} round(s), medians:\n\
             | run | TPS | vs no stream | each round | nodes' CPU per txn (µs) | vs no stream | each round |\n\
             |---|---:|---:|---|---:|---:|---|\n",
            self.threads,
            match self.leaders_on {
                Some(n) => format!("leaders on node {n}"),
                None => "leaders where the bootstrap put them".to_string(),
            },
            self.rounds.len()
        );
        let cpu = |v: usize| median_of(self.rounds_cpu_us.iter().map(|row| row[v]).collect());
        let cpu_base = cpu(0).max(f64::MIN_POSITIVE);
        for (v, tps) in medians.iter().enumerate() {
            let r = tps / base;
            let cost = if v == 0 {
                String::new()
            } else {
                format!(" ({:+.1}% cost)", (1.0 - r) * 100.0)
            };
            let each: Vec<String> = self
                .rounds
                .iter()
                .map(|row| format!("{:.0}", row[v]))
                .collect();
            let each_cpu: Vec<String> = self
                .rounds_cpu_us
                .iter()
                .map(|row| format!("{:.0}", row[v]))
                .collect();
            out.push_str(&format!(
                "| {} | {tps:.1} | {r:.2}x{cost} | {} | {:.0} | {:.2}x | {} |\n",
                VARIANT_NAMES[v],
                each.join(", "),
                cpu(v),
                cpu(v) / cpu_base,
                each_cpu.join(", ")
            ));
        }
        out.push_str(&format!(
            "\nreplica lag (acknowledged on SurgeDB -> visible on the replica), {} probes: \
             p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms{}\n\
             last round: cluster commits {:.1}/s, replica applied {:.1} GTIDs/s ({:.2}x); \
             caught up {} ms after the load stopped{}\n\
             last round: mariadb-binlog saved {:.1} MB of stream{}\n",
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
            self.reader_bytes as f64 / 1e6,
            self.reader_cores
                .map(|c| format!(", keeping {c:.2} cores busy"))
                .unwrap_or_default(),
        ));
        out
    }
}

/// Stops a cluster (and its replica) when dropped, whatever happened, then removes its
/// data (the nodes' and the replica's data directories, the reader's files), keeping the
/// logs: a bench of many rounds would otherwise fill the disk.
struct Guard(PathBuf);

impl Drop for Guard {
    fn drop(&mut self) {
        crate::local::stop_replica(&self.0, Duration::from_secs(30));
        let _ = crate::local::stop(&self.0, Duration::from_secs(60));
        let data_dirs = std::fs::read_dir(&self.0)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                e.path().is_dir() && (name.starts_with("node-") || name == "reader")
            })
            .map(|e| e.path())
            .chain([self.0.join("replica").join("data")]);
        for dir in data_dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
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
        .with_node_args(
            args.iter()
                .map(|s| (*s).to_string())
                .chain(opts.node_args.iter().cloned())
                .collect(),
        )
        .with_ready_timeout(Duration::from_secs(120));
    let guard = Guard(dir.clone());
    let (manifest, _) =
        crate::local::start(&dir, 3, &start).map_err(|e| setup("the SurgeDB cluster", e))?;
    Ok((guard, manifest))
}

/// sysbench's prepare on cluster `name`, then its leaders moved (`opts.leaders_on`).
fn prepare(opts: &ReplicaBenchOptions, name: &str, ep: &Endpoint) -> Result<(), SysbenchError> {
    ep.sql("DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest")?;
    let mut args = sysbench_args(opts, "prepare");
    args.retain(|a| !a.starts_with("--time"));
    ep.sysbench_quiet("sbtest", &args)?;
    match opts.leaders_on {
        Some(to) => move_leaders(&opts.dir.join(name), to),
        None => Ok(()),
    }
}

/// The five variants, in the order of the table.
const VARIANTS: usize = 5;

/// A sysbench run's TPS and what it cost the cluster's nodes.
#[derive(Debug, Clone, Copy)]
struct Load {
    tps: f64,
    /// The nodes' CPU microseconds per committed transaction (`None` without `/proc`).
    cpu_us_per_txn: Option<f64>,
}

/// The three nodes' CPU seconds so far (`None` when a node's cannot be read).
fn nodes_cpu(manifest: &ClusterManifest) -> Option<f64> {
    manifest
        .nodes
        .iter()
        .map(|n| crate::local::cpu_seconds(n.pid))
        .sum()
}

/// Runs sysbench's `oltp_write_only` on `ep` and measures the nodes' CPU meanwhile.
fn measured_run(
    opts: &ReplicaBenchOptions,
    manifest: &ClusterManifest,
    ep: &Endpoint,
) -> Result<Load, SysbenchError> {
    let before = nodes_cpu(manifest);
    let run = ep.sysbench("sbtest", &sysbench_args(opts, "run"))?;
    Ok(load_of(&run, before, nodes_cpu(manifest)))
}

/// A sysbench run's TPS, and the nodes' CPU seconds before and after it over the
/// transactions it committed.
fn load_of(run: &SysbenchResult, before: Option<f64>, after: Option<f64>) -> Load {
    let txns = run.transactions as f64;
    Load {
        tps: run.tps,
        cpu_us_per_txn: before
            .zip(after)
            .filter(|_| txns > 0.0)
            .map(|(a, b)| (b - a) * 1e6 / txns),
    }
}

/// What the replica run measured besides its TPS.
struct ReplicaRun {
    load: Load,
    lags: Vec<u64>,
    lost: usize,
    commits_per_s: f64,
    replica_gtids_per_s: f64,
    catch_up_ms: u64,
    replica_cores: Option<f64>,
}

/// What the reader run measured besides its TPS.
struct ReaderRun {
    load: Load,
    bytes: u64,
    cores: Option<f64>,
}

/// Runs the five runs (see the module docs) [`ReplicaBenchOptions::rounds`] times, each
/// round starting one variant later than the one before (so no variant always runs first
/// or last on a machine that warms up or fills up), each run on a fresh cluster named for
/// its round and variant. The TPS reported are the medians of the rounds; the lag is over
/// every round's probes; the replica's rates and cores are the last round's.
///
/// # Errors
/// [`SysbenchError`] naming the step that failed; clusters and the replica are stopped.
pub fn run_replica_bench(
    opts: &ReplicaBenchOptions,
    progress: &mut dyn Progress,
) -> Result<ReplicaBenchReport, SysbenchError> {
    // Before any run: a missing tool would otherwise show only after the runs before it.
    reader::check_installed()?;
    let rounds = opts.rounds.max(1);
    let mut tps: Vec<[f64; VARIANTS]> = Vec::new();
    let mut cpu_us: Vec<[f64; VARIANTS]> = Vec::new();
    let (mut lags, mut lost) = (Vec::new(), 0usize);
    let mut last_replica = None;
    let mut last_reader = None;
    for round in 0..rounds {
        let mut row = [0.0; VARIANTS];
        let mut cpu_row = [0.0; VARIANTS];
        for k in 0..VARIANTS {
            let v = (round + k) % VARIANTS;
            let name = format!("{round}-{v}");
            progress.message(&format!(
                "round {} of {rounds}: {}",
                round + 1,
                VARIANT_NAMES[v]
            ));
            let run = match v {
                0 => alone(opts, &name, &["--no-stream"])?,
                1 => alone(opts, &name, &["--no-stream-follower"])?,
                2 => alone(opts, &name, &[])?,
                3 => {
                    let r = reader_run(opts, &name)?;
                    let t = r.load;
                    last_reader = Some(r);
                    t
                }
                _ => {
                    let mut r = replica_run(opts, &name)?;
                    lags.append(&mut r.lags);
                    lost += r.lost;
                    let t = r.load;
                    last_replica = Some(r);
                    t
                }
            };
            row[v] = run.tps;
            cpu_row[v] = run.cpu_us_per_txn.unwrap_or(0.0);
            progress.step();
        }
        tps.push(row);
        cpu_us.push(cpu_row);
    }
    let median = |v: usize| median_of(tps.iter().map(|row| row[v]).collect());
    let (replica, reader) = match (last_replica, last_reader) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(setup("the benchmark", "no round ran")),
    };
    Ok(ReplicaBenchReport {
        threads: opts.threads,
        leaders_on: opts.leaders_on,
        tps_no_stream: median(0),
        tps_records_only: median(1),
        tps_stream: median(2),
        tps_reader: median(3),
        reader_bytes: reader.bytes,
        reader_cores: reader.cores,
        tps_replica: median(4),
        rounds: tps,
        rounds_cpu_us: cpu_us,
        probes: lags.len(),
        probes_lost: lost,
        lag: Latency::of(lags),
        commits_per_s: replica.commits_per_s,
        replica_gtids_per_s: replica.replica_gtids_per_s,
        catch_up_ms: replica.catch_up_ms,
        replica_cores: replica.replica_cores,
    })
}

/// The median of `xs` (the mean of the two middle values for an even count; 0 when empty).
fn median_of(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => 0.0,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The table's names of the variants.
const VARIANT_NAMES: [&str; VARIANTS] = [
    "no stream (`--no-stream`)",
    "records only (`--no-stream-follower`)",
    "stream, no replica",
    "stream + `mariadb-binlog` reading it",
    "stream + MariaDB replica",
];

/// One run on a fresh cluster `name` started with `args`: its TPS and CPU cost.
fn alone(opts: &ReplicaBenchOptions, name: &str, args: &[&str]) -> Result<Load, SysbenchError> {
    let (_g, manifest) = start_cluster(opts, name, args)?;
    let ep = endpoint(&manifest, 1)?;
    prepare(opts, name, &ep)?;
    measured_run(opts, &manifest, &ep)
}

/// One run on a fresh cluster `name` while `mariadb-binlog` reads node 1's stream.
fn reader_run(opts: &ReplicaBenchOptions, name: &str) -> Result<ReaderRun, SysbenchError> {
    let (_g, manifest) = start_cluster(opts, name, &[])?;
    let ep = endpoint(&manifest, 1)?;
    prepare(opts, name, &ep)?;
    let dir = opts.dir.join(name);
    let mut reader = reader::BinlogReader::start(
        &ep,
        &dir.join("reader"),
        &dir.join("reader.log"),
        &crate::stream::StreamConfig::file_name(1),
    )?;
    // The schema's and the prepare's stream first, so the run times the reader following
    // the load, not catching up.
    let stream_dir = manifest
        .node(1)
        .map(|n| n.data.join(crate::server::STREAM_SUBDIR))
        .ok_or_else(|| setup("the cluster", "no node 1"))?;
    reader.wait_caught_up(&stream_dir, Duration::from_secs(120))?;
    let bytes_before = reader.bytes();
    let cpu_before = crate::local::cpu_seconds(reader.pid());
    let t0 = Instant::now();
    let load = measured_run(opts, &manifest, &ep)?;
    let cores = cpu_before
        .zip(crate::local::cpu_seconds(reader.pid()))
        .map(|(a, b)| (b - a) / t0.elapsed().as_secs_f64().max(f64::MIN_POSITIVE));
    let bytes = reader.bytes().saturating_sub(bytes_before);
    reader.stop()?;
    Ok(ReaderRun { load, bytes, cores })
}

/// One run on a fresh cluster `name` with a MariaDB replica attached and the lag probed.
fn replica_run(opts: &ReplicaBenchOptions, name: &str) -> Result<ReplicaRun, SysbenchError> {
    let (_g, manifest) = start_cluster(opts, name, &[])?;
    let ep = endpoint(&manifest, 1)?;
    prepare(opts, name, &ep)?;
    let dir = opts.dir.join(name);
    let replica =
        crate::local::start_replica(&dir, &manifest).map_err(|e| setup("the replica", e))?;
    let probe_ep = endpoint(&manifest, 2)?;
    let mut probe = probe::Probe::start(&probe_ep, replica.port)?;
    // The replica first replays the history (schema, prepare).
    probe.wait_replica_at(&probe_ep, Duration::from_secs(600))?;
    let stop = Arc::new(AtomicBool::new(false));
    let gtid_before = probe.replica_seq()?;
    let cpu_before = crate::local::cpu_seconds(replica.pid);
    let nodes_before = nodes_cpu(&manifest);
    let t0 = Instant::now();
    let stop2 = stop.clone();
    let every = opts.probe_every;
    let prober = std::thread::spawn(move || {
        let samples = probe.run(&stop2, every);
        (probe, samples)
    });
    let run = ep.sysbench("sbtest", &sysbench_args(opts, "run"));
    let nodes_after = nodes_cpu(&manifest);
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
    Ok(ReplicaRun {
        load: load_of(&run, nodes_before, nodes_after),
        lost: samples.iter().filter(|s| s.is_none()).count(),
        lags: samples.iter().flatten().copied().collect(),
        commits_per_s: run.tps + samples.len() as f64 / elapsed.max(f64::MIN_POSITIVE),
        replica_gtids_per_s: gtid_after.saturating_sub(gtid_before) as f64
            / elapsed.max(f64::MIN_POSITIVE),
        catch_up_ms,
        replica_cores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median_of(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_of(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median_of(vec![7.0]), 7.0);
        assert_eq!(median_of(Vec::new()), 0.0);
    }

    #[test]
    fn the_table_shows_medians_ratios_and_every_round() {
        let report = ReplicaBenchReport {
            threads: 32,
            leaders_on: Some(1),
            tps_no_stream: 800.0,
            tps_records_only: 760.0,
            tps_stream: 720.0,
            tps_reader: 700.0,
            reader_bytes: 25_000_000,
            reader_cores: Some(0.02),
            tps_replica: 640.0,
            rounds: vec![
                [800.0, 760.0, 720.0, 700.0, 640.0],
                [700.0, 900.0, 650.0, 690.0, 600.0],
            ],
            rounds_cpu_us: vec![
                [1000.0, 1050.0, 1100.0, 1150.0, 1200.0],
                [1000.0, 1050.0, 1100.0, 1150.0, 1300.0],
            ],
            lag: Latency::of(vec![50_000, 60_000]),
            probes: 2,
            probes_lost: 0,
            commits_per_s: 650.0,
            replica_gtids_per_s: 645.0,
            catch_up_ms: 30,
            replica_cores: Some(0.15),
        };
        let text = report.text();
        assert!(text.contains("leaders on node 1, 2 round(s)"), "{text}");
        assert!(
            text.contains(
                "| stream + MariaDB replica | 640.0 | 0.80x (+20.0% cost) | 640, 600 | 1250 | 1.25x | 1200, 1300 |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| no stream (`--no-stream`) | 800.0 | 1.00x | 800, 700 | 1000 | 1.00x | 1000, 1000 |"),
            "{text}"
        );
        assert!(
            text.contains("saved 25.0 MB of stream, keeping 0.02 cores busy"),
            "{text}"
        );
    }
}
