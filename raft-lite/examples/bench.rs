//! A 3-node cluster in one process: durable WAL per node in a temporary directory,
//! in-process network, 128-byte proposals from N concurrent proposers on the leader.
//! Prints one JSON object per line and sweep point:
//! `{"proposers":N,"ops_per_sec":..,"p50_us":..,"p99_us":..,...}`.
//!
//! `cargo run --release -p surge-raft-lite --example bench -- --proposers 1,256 --seconds 5 --json`
//! (`--help` lists the options).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use surge_raft_lite::{
    ConfState, MemNetwork, Node, NodeOptions, Role, StateMachine, Wal, WalOptions,
};

/// Counts applied bytes; snapshots are the counter.
struct Counter {
    bytes: u64,
}

impl StateMachine for Counter {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        self.bytes += data.len() as u64;
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        Bytes::copy_from_slice(&self.bytes.to_le_bytes())
    }
    fn restore(&mut self, _index: u64, data: &[u8]) {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[..8.min(data.len())]);
        self.bytes = u64::from_le_bytes(b);
    }
}

const USAGE: &str = "\
A 3-node raft-lite cluster in one process (durable WAL per node in a temporary directory,
in-process network); N proposers on the leader each propose 128-byte entries and wait for
them to be applied.

Usage: bench [--proposers N,N,...] [--seconds S] [--json]

Options:
  --proposers LIST  comma-separated numbers of concurrent proposers, one run each
                    (default 1,16,256)
  --seconds S       measured seconds per run, after 0.5 s of warm-up (default 3)
  --json            print one JSON object per run: proposers, ops_per_sec, p50_us,
                    p99_us, committed, errors, leader_log_writes, seconds, cores,
                    payload_bytes, nodes
  -h, --help        print this help
";

struct Args {
    proposers: Vec<usize>,
    seconds: f64,
    json: bool,
}

/// What the command line asks for.
enum Command {
    Run(Args),
    Help,
}

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut a = Args {
        proposers: vec![1, 16, 256],
        seconds: 3.0,
        json: false,
    };
    let mut it = argv.into_iter();
    while let Some(x) = it.next() {
        match x.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--proposers" => {
                let v = it
                    .next()
                    .ok_or("--proposers expects a comma-separated list of numbers")?;
                a.proposers = v
                    .split(',')
                    .map(|s| s.trim().parse::<usize>().ok().filter(|n| *n > 0))
                    .collect::<Option<_>>()
                    .ok_or(format!(
                        "--proposers expects a comma-separated list of numbers above 0, got '{v}'"
                    ))?;
            }
            "--seconds" => {
                let v = it.next().ok_or("--seconds expects a number of seconds")?;
                a.seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .ok_or(format!(
                        "--seconds expects a positive number of seconds, got '{v}'"
                    ))?;
            }
            "--json" => a.json = true,
            "--bench" => {} // passed by `cargo bench`
            other => {
                return Err(format!(
                    "unknown argument '{other}' (try --help for the options)"
                ));
            }
        }
    }
    Ok(Command::Run(a))
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(a)) => a,
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

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let dirs: Vec<tempfile::TempDir> = (0..3)
        .map(|_| tempfile::tempdir())
        .collect::<Result<_, _>>()?;
    let net = MemNetwork::new(1);
    let mut nodes = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let id = i as u64 + 1;
        let mut opts = NodeOptions::new(id);
        // A shared 2-core machine can stall a thread for a while: long election timeout.
        opts.raft.election_tick = 50;
        opts.raft.heartbeat_tick = 5;
        opts.snapshot_every = 100_000;
        let wal = Wal::open(dir.path(), WalOptions::default())?;
        let node = Node::start(opts, Box::new(wal), net.clone())?;
        net.register(id, node.mailbox());
        node.add_group(
            1,
            ConfState::with_voters([1, 2, 3]),
            Box::new(Counter { bytes: 0 }),
        )?;
        nodes.push(node);
    }
    nodes[0].campaign(1)?;
    let start = Instant::now();
    loop {
        let st = nodes[0].status(1)?;
        if st.role == Role::Leader && st.applied >= 1 {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err("no leader was elected within 10 seconds".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let nodes = Arc::new(nodes);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for &n in &args.proposers {
        let stop = Arc::new(AtomicBool::new(false));
        let measuring = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for t in 0..n {
            let nodes = nodes.clone();
            let stop = stop.clone();
            let measuring = measuring.clone();
            handles.push(std::thread::spawn(move || {
                let payload = Bytes::from(vec![t as u8; 128]);
                let mut lat: Vec<u32> = Vec::new();
                let mut errors = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    let p = nodes[0].propose(1, payload.clone());
                    match p.wait_applied(Duration::from_secs(10)) {
                        Ok(_) => {
                            if measuring.load(Ordering::Relaxed) {
                                lat.push(t0.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                            }
                        }
                        Err(_) => errors += 1,
                    }
                }
                (lat, errors)
            }));
        }
        std::thread::sleep(Duration::from_millis(500)); // warm up
        let w0 = nodes[0].stats().writes;
        measuring.store(true, Ordering::Relaxed);
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs_f64(args.seconds));
        measuring.store(false, Ordering::Relaxed);
        let elapsed = t0.elapsed().as_secs_f64();
        let writes = nodes[0].stats().writes - w0;
        stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        let mut errors = 0;
        for h in handles {
            let (l, e) = h.join().map_err(|_| "a proposer thread panicked")?;
            all.extend(l);
            errors += e;
        }
        all.sort_unstable();
        let ops = all.len() as f64 / elapsed;
        let line = format!(
            "{{\"proposers\":{n},\"ops_per_sec\":{ops:.0},\"p50_us\":{},\"p99_us\":{},\"committed\":{},\"errors\":{errors},\"leader_log_writes\":{writes},\"seconds\":{elapsed:.2},\"cores\":{cores},\"payload_bytes\":128,\"nodes\":3}}",
            percentile(&all, 0.50),
            percentile(&all, 0.99),
            all.len()
        );
        if args.json {
            println!("{line}");
        } else {
            println!(
                "{n:>4} proposers: {ops:>9.0} ops/s  p50 {:>6} us  p99 {:>6} us  ({} log writes on the leader)",
                percentile(&all, 0.50),
                percentile(&all, 0.99),
                writes
            );
        }
    }
    Ok(())
}
