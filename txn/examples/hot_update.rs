//! One hot row through the whole stack: AliSQL's hot-row experiment (one row updated by many
//! clients, hot-row grouping on vs off) against a 3-replica `LocalCluster` with durable WALs.
//!
//! - `on`: every client calls `TxnClient::hot_update(key, +1, commit_on_success
//!   rollback_on_fail target_affect_row(1))`; concurrent updates of the key are grouped, and a
//!   group is one pessimistic lock, one single-key one-phase commit (one Raft proposal).
//! - `off`: every client runs its own pessimistic transaction: begin, `get_for_update`
//!   (lock and read), put the value plus one, commit (one phase).
//!
//! The two modes alternate slice by slice in one run, so outside load hits both alike. At the
//! end the key's value must equal the number of acknowledged increments (undetermined ones may
//! or may not count), or the run fails. Run with `--help` for the flags.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use surge_txn::{
    ClientConfig, ClusterConfig, HotCounters, HotHints, HotOp, LocalCluster, TxnClient, TxnError,
    TxnMode,
};

const USAGE: &str = "\
hot_update: one hot row updated by many clients, hot-row grouping on vs off, in one run

USAGE:
    cargo run --release -p surge-txn --example hot_update -- [FLAGS]

FLAGS:
    --threads LIST   comma-separated client thread counts (default 1,256)
    --seconds N      measured seconds per (threads, mode) point (default 5), taken in slices
                     that alternate between the modes
    --slice N        measured seconds of one slice (default 1)
    --warmup N       unmeasured seconds at the start of each slice (default 0.3)
    --json           print one JSON object per (threads, mode) instead of a table
    --help           print this and exit
";

const HOT_KEY: &[u8] = b"hot-row";

/// What the workers do now.
const PAUSE: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;
const STOP: u8 = 3;

struct Args {
    threads: Vec<usize>,
    seconds: f64,
    slice: f64,
    warmup: f64,
    json: bool,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut a = Args {
        threads: vec![1, 256],
        seconds: 5.0,
        slice: 1.0,
        warmup: 0.3,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--json" => {
                a.json = true;
                continue;
            }
            _ => {}
        }
        let value = it
            .next()
            .ok_or_else(|| format!("The flag {flag} needs a value (see --help)."))?;
        let seconds = |name: &str| -> Result<f64, String> {
            value
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| {
                    format!("The flag {name} expects a positive number of seconds, not '{value}'.")
                })
        };
        match flag.as_str() {
            "--threads" => {
                let parsed: Option<Vec<usize>> = value
                    .split(',')
                    .map(|s| s.trim().parse().ok().filter(|n| *n > 0 && *n <= 4096))
                    .collect();
                a.threads = parsed.filter(|v| !v.is_empty()).ok_or_else(|| {
                    format!("The flag --threads expects thread counts between 1 and 4096 separated by commas, not '{value}'.")
                })?;
            }
            "--seconds" => a.seconds = seconds("--seconds")?,
            "--slice" => a.slice = seconds("--slice")?,
            "--warmup" => a.warmup = seconds("--warmup")?,
            other => return Err(format!("There is no flag '{other}' (see --help).")),
        }
    }
    Ok(Some(a))
}

/// One increment of the hot row in `mode`.
fn increment(client: &TxnClient, mode: u8) -> Result<(), TxnError> {
    if mode == ON {
        return client
            .hot_update(HOT_KEY, HotOp::add(1), HotHints::hot_update())
            .map(|_| ());
    }
    let mut t = client.begin(TxnMode::Pessimistic)?;
    let current = t
        .get_for_update(HOT_KEY)?
        .and_then(|v| HotOp::decode(&v))
        .unwrap_or(0);
    t.put(HOT_KEY, &HotOp::encode(current + 1))?;
    t.commit().map(|_| ())
}

/// What every worker thread shares.
struct Shared {
    phase: AtomicU8,
    measuring: AtomicBool,
    /// Workers inside an increment now.
    busy: AtomicUsize,
    /// Increments acknowledged (measured or not), for the final check.
    acked: AtomicU64,
    /// Increments whose outcome is unknown.
    undetermined: AtomicU64,
    /// Failed increments while measuring, per mode (`[on, off]`).
    failed: [AtomicU64; 2],
    /// Latencies (µs) of increments acknowledged while measuring, per mode.
    latencies: Mutex<[Vec<u64>; 2]>,
}

fn worker(client: &TxnClient, shared: &Shared) {
    let mut mine: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    loop {
        let mode = shared.phase.load(Ordering::Acquire);
        match mode {
            STOP => break,
            PAUSE => {
                std::thread::sleep(Duration::from_micros(500));
                continue;
            }
            _ => {}
        }
        shared.busy.fetch_add(1, Ordering::AcqRel);
        // The mode may have changed since it was read: only run if it still holds.
        if shared.phase.load(Ordering::Acquire) != mode {
            shared.busy.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let measured = shared.measuring.load(Ordering::Acquire);
        let t0 = Instant::now();
        let r = increment(client, mode);
        let us = t0.elapsed().as_micros() as u64;
        let slot = usize::from(mode == OFF);
        match r {
            Ok(()) => {
                shared.acked.fetch_add(1, Ordering::Relaxed);
                if measured && shared.measuring.load(Ordering::Acquire) {
                    mine[slot].push(us);
                }
            }
            Err(e) => {
                if matches!(e, TxnError::Undetermined { .. }) {
                    shared.undetermined.fetch_add(1, Ordering::Relaxed);
                }
                if measured {
                    shared.failed[slot].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        shared.busy.fetch_sub(1, Ordering::AcqRel);
    }
    let mut all = shared.latencies.lock();
    for (dst, src) in all.iter_mut().zip(mine) {
        dst.extend(src);
    }
}

/// One (threads, mode) point, summed over its slices.
#[derive(Default)]
struct Point {
    seconds: f64,
    hot: HotCounters,
}

fn add_counters(a: HotCounters, later: HotCounters, earlier: HotCounters) -> HotCounters {
    HotCounters {
        groups: a.groups + later.groups - earlier.groups,
        members: a.members + later.members - earlier.members,
        ungrouped: a.ungrouped + later.ungrouped - earlier.ungrouped,
        failed_members: a.failed_members + later.failed_members - earlier.failed_members,
        undetermined_members: a.undetermined_members + later.undetermined_members
            - earlier.undetermined_members,
        failed_groups: a.failed_groups + later.failed_groups - earlier.failed_groups,
        max_group_size: later.max_group_size,
    }
}

/// Runs one slice of `mode`: warm up, measure, then drain the workers.
fn slice(client: &TxnClient, shared: &Shared, mode: u8, args: &Args, point: &mut Point) {
    shared.phase.store(mode, Ordering::Release);
    std::thread::sleep(Duration::from_secs_f64(args.warmup));
    let before = client.hot_counters();
    let t0 = Instant::now();
    shared.measuring.store(true, Ordering::Release);
    std::thread::sleep(Duration::from_secs_f64(args.slice));
    shared.measuring.store(false, Ordering::Release);
    point.seconds += t0.elapsed().as_secs_f64();
    point.hot = add_counters(point.hot, client.hot_counters(), before);
    shared.phase.store(PAUSE, Ordering::Release);
    while shared.busy.load(Ordering::Acquire) > 0 {
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0;
    };
    sorted[((last as f64 * p).round() as usize).min(last)]
}

fn main() -> ExitCode {
    let outcome = match parse_args() {
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Some(args)) => run(&args).map_err(|e| (e, ExitCode::FAILURE)),
        Err(e) => Err((e, ExitCode::from(2))),
    };
    outcome.map_or_else(
        |(e, code)| {
            eprintln!("hot_update: {e}");
            code
        },
        |()| ExitCode::SUCCESS,
    )
}

fn run(args: &Args) -> Result<(), String> {
    let dir = tempfile::tempdir()
        .map_err(|e| format!("A temporary directory could not be made: {e}."))?;
    let cluster = LocalCluster::start(ClusterConfig::new(dir.path()))
        .map_err(|e| format!("The cluster did not start: {e}."))?;
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    let t = client
        .begin(TxnMode::Pessimistic)
        .and_then(|mut t| t.put(HOT_KEY, &HotOp::encode(0)).map(|()| t))
        .map_err(|e| format!("The hot row could not be written: {e}."))?;
    t.commit()
        .map_err(|e| format!("The hot row could not be written: {e}."))?;
    let slices = (args.seconds / args.slice).ceil().max(1.0) as usize;
    if !args.json {
        println!(
            "hot_update: one key, 3 replicas (durable WALs), {slices} slice(s) of {:.1} s per mode",
            args.slice
        );
        println!(
            "{:>7} {:>4} {:>10} {:>9} {:>10} {:>7}",
            "threads", "mode", "tps", "p95 us", "mean grp", "failed"
        );
    }
    let shared = Shared {
        phase: AtomicU8::new(PAUSE),
        measuring: AtomicBool::new(false),
        busy: AtomicUsize::new(0),
        acked: AtomicU64::new(1),
        undetermined: AtomicU64::new(0),
        failed: [AtomicU64::new(0), AtomicU64::new(0)],
        latencies: Mutex::new([Vec::new(), Vec::new()]),
    };
    for &threads in &args.threads {
        let mut points = [Point::default(), Point::default()];
        shared
            .failed
            .iter()
            .for_each(|f| f.store(0, Ordering::Relaxed));
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| worker(&client, &shared));
            }
            for i in 0..slices {
                // on, off, off, on, on, off, ...: neither mode always goes first.
                let order = if i % 2 == 0 { [ON, OFF] } else { [OFF, ON] };
                for mode in order {
                    let p = &mut points[usize::from(mode == OFF)];
                    slice(&client, &shared, mode, args, p);
                }
            }
            shared.phase.store(STOP, Ordering::Release);
        });
        shared.phase.store(PAUSE, Ordering::Release);
        let mut lat = std::mem::take(&mut *shared.latencies.lock());
        for (slot, (name, p)) in ["on", "off"].iter().zip(&points).enumerate() {
            let l = &mut lat[slot];
            l.sort_unstable();
            let tps = l.len() as f64 / p.seconds.max(1e-9);
            let mean_group = if slot == 0 {
                p.hot.mean_group_size()
            } else {
                1.0 // each transaction is its own write
            };
            let failed = shared.failed[slot].load(Ordering::Relaxed);
            let p95 = percentile(l, 0.95);
            if args.json {
                println!(
                    "{{\"threads\":{threads},\"mode\":\"{name}\",\"tps\":{tps:.1},\"p95_us\":{p95},\"p50_us\":{},\"mean_group\":{mean_group:.2},\"committed\":{},\"failed\":{failed},\"seconds\":{:.2}}}",
                    percentile(l, 0.5),
                    l.len(),
                    p.seconds
                );
            } else {
                println!(
                    "{threads:>7} {name:>4} {tps:>10.0} {p95:>9} {mean_group:>10.2} {failed:>7}"
                );
            }
        }
    }
    check_final(&client, &shared)
}

/// The hot row must hold exactly the acknowledged increments (plus any undetermined ones
/// that were applied).
fn check_final(client: &TxnClient, shared: &Shared) -> Result<(), String> {
    let value = client
        .get(HOT_KEY)
        .map_err(|e| format!("The hot row could not be read back: {e}."))?
        .and_then(|v| HotOp::decode(&v))
        .ok_or("The hot row does not hold an integer at the end.")?;
    // `acked` started at 1 for the initial write of 0, which added nothing.
    let acked = shared.acked.load(Ordering::Relaxed) as i64 - 1;
    let unknown = shared.undetermined.load(Ordering::Relaxed) as i64;
    if value < acked || value > acked + unknown {
        return Err(format!(
            "Lost or doubled updates: the hot row holds {value} after {acked} acknowledged increments and {unknown} undetermined ones."
        ));
    }
    eprintln!(
        "hot_update: final value {value} = {acked} acknowledged increments (+{} of {unknown} undetermined)",
        value - acked
    );
    Ok(())
}
