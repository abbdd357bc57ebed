//! What stream records cost a coordinator, and how far behind a stream follower runs.
//!
//! A 3-replica `LocalCluster` (16 regions, durable WALs, in-memory pessimistic locks) and
//! two coordinators with binlogs, one writing stream records and one not, run the
//! `oltp_write_only` event (`surge_txn::workload`) in alternating slices with the same
//! number of client threads, so outside load hits both alike. Meanwhile a follower takes a
//! watermark and scans the stream in a loop; for each streamed transaction it notes how
//! long after its commit was acknowledged it was delivered.
//!
//! ```text
//! cargo run --release -p surge-txn --example stream_cost -- [CLIENTS] [SECONDS] [SLICES] [POLL_MS]
//! ```
//! (defaults 16 clients, 10 measured seconds per variant, 4 slices per variant, the
//! follower pausing 10 ms between rounds)

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use surge_txn::workload::{Rng, event, load};
use surge_txn::{
    BinlogOptions, ClientConfig, ClusterConfig, LocalCluster, LockMode, StreamOptions, TxnClient,
    TxnMode,
};

const ROWS: u64 = 20_000;

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs `clients` threads of events on `client` for `seconds`; returns the latencies (µs)
/// of the commits, and records each commit's start_ts with its acknowledgement time.
fn slice(
    client: &TxnClient,
    clients: usize,
    seconds: f64,
    seed: u64,
    acked: &Mutex<HashMap<u64, Instant>>,
) -> (Vec<u64>, u64) {
    let stop = AtomicBool::new(false);
    let aborted = Mutex::new(0u64);
    let lat = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for i in 0..clients as u64 {
            let (stop, aborted, lat) = (&stop, &aborted, &lat);
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ (i + 1).wrapping_mul(0x9e37_79b9));
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    match event(client, TxnMode::Pessimistic, &mut rng, ROWS) {
                        Ok(commit_ts) => {
                            mine.push(t0.elapsed().as_micros() as u64);
                            acked.lock().insert(commit_ts, Instant::now());
                        }
                        Err(_) => *aborted.lock() += 1,
                    }
                }
                lat.lock().extend(mine);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    (lat.into_inner(), aborted.into_inner())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let clients: usize = args.first().map_or(Ok(16), |s| s.parse())?;
    let seconds: f64 = args.get(1).map_or(Ok(10.0), |s| s.parse())?;
    let slices: usize = args.get(2).map_or(Ok(4), |s| s.parse())?;
    let poll = Duration::from_millis(args.get(3).map_or(Ok(10), |s| s.parse())?);
    let dir = tempfile::tempdir()?;
    let cluster = LocalCluster::start(
        ClusterConfig::new(dir.path().join("store"))
            .with_regions(16)
            .with_lock_mode(LockMode::InMemory),
    )?;
    let coordinator = |name: &str, id: u32, stream: bool| {
        let mut opts = BinlogOptions::new(dir.path().join(name));
        opts.server_id = id;
        let config = ClientConfig::default()
            .with_binlog(Some(opts))
            .with_stream(StreamOptions::default().with_enabled(stream));
        TxnClient::open(cluster.router(), config)
    };
    let on = coordinator("binlog-on", 1, true)?;
    let off = coordinator("binlog-off", 2, false)?;
    load(&off, ROWS, 4)?;
    let reader = TxnClient::new(cluster.router(), ClientConfig::default());

    // The follower: every streamed transaction's delay from its acknowledgement.
    let acked: Mutex<HashMap<u64, Instant>> = Mutex::new(HashMap::new());
    let lags = Mutex::new(Vec::<u64>::new());
    let rounds = Mutex::new(0u64);
    let done = AtomicBool::new(false);
    let mut results: [(Vec<u64>, u64, f64); 2] = [(Vec::new(), 0, 0.0), (Vec::new(), 0, 0.0)];
    std::thread::scope(
        |s| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            let (acked_f, lags_f, rounds_f, done_f, reader) =
                (&acked, &lags, &rounds, &done, &reader);
            s.spawn(move || {
                let (mut after, mut lower) = (0u64, 0u64);
                while !done_f.load(Ordering::Relaxed) {
                    let round = reader.stream_resolved_ts().and_then(|wm| {
                        reader
                            .stream_scan(after, wm.resolved_ts, lower)
                            .map(|txns| (wm, txns))
                    });
                    let (wm, txns) = match round {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("follower round failed: {e}");
                            std::thread::sleep(poll);
                            continue;
                        }
                    };
                    let now = Instant::now();
                    let acked = acked_f.lock();
                    let mut lags = lags_f.lock();
                    for t in txns {
                        if let Some(at) = acked.get(&t.commit_ts) {
                            lags.push(now.saturating_duration_since(*at).as_micros() as u64);
                        }
                    }
                    (after, lower) = (wm.resolved_ts, wm.lower_record_ts);
                    *rounds_f.lock() += 1;
                    drop((acked, lags));
                    std::thread::sleep(poll);
                }
            });
            for round in 0..slices * 2 {
                // Alternate which variant goes first.
                let variant = (round + round / 2) % 2;
                let client = if variant == 0 { &on } else { &off };
                let _ = slice(client, clients, 0.5, round as u64, &acked); // warm-up
                let started = Instant::now();
                let (lat, aborted) = slice(
                    client,
                    clients,
                    seconds / slices as f64,
                    round as u64 + 99,
                    &acked,
                );
                let r = &mut results[variant];
                r.0.extend(lat);
                r.1 += aborted;
                r.2 += started.elapsed().as_secs_f64();
            }
            done.store(true, Ordering::Relaxed);
            Ok(())
        },
    )
    .map_err(|e| e.to_string())?;
    println!(
        "stream_cost: {} cores, {clients} clients, {seconds} s per variant in {slices} slices, follower poll {poll:?}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut tps = [0.0; 2];
    for (i, name) in ["stream on", "stream off"].iter().enumerate() {
        let (lat, aborted, secs) = &mut results[i];
        lat.sort_unstable();
        tps[i] = lat.len() as f64 / *secs;
        println!(
            "{name:>10}: {:>7.0} TPS, p50 {:>6} us, p99 {:>6} us, {} commits, {} aborted",
            tps[i],
            percentile(lat, 0.5),
            percentile(lat, 0.99),
            lat.len(),
            aborted
        );
    }
    println!("stream on / off TPS: {:.3}", tps[0] / tps[1].max(1e-9));
    let mut lags = lags.into_inner();
    lags.sort_unstable();
    println!(
        "follower: {} rounds, {} transactions delivered; delay from ack to delivery p50 {} us, p99 {} us, max {} us",
        rounds.into_inner(),
        lags.len(),
        percentile(&lags, 0.5),
        percentile(&lags, 0.99),
        lags.last().copied().unwrap_or(0)
    );
    Ok(())
}
