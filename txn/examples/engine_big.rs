//! The disk engine with more data than its cache: a 3-replica `LocalCluster` (durable WALs,
//! one region that never splits by itself) loaded with `--mib` MiB of 1 KiB values, then:
//! point-get latency over the whole key space, restart of the whole cluster to ready, a
//! snapshot of the region to a follower behind the leader's log (time, bytes streamed and
//! the process's peak resident memory meanwhile), and a split of the region (at a given
//! key, then at the middle key the engine finds).
//!
//! `cargo run --release -p surge-txn --example engine_big -- [--mib N] [--cache-mib N]
//! [--clients N] [--dir PATH]`. The three nodes share this process (with the `surgedb`
//! binary's allocator, mimalloc), so resident memory is theirs together. Peak memory is
//! read from `/proc/self/status` (`VmHWM`, reset through `/proc/self/clear_refs` after
//! each phase, whose peak is printed in brackets; Linux only). The cluster is stopped one
//! node at a time at the end, each stop a phase of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use surge_txn::{
    ClientConfig, ClusterConfig, EngineKind, FjallOptions, LocalCluster, TxnClient, TxnMode,
};

struct Args {
    mib: u64,
    cache_mib: u64,
    clients: u64,
    dir: Option<std::path::PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        mib: 1024,
        cache_mib: 512,
        clients: 2,
        dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--mib" => a.mib = num(value()?)?,
            "--cache-mib" => a.cache_mib = num(value()?)?,
            "--clients" => a.clients = num(value()?)?.max(1),
            "--dir" => a.dir = Some(value()?.into()),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(a)
}

/// The allocator of the `surgedb` binary: with glibc's, freed memory kept in its per-thread
/// arenas shows up in the resident size (a node's stop looked like +3 GB after 8 GiB).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const VALUE: usize = 1024;
const PER_TXN: u64 = 256;

fn key(i: u64) -> Vec<u8> {
    let mut k = b"k".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

/// `VmRSS` and `VmHWM` of this process, in MiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Prints the peak resident size since the last reset, then resets it.
fn phase_peak(phase: &str) {
    let (rss, peak) = memory();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let parts: Vec<&str> = status
        .lines()
        .filter(|l| {
            l.starts_with("RssAnon") || l.starts_with("RssFile") || l.starts_with("Threads")
        })
        .collect();
    println!(
        "  [{phase}: peak {peak} MiB, now {rss} MiB; {}]",
        parts.join(", ")
    );
    reset_peak();
}

/// Resets the peak resident size to the current one.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn config(dir: &std::path::Path, cache_mib: u64) -> ClusterConfig {
    let engine = EngineKind::Disk(FjallOptions::default().with_cache_bytes(cache_mib << 20));
    let mut c = ClusterConfig::new(dir).with_regions(1).with_engine(engine);
    c.split_size = None;
    c
}

fn load(client: &TxnClient, rows: u64, clients: u64) -> Result<(), String> {
    let next = AtomicU64::new(0);
    let value = vec![b'v'; VALUE];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                s.spawn(|| -> Result<(), String> {
                    loop {
                        let first = next.fetch_add(PER_TXN, Ordering::Relaxed);
                        if first >= rows {
                            return Ok(());
                        }
                        let mut tries = 0;
                        loop {
                            let r = client.begin(TxnMode::Optimistic).and_then(|mut t| {
                                for i in first..(first + PER_TXN).min(rows) {
                                    t.put(&key(i), &value)?;
                                }
                                t.commit()
                            });
                            match r {
                                Ok(_) => break,
                                Err(e) if tries < 5 => {
                                    tries += 1;
                                    eprintln!("load at {first}: {e}; retrying");
                                }
                                Err(e) => return Err(format!("load at {first}: {e}")),
                            }
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().map_err(|_| "a loader panicked".to_string())?)
    })
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    v.get(((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1)))
        .map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

fn get_latencies(client: &TxnClient, rows: u64) -> Result<(f64, f64), String> {
    let mut times = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t0 = Instant::now();
        let mut t = client
            .begin(TxnMode::Optimistic)
            .map_err(|e| e.to_string())?;
        let v = t.get(&key(x % rows)).map_err(|e| e.to_string())?;
        t.rollback();
        if v.is_none() {
            return Err(format!("key {} missing", x % rows));
        }
        times.push(t0.elapsed());
    }
    Ok((pct(&mut times, 0.5), pct(&mut times, 0.99)))
}

fn main() -> Result<(), String> {
    let a = parse()?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let dir = a.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let rows = (a.mib << 20) / VALUE as u64;
    println!(
        "rows: {rows} x {VALUE} B ({} MiB), cache {} MiB per node, {} loading clients, 3 nodes in this process",
        a.mib, a.cache_mib, a.clients
    );
    let cluster = LocalCluster::start(config(&dir, a.cache_mib)).map_err(|e| e.to_string())?;
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    reset_peak();
    let t0 = Instant::now();
    load(&client, rows, a.clients)?;
    let secs = t0.elapsed().as_secs_f64();
    let (rss, peak) = memory();
    println!(
        "load: {:.1} s, {:.1} MiB/s of values, {:.0} rows/s; RSS after {rss} MiB, peak {peak} MiB",
        secs,
        a.mib as f64 / secs,
        rows as f64 / secs
    );
    let (p50, p99) = get_latencies(&client, rows)?;
    println!("point get over all rows: p50 {p50:.0} µs, p99 {p99:.0} µs");
    phase_peak("gets");

    drop(client);
    drop(cluster);
    let t0 = Instant::now();
    let cluster = LocalCluster::start(config(&dir, a.cache_mib)).map_err(|e| e.to_string())?;
    cluster
        .wait_for_leaders(Duration::from_secs(60))
        .map_err(|e| e.to_string())?;
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    let mut t = client
        .begin(TxnMode::Optimistic)
        .map_err(|e| e.to_string())?;
    let found = t.get(&key(rows - 1)).map_err(|e| e.to_string())?;
    t.rollback();
    if found.is_none() {
        return Err("the last row is missing after the restart".into());
    }
    println!(
        "restart of the cluster to a first read: {} ms",
        t0.elapsed().as_millis()
    );

    // A follower stops while 160 MiB more are written (overwrites of the first rows), so
    // the leader's log, held for it up to four times `compact_log_bytes`, is compacted
    // past it; restarted, it needs a snapshot of the whole region, streamed.
    phase_peak("restart");
    let region = cluster.region_of(&key(0)).ok_or("no region")?;
    let leader = cluster.leader_of(&key(0)).ok_or("no leader")?;
    let follower = *cluster
        .node_ids()
        .iter()
        .find(|&&n| n != leader)
        .ok_or("no follower")?;
    cluster.stop_node(follower).map_err(|e| e.to_string())?;
    load(&client, (160 << 20) / VALUE as u64, a.clients)?;
    phase_peak("160 MiB with a follower stopped");
    let streamed_before = cluster
        .node(leader)
        .and_then(|n| n.raft_stats())
        .map_or(0, |s| s.snapshot_bytes_streamed);
    let target = cluster
        .node(leader)
        .and_then(|n| n.raft_status(region.id))
        .map_or(0, |s| s.applied);
    let (rss_before, _) = memory();
    reset_peak();
    let t0 = Instant::now();
    cluster.restart_node(follower).map_err(|e| e.to_string())?;
    loop {
        let applied = cluster
            .node(follower)
            .and_then(|n| n.raft_status(region.id))
            .map_or(0, |s| s.applied);
        if applied >= target {
            break;
        }
        if t0.elapsed() > Duration::from_secs(1800) {
            return Err(format!("the follower reached only {applied} of {target}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = t0.elapsed();
    let (_, peak) = memory();
    let streamed = cluster
        .node(leader)
        .and_then(|n| n.raft_stats())
        .map_or(0, |s| s.snapshot_bytes_streamed)
        - streamed_before;
    println!(
        "snapshot of the region to a follower behind the log: {:.1} s, {} MiB streamed ({:.1} MiB/s); RSS before {rss_before} MiB, peak meanwhile {peak} MiB (+{} MiB)",
        took.as_secs_f64(),
        streamed >> 20,
        (streamed >> 20) as f64 / took.as_secs_f64(),
        peak.saturating_sub(rss_before)
    );

    // Splits: at a given key (the split itself), then at the middle key the engine finds.
    reset_peak();
    let t0 = Instant::now();
    let parts = cluster
        .split_region(region.id, Some(key(rows / 2)))
        .map_err(|e| e.to_string())?;
    let at_key = t0.elapsed();
    phase_peak("split at a key");
    let upper = parts.last().ok_or("no child")?.clone();
    // The lower half again and again at given keys: the time should not follow the size.
    let mut more = Vec::new();
    for d in [4u64, 8, 16, 32] {
        let t0 = Instant::now();
        cluster
            .split_region(region.id, Some(key(rows / d)))
            .map_err(|e| e.to_string())?;
        more.push((a.mib * 2 / d, t0.elapsed()));
    }
    println!(
        "splits at a given key of the lower part: {}",
        more.iter()
            .map(|(mib, t)| format!("{mib} MiB {:.1} ms", t.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let t0 = Instant::now();
    cluster
        .split_region(upper.id, None)
        .map_err(|e| e.to_string())?;
    let at_middle = t0.elapsed();
    phase_peak("split at the middle key");
    println!(
        "split of the {} MiB region at a given key: {:.1} ms; of its {} MiB upper half at the middle key it finds: {:.1} ms",
        a.mib,
        at_key.as_secs_f64() * 1e3,
        a.mib / 2,
        at_middle.as_secs_f64() * 1e3
    );
    drop(client);
    let streamed = |cluster: &LocalCluster| -> u64 {
        cluster
            .node_ids()
            .iter()
            .filter_map(|&n| cluster.node(n).and_then(|n| n.raft_stats()))
            .map(|s| s.snapshot_bytes_streamed >> 20)
            .sum()
    };
    for id in cluster.node_ids().to_vec() {
        let before = streamed(&cluster);
        cluster.stop_node(id).map_err(|e| e.to_string())?;
        phase_peak(&format!(
            "node {id} stopped (MiB streamed by the others before {before}, after {})",
            streamed(&cluster)
        ));
    }
    drop(cluster);
    phase_peak("shutdown");
    Ok(())
}
