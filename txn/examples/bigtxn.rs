//! Small commits beside one large transaction's commit step, by binlog method: the
//! experiment behind AliSQL/MariaDB 11.7's large-transaction binlog commit by rename
//! (MDEV-32014), through the whole store.
//!
//! One coordinator (`TxnClient` with a binlog, secondaries committed in the background)
//! serves `--clients` threads committing small two-region transactions, and one large
//! transaction of `--sizes` MiB over all 16 regions. The large transaction's rows are
//! prewritten first (its binlog cache fills and spills meanwhile, as MariaDB writes rows
//! while a statement runs); the measured window opens at its commit step (commit
//! timestamp, the primary's commit, its binlog group) and lasts `--window-ms`; its
//! secondaries are committed in the background in paced batches (`ClientConfig`'s
//! `secondary_batch_keys` and `secondary_pace`, set by `--secondary-batch-keys` and
//! `--secondary-pace-ms`), inside the window or past it. Methods: `none` (no
//! large transaction), `copy` (its cache copied into the binlog under the log lock),
//! `rename` (its cache file renamed into a new binlog file). Each run uses a fresh cluster.
//!
//! Reported per (size, method): the small commits' p50/p99/max latency in the window
//! (`commit()` call to return), the max during the commit step and after it (secondaries
//! in flight), the step's duration, and the binlog's rename count; and the secondaries'
//! effect: how long they took from the commit's return until the last batch was done, how
//! many batches and how long the pauses between them, and the small commits' p99/max
//! while they were in flight (small clients keep committing until they are done, also
//! past the window).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use surge_txn::{BinlogOptions, ClientConfig, ClusterConfig, LocalCluster, TxnClient, TxnMode};

const USAGE: &str = "\
bigtxn: small commits beside a large transaction's commit step, by binlog method

USAGE:
    cargo run --release -p surge-txn --example bigtxn -- [FLAGS]

FLAGS:
    --sizes LIST      large transaction sizes in MiB, comma-separated (default 64,256)
    --methods LIST    any of none,copy,rename (default: all three)
    --clients N       threads committing small transactions (default 4)
    --window-ms N     measured window from the start of the commit step (default 2000)
    --value-kib N     value size of the large transaction's rows in KiB (default 64)
    --repeat N        runs per (size, method), interleaved; figures are the medians (default 5)
    --secondary-batch-keys N
                      keys per background commit batch of the large transaction's
                      secondaries (default: ClientConfig's, 256)
    --secondary-pace-ms N
                      pause between two such batches in ms, 0 for none (default:
                      ClientConfig's, 2)
    --json            print one JSON object per (size, method) instead of a table
    --help            print this and exit
";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    None,
    Copy,
    Rename,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::None => "none",
            Method::Copy => "copy",
            Method::Rename => "rename",
        }
    }
}

struct Args {
    sizes: Vec<u64>,
    methods: Vec<Method>,
    clients: usize,
    window: Duration,
    value_kib: usize,
    repeat: usize,
    json: bool,
    batch_keys: usize,
    pace: Option<Duration>,
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag} expects a positive number, got '{v}'"))
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        sizes: vec![64, 256],
        methods: vec![Method::None, Method::Copy, Method::Rename],
        clients: 4,
        window: Duration::from_millis(2000),
        value_kib: 64,
        repeat: 5,
        json: false,
        batch_keys: ClientConfig::default().secondary_batch_keys,
        pace: ClientConfig::default().secondary_pace,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} expects a value (see --help)"))
        };
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--json" => args.json = true,
            "--sizes" => {
                let v = value()?;
                args.sizes = v
                    .split(',')
                    .map(|s| number::<u64>("--sizes", s))
                    .collect::<Result<_, _>>()?;
                if args.sizes.contains(&0) {
                    return Err(format!(
                        "--sizes expects sizes of at least 1 MiB, got '{v}'"
                    ));
                }
            }
            "--methods" => {
                let v = value()?;
                args.methods = v
                    .split(',')
                    .map(|s| match s {
                        "none" => Ok(Method::None),
                        "copy" => Ok(Method::Copy),
                        "rename" => Ok(Method::Rename),
                        other => Err(format!(
                            "--methods expects none, copy or rename, got '{other}'"
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--clients" => args.clients = number("--clients", &value()?)?,
            "--window-ms" => args.window = Duration::from_millis(number("--window-ms", &value()?)?),
            "--value-kib" => args.value_kib = number("--value-kib", &value()?)?,
            "--repeat" => args.repeat = number("--repeat", &value()?)?,
            "--secondary-batch-keys" => {
                args.batch_keys = number("--secondary-batch-keys", &value()?)?;
            }
            "--secondary-pace-ms" => {
                let ms: u64 = number("--secondary-pace-ms", &value()?)?;
                args.pace = (ms > 0).then(|| Duration::from_millis(ms));
            }
            other => return Err(format!("unknown flag '{other}' (see --help)")),
        }
    }
    if args.clients == 0
        || args.value_kib == 0
        || args.window.is_zero()
        || args.repeat == 0
        || args.batch_keys == 0
    {
        return Err(
            "--clients, --value-kib, --window-ms, --repeat and --secondary-batch-keys \
             must be at least 1"
                .to_string(),
        );
    }
    Ok(Some(args))
}

/// One run's figures.
struct Point {
    big_mib: u64,
    method: Method,
    commits: usize,
    p50_us: u64,
    p99_us: u64,
    max_us: u64,
    step_max_us: u64,
    after_max_us: u64,
    step_ms: f64,
    prewrite_s: f64,
    renames: u64,
    /// From the large commit's return until its last secondary batch was done.
    secondaries_ms: f64,
    secondary_batches: u64,
    secondary_pause_ms: f64,
    /// Small commits started while the secondaries were in flight.
    sec_commits: usize,
    sec_p99_us: u64,
    sec_max_us: u64,
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// A key in region `r` of 16 (the cluster splits evenly on the first byte).
fn key(r: u64, name: &str) -> Vec<u8> {
    let mut k = vec![(r % 16) as u8 * 16 + 8];
    k.extend_from_slice(name.as_bytes());
    k
}

type Sample = (Instant, Duration);

/// A small-commit client: two keys in two regions, overwritten by each transaction.
fn small_client(client: TxnClient, id: u64, stop: Arc<AtomicBool>) -> Result<Vec<Sample>, String> {
    let keys = [
        key(id * 3, &format!("small-{id}-a")),
        key(id * 3 + 7, &format!("small-{id}-b")),
    ];
    let mut out = Vec::new();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut t = client
            .begin(TxnMode::Optimistic)
            .map_err(|e| format!("a small transaction could not begin: {e}"))?;
        for k in &keys {
            t.put(k, format!("{id}-{i}-{}", "x".repeat(180)).as_bytes())
                .map_err(|e| format!("a small transaction could not write: {e}"))?;
        }
        let started = Instant::now();
        t.commit()
            .map_err(|e| format!("a small transaction did not commit: {e}"))?;
        out.push((started, started.elapsed()));
        i += 1;
    }
    Ok(out)
}

fn run(args: &Args, big_mib: u64, method: Method) -> Result<Point, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let mut cc = ClusterConfig::new(dir.path().join("cluster"));
    cc.split_size = None;
    let cluster = LocalCluster::start(cc).map_err(|e| format!("the cluster did not start: {e}"))?;
    let binlog = BinlogOptions::new(dir.path().join("binlog"))
        .with_large_commit_threshold(16 << 20)
        .with_commit_by_rename(method == Method::Rename);
    let config = ClientConfig::default()
        .with_async_secondaries(true)
        .with_secondary_batch_keys(args.batch_keys)
        .with_secondary_pace(args.pace)
        .with_lock_ttl_ms(60_000)
        .with_binlog(Some(binlog));
    let client = TxnClient::open(cluster.router(), config)
        .map_err(|e| format!("the coordinator did not open its binlog: {e}"))?;

    // The large transaction's rows, before the window.
    let prewrite_start = Instant::now();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    // Rows go round-robin over the 16 regions, so three or more put the secondaries in at
    // least two regions: at least two batches, and the transaction is counted as paced.
    let mut paced = false;
    let big = if method == Method::None {
        None
    } else {
        let mut big = client
            .begin(TxnMode::Optimistic)
            .map_err(|e| format!("the large transaction could not begin: {e}"))?;
        let value = vec![b'v'; args.value_kib << 10];
        let rows = (big_mib << 20) / (value.len() as u64);
        paced = rows >= 3;
        for i in 0..rows {
            big.put(&key(i, &format!("big-{i:07}")), &value)
                .map_err(|e| format!("the large transaction could not write: {e}"))?;
        }
        Some(std::thread::spawn(move || {
            let r = big.__commit_pausing_after_prewrite(move || {
                let _ = ready_tx.send(());
                let _ = go_rx.recv();
            });
            (r, Instant::now())
        }))
    };

    let stop = Arc::new(AtomicBool::new(false));
    let smalls: Vec<_> = (0..args.clients as u64)
        .map(|id| {
            let (client, stop) = (client.clone(), Arc::clone(&stop));
            std::thread::spawn(move || small_client(client, id, stop))
        })
        .collect();
    if big.is_some() {
        ready_rx
            .recv()
            .map_err(|_| "the large transaction failed before its commit step".to_string())?;
    }
    let prewrite_s = prewrite_start.elapsed().as_secs_f64();
    // Small commits run a moment before the window opens.
    std::thread::sleep(Duration::from_millis(300));
    let window_start = Instant::now();
    let _ = go_tx.send(());
    let mut acked = window_start;
    if let Some(h) = big {
        let (r, at) = h
            .join()
            .map_err(|_| "the large transaction's thread panicked".to_string())?;
        r.map_err(|e| format!("the large transaction did not commit: {e}"))?;
        acked = at;
    }
    // The secondaries are done when the client counts its (only) paced transaction; small
    // transactions fit in one batch and are never paced. A large transaction of one batch
    // is not paced either: its secondaries went with the commit.
    let mut secondaries_done = acked;
    if paced {
        let deadline = Instant::now() + Duration::from_secs(600);
        while client.counters().secondary_paced_txns == 0 {
            if Instant::now() > deadline {
                return Err("the large transaction's secondaries took over 10 min".to_string());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        secondaries_done = Instant::now();
    }
    let window_end = window_start + args.window;
    std::thread::sleep(window_end.saturating_duration_since(Instant::now()));
    stop.store(true, Ordering::Relaxed);
    let mut samples = Vec::new();
    for h in smalls {
        samples.extend(
            h.join()
                .map_err(|_| "a small client panicked".to_string())??,
        );
    }
    let us = |d: Duration| d.as_micros() as u64;
    let in_window: Vec<&Sample> = samples
        .iter()
        .filter(|(at, _)| *at >= window_start && *at < window_end)
        .collect();
    let mut in_secondaries: Vec<u64> = samples
        .iter()
        .filter(|(at, _)| *at >= acked && *at < secondaries_done)
        .map(|(_, d)| us(*d))
        .collect();
    in_secondaries.sort_unstable();
    let counters = client.counters();
    let max_in = |from: Instant, to: Instant| {
        in_window
            .iter()
            .filter(|(at, _)| *at >= from && *at < to)
            .map(|(_, d)| us(*d))
            .max()
            .unwrap_or(0)
    };
    let mut lat: Vec<u64> = in_window.iter().map(|(_, d)| us(*d)).collect();
    lat.sort_unstable();
    let renames = client.binlog().map_or(0, |b| b.stats().renames);
    Ok(Point {
        big_mib,
        method,
        commits: lat.len(),
        p50_us: percentile(&lat, 0.50),
        p99_us: percentile(&lat, 0.99),
        max_us: lat.last().copied().unwrap_or(0),
        step_max_us: max_in(
            window_start,
            acked.max(window_start + Duration::from_micros(1)),
        ),
        after_max_us: max_in(acked, window_end),
        step_ms: (acked - window_start).as_secs_f64() * 1e3,
        prewrite_s,
        renames,
        secondaries_ms: (secondaries_done - acked).as_secs_f64() * 1e3,
        secondary_batches: counters.secondary_paced_batches,
        secondary_pause_ms: counters.secondary_pause_us as f64 / 1e3,
        sec_commits: in_secondaries.len(),
        sec_p99_us: percentile(&in_secondaries, 0.99),
        sec_max_us: in_secondaries.last().copied().unwrap_or(0),
    })
}

/// The median of each figure over `runs` (each figure on its own; renames: the smallest,
/// so one run that did not rename shows).
fn median_point(big_mib: u64, method: Method, runs: &[Point]) -> Point {
    fn med<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v[v.len() / 2]
    }
    Point {
        big_mib,
        method,
        commits: med(runs.iter().map(|r| r.commits).collect()),
        p50_us: med(runs.iter().map(|r| r.p50_us).collect()),
        p99_us: med(runs.iter().map(|r| r.p99_us).collect()),
        max_us: med(runs.iter().map(|r| r.max_us).collect()),
        step_max_us: med(runs.iter().map(|r| r.step_max_us).collect()),
        after_max_us: med(runs.iter().map(|r| r.after_max_us).collect()),
        step_ms: med(runs.iter().map(|r| r.step_ms).collect()),
        prewrite_s: med(runs.iter().map(|r| r.prewrite_s).collect()),
        renames: runs.iter().map(|r| r.renames).min().unwrap_or(0),
        secondaries_ms: med(runs.iter().map(|r| r.secondaries_ms).collect()),
        secondary_batches: med(runs.iter().map(|r| r.secondary_batches).collect()),
        secondary_pause_ms: med(runs.iter().map(|r| r.secondary_pause_ms).collect()),
        sec_commits: med(runs.iter().map(|r| r.sec_commits).collect()),
        sec_p99_us: med(runs.iter().map(|r| r.sec_p99_us).collect()),
        sec_max_us: med(runs.iter().map(|r| r.sec_max_us).collect()),
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("bigtxn: {e}.");
            return ExitCode::FAILURE;
        }
    };
    if !args.json {
        let heads = [
            ("big MiB", 8),
            ("method", 8),
            ("repeats", 7),
            ("commits", 8),
            ("p50 us", 9),
            ("p99 us", 9),
            ("max us", 10),
            ("step max us", 12),
            ("after max us", 13),
            ("step ms", 9),
            ("prewrite s", 11),
            ("renames", 7),
            ("sec ms", 8),
            ("sec batches", 11),
            ("sec pause ms", 12),
            ("sec commits", 11),
            ("sec p99 us", 10),
            ("sec max us", 10),
            ("max us of each run", 0),
        ];
        let cols: Vec<String> = heads.iter().map(|(h, w)| format!("{h:>w$}")).collect();
        println!("{}", cols.join(" "));
    }
    for &size in &args.sizes {
        let mut runs: Vec<Vec<Point>> = args.methods.iter().map(|_| Vec::new()).collect();
        for _ in 0..args.repeat {
            for (m, &method) in args.methods.iter().enumerate() {
                match run(&args, size, method) {
                    Ok(p) => runs[m].push(p),
                    Err(e) => {
                        eprintln!("bigtxn: {size} MiB by {}: {e}.", method.name());
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        for (m, &method) in args.methods.iter().enumerate() {
            let p = median_point(size, method, &runs[m]);
            let maxima: Vec<u64> = runs[m].iter().map(|r| r.max_us).collect();
            // (name, JSON value, table column width) of each figure.
            let fields: [(&str, String, usize); 19] = [
                ("big_mib", p.big_mib.to_string(), 8),
                ("method", format!("\"{}\"", p.method.name()), 8),
                ("repeats", runs[m].len().to_string(), 7),
                ("small_commits", p.commits.to_string(), 8),
                ("p50_us", p.p50_us.to_string(), 9),
                ("p99_us", p.p99_us.to_string(), 9),
                ("max_us", p.max_us.to_string(), 10),
                ("step_max_us", p.step_max_us.to_string(), 12),
                ("after_max_us", p.after_max_us.to_string(), 13),
                ("step_ms", format!("{:.2}", p.step_ms), 9),
                ("prewrite_s", format!("{:.1}", p.prewrite_s), 11),
                ("renames", p.renames.to_string(), 7),
                ("secondaries_ms", format!("{:.1}", p.secondaries_ms), 8),
                ("secondary_batches", p.secondary_batches.to_string(), 11),
                (
                    "secondary_pause_ms",
                    format!("{:.1}", p.secondary_pause_ms),
                    12,
                ),
                ("sec_small_commits", p.sec_commits.to_string(), 11),
                ("sec_p99_us", p.sec_p99_us.to_string(), 10),
                ("sec_max_us", p.sec_max_us.to_string(), 10),
                ("max_us_runs", format!("{maxima:?}").replace(' ', ""), 0),
            ];
            if args.json {
                let body: Vec<String> = fields
                    .iter()
                    .map(|(name, v, _)| format!("\"{name}\":{v}"))
                    .collect();
                println!("{{{}}}", body.join(","));
            } else {
                let cols: Vec<String> = fields
                    .iter()
                    .map(|(_, v, w)| format!("{:>w$}", v.trim_matches('"'), w = *w))
                    .collect();
                println!("{}", cols.join(" "));
            }
        }
    }
    ExitCode::SUCCESS
}
