//! The disk engine against `MemEngine`, side by side in one run: a 3-replica `LocalCluster`
//! (16 regions, durable WALs) on each engine in turn, measuring write-only TPS at 32 clients
//! (`surge_txn::workload`'s `oltp_write_only` event, optimistic), point-get and 100-key scan
//! latencies (p50 / p99 over every operation), the time to split a region, and the time from
//! a restart of the whole cluster to every region having a leader. Beside the TPS, the
//! process's CPU time per committed transaction during the write phase (all three nodes and
//! the clients): on two cores the nodes are CPU-bound, so this is the engines' cost per
//! transaction, usually with less run-to-run noise than the TPS (not always: both move
//! with the machine).
//!
//! `cargo run --release -p surge-txn --example engine_bench -- [--rows N] [--seconds N]
//! [--rounds N] [--only disk|memory] [--memtable-mib N]`; the engines alternate in each round, so outside
//! load hits both alike (`--only`: one engine, for a profile of it).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use surge_txn::workload::{Rng, event, load};
use surge_txn::{
    ClientConfig, ClusterConfig, EngineKind, FjallOptions, LocalCluster, TxnClient, TxnMode,
};

struct Args {
    rows: u64,
    seconds: f64,
    rounds: usize,
    /// `disk`, `memory` or both (`None`).
    only: Option<bool>,
    /// The disk engine's memtable per column family, in MiB.
    memtable_mib: u64,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        rows: 50_000,
        seconds: 8.0,
        rounds: 2,
        only: None,
        memtable_mib: FjallOptions::default().memtable_bytes >> 20,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--rows" => a.rows = value()?.parse().map_err(|e| format!("--rows: {e}"))?,
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--rounds" => a.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--memtable-mib" => {
                a.memtable_mib = value()?
                    .parse()
                    .map_err(|e| format!("--memtable-mib: {e}"))?
            }
            "--only" => {
                a.only = match value()?.as_str() {
                    "disk" => Some(true),
                    "memory" => Some(false),
                    other => return Err(format!("--only: disk or memory, not {other}")),
                }
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(a)
}

/// A read-table key: spread over the 16 regions by its first byte.
fn read_key(id: u64) -> Vec<u8> {
    let mut k = vec![(id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8, b'r'];
    k.extend_from_slice(&id.to_be_bytes());
    k
}

#[derive(Default)]
struct Figures {
    tps: Vec<f64>,
    /// CPU microseconds of this process per committed transaction in the write phase.
    cpu_us: Vec<f64>,
    get: Vec<Duration>,
    scan: Vec<Duration>,
    split: Vec<Duration>,
    restart: Vec<Duration>,
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort();
    let i = ((v.len() as f64 * p) as usize).min(v.len() - 1);
    v[i].as_secs_f64() * 1e6
}

/// CPU seconds this process has used (`utime` + `stime` of `/proc/self/stat`, in Linux's
/// `USER_HZ` of 100 ticks a second), or `None` where there is no such file.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3 (state); utime and
    // stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ').skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

fn config(dir: &std::path::Path, disk: bool, a: &Args) -> ClusterConfig {
    let engine = if disk {
        EngineKind::Disk(
            FjallOptions::default()
                .with_cache_bytes(256 << 20)
                .with_worker_threads(1)
                .with_memtable_bytes(a.memtable_mib << 20),
        )
    } else {
        EngineKind::Memory
    };
    ClusterConfig::new(dir).with_regions(16).with_engine(engine)
}

fn run(disk: bool, a: &Args, f: &mut Figures) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cluster = LocalCluster::start(config(dir.path(), disk, a)).map_err(|e| e.to_string())?;
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    load(&client, a.rows, 8).map_err(|e| e.to_string())?;
    for chunk in (1..=a.rows).collect::<Vec<_>>().chunks(500) {
        let mut t = client
            .begin(TxnMode::Optimistic)
            .map_err(|e| e.to_string())?;
        for id in chunk {
            t.put(&read_key(*id), &[b'v'; 180])
                .map_err(|e| e.to_string())?;
        }
        t.commit().map_err(|e| e.to_string())?;
    }
    // Write-only TPS at 32 clients.
    eprintln!("phase: write-only at 32 clients");
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    std::thread::scope(|s| {
        for c in 0..32u64 {
            let (client, stop, done) = (&client, &stop, &done);
            s.spawn(move || {
                let mut rng = Rng::new(c + 1);
                while !stop.load(Ordering::Relaxed) {
                    if event(client, TxnMode::Optimistic, &mut rng, a.rows).is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        std::thread::sleep(Duration::from_secs_f64(a.seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let txns = done.load(Ordering::Relaxed);
    f.tps.push(txns as f64 / started.elapsed().as_secs_f64());
    if let (Some(a), Some(b)) = (cpu_before, cpu_seconds())
        && txns > 0
    {
        f.cpu_us.push((b - a) * 1e6 / txns as f64);
    }
    // Point gets and 100-key scans, 4 readers each, every operation timed.
    eprintln!("phase: reads");
    for scan in [false, true] {
        let stop = AtomicBool::new(false);
        let times = parking_lot::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for c in 0..4u64 {
                let (client, stop, times) = (&client, &stop, &times);
                s.spawn(move || {
                    let mut rng = Rng::new(100 + c);
                    let mut mine = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        let key = read_key(1 + rng.next_u64() % a.rows);
                        let t0 = Instant::now();
                        let Ok(mut t) = client.begin(TxnMode::Optimistic) else {
                            continue;
                        };
                        let ok = if scan {
                            t.scan(&key, None, 100).is_ok()
                        } else {
                            t.get(&key).is_ok()
                        };
                        t.rollback();
                        if ok {
                            mine.push(t0.elapsed());
                        }
                    }
                    times.lock().extend(mine);
                });
            }
            std::thread::sleep(Duration::from_secs_f64(a.seconds / 2.0));
            stop.store(true, Ordering::Relaxed);
        });
        let v = times.into_inner();
        if scan {
            f.scan.extend(v);
        } else {
            f.get.extend(v);
        }
    }
    // A split of the largest region.
    let region = cluster
        .regions()
        .into_iter()
        .max_by_key(|r| r.end.first().copied().unwrap_or(0))
        .ok_or("no region")?;
    let t0 = Instant::now();
    cluster
        .split_region(region.id, None)
        .map_err(|e| e.to_string())?;
    f.split.push(t0.elapsed());
    // Restart of the whole cluster to ready.
    drop(client);
    drop(cluster);
    let t0 = Instant::now();
    let cluster = LocalCluster::start(config(dir.path(), disk, a)).map_err(|e| e.to_string())?;
    f.restart.push(t0.elapsed());
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    let mut t = client
        .begin(TxnMode::Optimistic)
        .map_err(|e| e.to_string())?;
    if t.get(&read_key(a.rows))
        .map_err(|e| e.to_string())?
        .is_none()
    {
        return Err("a loaded key is missing after the restart".into());
    }
    t.rollback();
    Ok(())
}

fn main() -> Result<(), String> {
    let a = parse()?;
    let (mut disk, mut mem) = (Figures::default(), Figures::default());
    for round in 0..a.rounds {
        for on_disk in [true, false] {
            if a.only.is_some_and(|d| d != on_disk) {
                continue;
            }
            eprintln!("round {round}: {}", if on_disk { "disk" } else { "memory" });
            run(on_disk, &a, if on_disk { &mut disk } else { &mut mem })?;
        }
    }
    println!(
        "cores: {}; rows: {} (+{} read rows); {} s per TPS point; {} rounds",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        a.rows,
        a.rows,
        a.seconds,
        a.rounds
    );
    println!(
        "| engine | write-only TPS (32 clients) | CPU per txn (µs) | get p50 / p99 (µs) | 100-key scan p50 / p99 (µs) | split (ms) | restart to ready (ms) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, f) in [("disk (fjall)", &mut disk), ("MemEngine", &mut mem)] {
        let tps = mean(&f.tps);
        let ms = |v: &[Duration]| {
            v.iter().map(|d| d.as_secs_f64() * 1e3).sum::<f64>() / v.len().max(1) as f64
        };
        println!(
            "| {name} | {tps:.0} | {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {:.1} | {:.0} |",
            mean(&f.cpu_us),
            pct(&mut f.get, 0.5),
            pct(&mut f.get, 0.99),
            pct(&mut f.scan, 0.5),
            pct(&mut f.scan, 0.99),
            ms(&f.split),
            ms(&f.restart),
        );
    }
    if !disk.tps.is_empty() && !mem.tps.is_empty() {
        let per_round = |d: &[f64], m: &[f64]| {
            d.iter()
                .zip(m)
                .map(|(d, m)| format!("{:.2}", d / m))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "disk / MemEngine: write-only TPS {:.2}x (rounds: {}); CPU per txn {:.2}x (rounds: {})",
            mean(&disk.tps) / mean(&mem.tps),
            per_round(&disk.tps, &mem.tps),
            mean(&disk.cpu_us) / mean(&mem.cpu_us),
            per_round(&disk.cpu_us, &mem.cpu_us),
        );
    }
    Ok(())
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}
