//! A 3-node cluster in one process: durable WAL per node in a temporary directory,
//! in-process network, 128-byte proposals from N concurrent proposers on the leader.
//! Prints one JSON object per line and sweep point:
//! `{"proposers":N,"ops_per_sec":..,"p50_us":..,"p99_us":..,...}`.
//!
//! `cargo run --release -p surge-raft-lite --example bench -- --proposers 1,256 --seconds 5 --json`

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

struct Args {
    proposers: Vec<usize>,
    seconds: f64,
    json: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        proposers: vec![1, 16, 256],
        seconds: 3.0,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--proposers" => {
                let v = it.next().ok_or("--proposers needs a list")?;
                a.proposers = v
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--proposers: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                a.seconds = v.parse().map_err(|e| format!("--seconds: {e}"))?;
            }
            "--json" => a.json = true,
            "--bench" => {} // passed by `cargo bench`
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
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
            return Err("no leader after 10 s".into());
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
            let (l, e) = h.join().map_err(|_| "proposer panicked")?;
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
