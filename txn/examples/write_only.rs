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

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, LockMode, NodeCounters, TxnClient, TxnError, TxnMode,
};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Optimistic,
    Pessimistic(LockMode),
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Optimistic => "optimistic",
            Mode::Pessimistic(m) => m.as_str(),
        }
    }

    fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "optimistic" => Mode::Optimistic,
            "sync" => Mode::Pessimistic(LockMode::Sync),
            "pipelined" => Mode::Pessimistic(LockMode::Pipelined),
            "in-memory" | "in_memory" | "inmemory" => Mode::Pessimistic(LockMode::InMemory),
            _ => return None,
        })
    }
}

struct Args {
    clients: Vec<usize>,
    seconds: f64,
    warmup: f64,
    rows: u64,
    modes: Vec<Mode>,
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
        modes: vec![
            Mode::Optimistic,
            Mode::Pessimistic(LockMode::Sync),
            Mode::Pessimistic(LockMode::Pipelined),
            Mode::Pessimistic(LockMode::InMemory),
        ],
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
            "--modes" => a.modes = parse_list("--modes", &v, Mode::parse)?,
            other => return Err(format!("unknown flag '{other}' (see --help)")),
        }
    }
    Ok(Some(a))
}

/// Row and index keys spread over the regions (which split on the first byte).
fn row_key(id: u64) -> Vec<u8> {
    let mut k = vec![spread(id), b'r'];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

fn index_key(k: u64, id: u64) -> Vec<u8> {
    let mut key = vec![spread(k ^ 0x5555), b'i'];
    key.extend_from_slice(&k.to_be_bytes());
    key.extend_from_slice(&id.to_be_bytes());
    key
}

fn spread(x: u64) -> u8 {
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// A row: `k` then sysbench's `c` (120 bytes) and `pad` (60 bytes).
fn row_value(k: u64, salt: u64) -> Vec<u8> {
    let mut v = k.to_be_bytes().to_vec();
    v.extend(std::iter::repeat_n(b'a' + (salt % 26) as u8, 180));
    v
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Loads the table with 8 threads, 250 rows a transaction.
fn load(client: &TxnClient, rows: u64) -> Result<(), TxnError> {
    let ids: Vec<u64> = (1..=rows).collect();
    let chunks: Vec<Vec<u64>> = ids.chunks(250).map(<[u64]>::to_vec).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| -> Result<(), TxnError> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(i) else {
                            return Ok(());
                        };
                        let mut t = client.begin(TxnMode::Optimistic)?;
                        for id in chunk {
                            t.put(&row_key(*id), &row_value(*id, *id))?;
                            t.put(&index_key(*id, *id), b"")?;
                        }
                        t.commit()?;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or(Ok(())))
    })
}

/// One `oltp_write_only` event.
fn event(client: &TxnClient, mode: Mode, rng: &mut Rng, rows: u64) -> Result<(), TxnError> {
    let txn_mode = match mode {
        Mode::Optimistic => TxnMode::Optimistic,
        Mode::Pessimistic(_) => TxnMode::Pessimistic,
    };
    let mut t = client.begin(txn_mode)?;
    let written = (|| {
        let a = 1 + rng.next() % rows;
        let b = 1 + rng.next() % rows;
        let c = 1 + rng.next() % rows;
        let row = t.get_for_update(&row_key(a))?;
        let k = row
            .as_deref()
            .and_then(|v| v.get(..8))
            .and_then(|b| b.try_into().ok())
            .map_or(a, u64::from_be_bytes);
        t.put(&row_key(a), &row_value(k + 1, rng.next()))?;
        t.put(&index_key(k + 1, a), b"")?;
        t.put(&row_key(b), &row_value(b, rng.next()))?;
        t.delete(&row_key(c))?;
        t.put(&row_key(c), &row_value(c, rng.next()))
    })();
    match written {
        Ok(()) => t.commit().map(|_| ()),
        Err(e) => {
            t.rollback();
            Err(e)
        }
    }
}

struct Point {
    mode: Mode,
    clients: usize,
    seconds: f64,
    committed: u64,
    aborted: u64,
    latencies_us: Vec<u64>,
    counters: NodeCounters,
}

#[allow(clippy::too_many_arguments)] // one benchmark point's settings
fn run_point(
    cluster: &LocalCluster,
    client: &TxnClient,
    mode: Mode,
    clients: usize,
    warmup: f64,
    seconds: f64,
    rows: u64,
    seed: u64,
) -> Point {
    if let Mode::Pessimistic(m) = mode {
        cluster.set_lock_mode(m);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let client = client.clone();
            let stop = stop.clone();
            let measuring = measuring.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(seed ^ (i as u64 + 1).wrapping_mul(0x1234_5678_9abc));
                let (mut ok, mut failed, mut lat) = (0u64, 0u64, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let r = event(&client, mode, &mut rng, rows);
                    if measuring.load(Ordering::Relaxed) {
                        match r {
                            Ok(()) => {
                                ok += 1;
                                lat.push(t0.elapsed().as_micros() as u64);
                            }
                            Err(_) => failed += 1,
                        }
                    }
                }
                (ok, failed, lat)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(warmup));
    let before = cluster.counters();
    let t0 = Instant::now();
    measuring.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs_f64(seconds));
    measuring.store(false, Ordering::SeqCst);
    let elapsed = t0.elapsed().as_secs_f64();
    let after = cluster.counters();
    stop.store(true, Ordering::SeqCst);
    let mut p = Point {
        mode,
        clients,
        seconds: elapsed,
        committed: 0,
        aborted: 0,
        latencies_us: Vec::new(),
        counters: after.since(&before),
    };
    for t in threads {
        if let Ok((ok, failed, lat)) = t.join() {
            p.committed += ok;
            p.aborted += failed;
            p.latencies_us.extend(lat);
        }
    }
    p
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn merge(points: Vec<Point>) -> Point {
    let mut it = points.into_iter();
    let Some(mut first) = it.next() else {
        unreachable!("merge of no points")
    };
    for p in it {
        first.seconds += p.seconds;
        first.committed += p.committed;
        first.aborted += p.aborted;
        first.latencies_us.extend(p.latencies_us);
        first.counters = first.counters.add(&p.counters);
    }
    first
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

fn run(args: &Args) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let cluster = LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(16))
        .map_err(|e| format!("cluster did not start: {e}"))?;
    let client = TxnClient::new(
        cluster.router(),
        ClientConfig {
            async_secondaries: args.async_secondaries,
            ..ClientConfig::default()
        },
    );
    load(&client, args.rows).map_err(|e| format!("loading {} rows failed: {e}", args.rows))?;
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
    let mut seed = 7u64;
    for &clients in &args.clients {
        let mut per_mode: Vec<Vec<Point>> = args.modes.iter().map(|_| Vec::new()).collect();
        let slices = ((args.seconds / args.slice).ceil() as usize).max(1);
        let slice_seconds = args.seconds / slices as f64;
        for round in 0..args.rounds * slices {
            // Alternate the order each slice so no mode always runs on a warmer cluster.
            let order: Vec<usize> = if round % 2 == 0 {
                (0..args.modes.len()).collect()
            } else {
                (0..args.modes.len()).rev().collect()
            };
            for i in order {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                per_mode[i].push(run_point(
                    &cluster,
                    &client,
                    args.modes[i],
                    clients,
                    args.warmup,
                    slice_seconds,
                    args.rows,
                    seed,
                ));
            }
        }
        for points in per_mode {
            let mut p = merge(points);
            p.latencies_us.sort_unstable();
            let tps = p.committed as f64 / p.seconds.max(1e-9);
            let per_txn = |b: u64| b.checked_div(p.committed).unwrap_or(0);
            let (p50, p95, p99) = (
                percentile(&p.latencies_us, 0.50),
                percentile(&p.latencies_us, 0.95),
                percentile(&p.latencies_us, 0.99),
            );
            if args.json {
                println!(
                    "{{\"mode\":\"{}\",\"clients\":{},\"tps\":{:.1},\"p50_us\":{},\"p95_us\":{},\"p99_us\":{},\"committed\":{},\"aborted\":{},\"seconds\":{:.2},\"raft_bytes_per_txn\":{},\"lock_raft_bytes_per_txn\":{},\"in_memory_success\":{},\"in_memory_full\":{},\"one_pc\":{},\"cores\":{}}}",
                    p.mode.name(),
                    p.clients,
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
                    p.mode.name(),
                    p.clients,
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
    }
    Ok(())
}
