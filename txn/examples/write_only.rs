//! The TiKV in-memory-lock write-up's experiment in key-value form: sysbench `oltp_write_only`
//! against a 3-replica `LocalCluster` (16 regions, durable WALs), comparing optimistic
//! transactions with pessimistic ones in each lock mode (sync, pipelined, in-memory) in one run.
//!
//! Each transaction does what one `oltp_write_only` event does, as key-value operations on a
//! table of `--rows` rows:
//! 1. update an indexed column: lock and rewrite row `a`, and write its index entry;
//! 2. update a non-indexed column: rewrite row `b`;
//! 3. delete row `c`, then insert it back.
//!
//! In a pessimistic transaction each write first takes a pessimistic lock on its key (where
//! the three lock modes differ); an optimistic one buffers them and finds conflicts at
//! prewrite. Run with `--help` for the flags. Prints a table, or JSON lines with `--json`.
//!
//! The workload itself (table, event, slices rotating through the modes) is
//! `surge_txn::workload`, which `surgedb bench locks` runs too; this file holds the flags and
//! the report.

use std::process::ExitCode;

use surge_txn::workload::{Measured, Schedule, WriteMode, load, measure};
use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, TxnClient};

const USAGE: &str = "\
write_only: sysbench oltp_write_only in key-value form, one mode after another in one run

USAGE:
    cargo run --release -p surge-txn --example write_only -- [FLAGS]

FLAGS:
    --clients LIST   comma-separated client counts (default 1,8,32,64)
    --seconds N      measured seconds per (mode, clients) point (default 5), taken in slices
                     of --slice seconds that rotate through the modes, so a burst of outside
                     load hits every mode alike
    --slice N        seconds of one slice (default 2)
    --warmup N       unmeasured seconds before each slice (default 0.5)
    --rows N         rows in the table (default 100000)
    --modes LIST     any of optimistic,sync,pipelined,in-memory (default: all four)
    --rounds N       run the whole rotation this many times and merge (default 1)
    --async-secondaries  commit secondary keys in the background after the primary (TiDB's
                     way); default: before commit returns
    --json           print one JSON object per (mode, clients) instead of a table
    --help           print this and exit
";

struct Args {
    clients: Vec<usize>,
    seconds: f64,
    warmup: f64,
    rows: u64,
    modes: Vec<WriteMode>,
    rounds: usize,
    slice: f64,
    json: bool,
    async_secondaries: bool,
}

fn parse_list<T>(flag: &str, v: &str, f: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    let items: Option<Vec<T>> = v.split(',').map(|s| f(s.trim())).collect();
    match items {
        Some(items) if !items.is_empty() => Ok(items),
        _ => Err(format!("{flag} expects a comma-separated list, got '{v}'")),
    }
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut a = Args {
        clients: vec![1, 8, 32, 64],
        seconds: 5.0,
        warmup: 0.5,
        rows: 100_000,
        modes: WriteMode::ALL.to_vec(),
        rounds: 1,
        slice: 2.0,
        json: false,
        async_secondaries: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        if flag == "--json" {
            a.json = true;
            continue;
        }
        if flag == "--async-secondaries" {
            a.async_secondaries = true;
            continue;
        }
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see --help)"))?;
        let num = |what: &str| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| *x >= 0.0)
                .ok_or_else(|| format!("{what} expects a non-negative number, got '{v}'"))
        };
        match flag.as_str() {
            "--clients" => {
                a.clients = parse_list("--clients", &v, |s| s.parse().ok().filter(|n| *n > 0))?
            }
            "--seconds" => a.seconds = num("--seconds")?,
            "--warmup" => a.warmup = num("--warmup")?,
            "--rows" => a.rows = num("--rows")?.max(16.0) as u64,
            "--rounds" => a.rounds = num("--rounds")?.max(1.0) as usize,
            "--slice" => a.slice = num("--slice")?.max(0.2),
            "--modes" => a.modes = parse_list("--modes", &v, WriteMode::parse)?,
            other => return Err(format!("unknown flag '{other}' (see --help)")),
        }
    }
    Ok(Some(a))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

// `ClientConfig` is becoming `#[non_exhaustive]`, which a struct literal cannot build here.
#[allow(clippy::field_reassign_with_default)]
fn run(args: &Args) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let cluster = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(16))
        .map_err(|e| format!("cluster did not start: {e}"))?;
    let client = TxnClient::new(
        cluster.router(),
        ClientConfig::default().with_async_secondaries(args.async_secondaries),
    );
    load(&client, args.rows, 8).map_err(|e| format!("loading {} rows failed: {e}", args.rows))?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    if !args.json {
        println!(
            "write_only: {} rows, 16 regions x 3 replicas (durable WALs), {cores} cores, {:.0} s per point in {:.1} s slices x {} round(s)",
            args.rows, args.seconds, args.slice, args.rounds
        );
        println!(
            "{:<11} {:>7} {:>9} {:>9} {:>9} {:>8} {:>14} {:>14} {:>10} {:>8}",
            "mode",
            "clients",
            "tps",
            "p50 us",
            "p95 us",
            "aborted",
            "raft B/txn",
            "lock raft B/txn",
            "in-mem ok",
            "in-mem full"
        );
    }
    let schedule = Schedule {
        modes: args.modes.clone(),
        seconds: args.seconds,
        slice: args.slice,
        warmup: args.warmup,
        rows: args.rows,
        rounds: args.rounds,
    };
    let mut seed = 7u64;
    for &clients in &args.clients {
        let per_mode = measure(&cluster, &client, clients, &schedule, &mut seed, &mut ())
            .map_err(|e| e.to_string())?;
        for (mode, p) in args.modes.iter().zip(per_mode) {
            print_point(args, *mode, clients, p, cores);
        }
    }
    Ok(())
}

/// One (mode, clients) point as a table row or a JSON line.
fn print_point(args: &Args, mode: WriteMode, clients: usize, mut p: Measured, cores: usize) {
    p.latencies_us.sort_unstable();
    let tps = p.tps();
    let per_txn = |b: u64| p.per_txn(b);
    let (p50, p95, p99) = (
        percentile(&p.latencies_us, 0.50),
        percentile(&p.latencies_us, 0.95),
        percentile(&p.latencies_us, 0.99),
    );
    if args.json {
        println!(
            "{{\"mode\":\"{}\",\"clients\":{},\"tps\":{:.1},\"p50_us\":{},\"p95_us\":{},\"p99_us\":{},\"committed\":{},\"aborted\":{},\"seconds\":{:.2},\"raft_bytes_per_txn\":{},\"lock_raft_bytes_per_txn\":{},\"in_memory_success\":{},\"in_memory_full\":{},\"one_pc\":{},\"cores\":{}}}",
            mode.name(),
            clients,
            tps,
            p50,
            p95,
            p99,
            p.committed,
            p.aborted,
            p.seconds,
            per_txn(p.counters.raft_bytes),
            per_txn(p.counters.lock_raft_bytes),
            p.counters.in_memory_success,
            p.counters.in_memory_full,
            p.counters.one_pc,
            cores
        );
    } else {
        println!(
            "{:<11} {:>7} {:>9.0} {:>9} {:>9} {:>8} {:>14} {:>14} {:>10} {:>8}",
            mode.name(),
            clients,
            tps,
            p50,
            p95,
            p.aborted,
            per_txn(p.counters.raft_bytes),
            per_txn(p.counters.lock_raft_bytes),
            p.counters.in_memory_success,
            p.counters.in_memory_full
        );
    }
}
