//! Register workload: single-key transactions (read, blind write of a unique value,
//! compare-and-set as `get_for_update` + `put`) on three keys in different regions by four
//! client threads, under a seeded schedule of crashes, leader partitions and leader
//! transfers. Every operation's invocation and completion time is recorded and each key's
//! history is checked for linearizability (Lowe / Porcupine search), with writes whose
//! outcome is unknown treated as optional.
//!
//! What the check proves: each read returns the latest acknowledged write (no stale read
//! across a leader change), no compare-and-set succeeds on a value that was already
//! overwritten (no lost update, even when an in-memory lock is lost), and no write that
//! reported a definite failure is ever observed.
//!
//! Each run prints its seed and the command that replays it; `TXN_LONG=1` runs 30 s per
//! mode instead of 3.

mod support;

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use support::{
    FaultSchedule, History, Layout, Op, OpKind, SplitMix64, TestCluster, check_registers,
    fault_tolerant_client, long_run,
};
use surge_txn::{LockMode, TxnClient, TxnError, TxnMode, rpc::META_REGION_ID};

const REGISTERS: u64 = 3;
const CLIENTS: u64 = 4;

/// Runs one at a time: the machine has two cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// Register `r`'s key, in region `r` of four.
fn register_key(r: u64) -> Vec<u8> {
    let first = u8::try_from(r * 0x40 + 0x08).expect("few registers");
    vec![first, b'r', b'e', b'g']
}

fn decode(v: Option<Vec<u8>>) -> u64 {
    v.map_or(0, |v| {
        std::str::from_utf8(&v)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("register holds {v:?}, not a number"))
    })
}

/// What one operation did: `Some(Some(c))` took effect (completed at `c`), `Some(None)`
/// unknown, `None` did not take effect (or a read that failed).
type Outcome = Option<Option<u64>>;

fn settle(h: &History, result: Result<(), TxnError>) -> Outcome {
    match result {
        Ok(()) => Some(Some(h.now())),
        Err(TxnError::Undetermined { .. }) => Some(None),
        Err(_) => None,
    }
}

/// A read in a transaction of `mode`.
fn read(client: &TxnClient, mode: TxnMode, key: &[u8]) -> Result<u64, TxnError> {
    let mut t = client.begin(mode)?;
    let v = decode(t.get(key)?);
    t.commit()?;
    Ok(v)
}

fn write(client: &TxnClient, mode: TxnMode, key: &[u8], value: u64) -> Result<(), TxnError> {
    let mut t = client.begin(mode)?;
    t.put(key, value.to_string().as_bytes())?;
    t.commit().map(|_| ())
}

/// Compare-and-set. `Ok(Err(found))`: the register held `found`, nothing was written.
fn cas(
    client: &TxnClient,
    mode: TxnMode,
    key: &[u8],
    expect: u64,
    new: u64,
) -> Result<Result<(), u64>, TxnError> {
    let mut t = client.begin(mode)?;
    let found = decode(t.get_for_update(key)?);
    if found != expect {
        t.rollback();
        return Ok(Err(found));
    }
    t.put(key, new.to_string().as_bytes())?;
    t.commit()?;
    Ok(Ok(()))
}

/// One client's loop: random operations until `deadline`, each recorded in `h`.
fn client_loop(
    client: &TxnClient,
    mode: TxnMode,
    id: u64,
    mut rng: SplitMix64,
    h: &History,
    deadline: Instant,
) {
    let mut next = 0u64;
    let mut seen = [0u64; REGISTERS as usize];
    while Instant::now() < deadline {
        let r = rng.below(REGISTERS);
        let key = register_key(r);
        let slot = usize::try_from(r).expect("few registers");
        let record = |kind: OpKind, invoke: u64, complete: Option<u64>| {
            h.record(Op {
                key: r,
                kind,
                client: id,
                invoke,
                complete,
            });
        };
        let invoke = h.now();
        match rng.below(10) {
            0..=3 => {
                if let Ok(v) = read(client, mode, &key) {
                    record(OpKind::Read(v), invoke, Some(h.now()));
                    seen[slot] = v;
                }
            }
            4..=6 => {
                next += 1;
                let v = id * 1_000_000 + next;
                if let Some(complete) = settle(h, write(client, mode, &key, v)) {
                    record(OpKind::Write(v), invoke, complete);
                }
            }
            _ => {
                next += 1;
                let new = id * 1_000_000 + next;
                let expect = seen[slot];
                match cas(client, mode, &key, expect, new) {
                    Ok(Err(found)) => {
                        record(OpKind::Read(found), invoke, Some(h.now()));
                        seen[slot] = found;
                    }
                    other => {
                        if let Some(complete) = settle(h, other.map(|_| ())) {
                            record(OpKind::Cas { expect, new }, invoke, complete);
                            seen[slot] = new;
                        }
                    }
                }
            }
        }
    }
}

fn run_registers(test: &str, mode: TxnMode, lock_mode: LockMode) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = support::seed_for("workload_register", test);
    let mut rng = SplitMix64::new(seed);
    let run_for = Duration::from_secs(if long_run() { 30 } else { 3 });
    let mut layout = Layout::new(4, lock_mode);
    layout.seed = seed;
    let tc = TestCluster::start(layout);
    let client = tc.client(fault_tolerant_client());
    let mut groups: Vec<u64> = tc.cluster.regions().iter().map(|r| r.id).collect();
    groups.push(META_REGION_ID);
    let schedule = FaultSchedule::random(&mut rng, tc.cluster.node_ids(), &groups, run_for);
    eprintln!("{test}: {mode} transactions, {lock_mode} locks, faults:\n{schedule}");

    let history = History::new();
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + run_for;
    let fault_log = std::thread::scope(|s| {
        let faults = s.spawn(|| schedule.run(&tc.cluster, lock_mode, &stop));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|id| {
                let (client, rng, h) = (client.clone(), rng.fork(), &history);
                s.spawn(move || client_loop(&client, mode, id + 1, rng, h, deadline))
            })
            .collect();
        for c in clients {
            c.join().expect("client thread");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        faults.join().expect("fault thread")
    });
    for line in &fault_log {
        eprintln!("{test}: fault {line}");
    }
    tc.heal_all(lock_mode);
    // A final read of each register after the faults healed joins the history, so a lost
    // acknowledged write shows as a stale read.
    for r in 0..REGISTERS {
        let invoke = history.now();
        let v = read_eventually(&client, &register_key(r));
        history.record(Op {
            key: r,
            kind: OpKind::Read(v),
            client: 0,
            invoke,
            complete: Some(history.now()),
        });
    }
    let ops = history.ops();
    let count = |f: fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
    eprintln!(
        "{test}: {} operations: {} reads, {} writes, {} compare-and-sets, {} unknown; {:?}",
        ops.len(),
        count(|o| matches!(o.kind, OpKind::Read(_))),
        count(|o| matches!(o.kind, OpKind::Write(_))),
        count(|o| matches!(o.kind, OpKind::Cas { .. })),
        count(|o| o.complete.is_none()),
        client.counters()
    );
    assert!(
        count(|o| o.kind.written().is_some() && o.complete.is_some()) > 0,
        "{test}: no write succeeded"
    );
    let started = Instant::now();
    if let Err(e) = check_registers(&ops) {
        panic!("{test}: {e}");
    }
    eprintln!("{test}: linearizable (checked in {:?})", started.elapsed());
}

fn read_eventually(client: &TxnClient, key: &[u8]) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match read(client, TxnMode::Optimistic, key) {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("final read: {e}; retrying");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("final read failed for 30 s: {e}"),
        }
    }
}

#[test]
fn registers_optimistic() {
    run_registers(
        "registers_optimistic",
        TxnMode::Optimistic,
        LockMode::InMemory,
    );
}

#[test]
fn registers_pessimistic_sync_locks() {
    run_registers(
        "registers_pessimistic_sync_locks",
        TxnMode::Pessimistic,
        LockMode::Sync,
    );
}

#[test]
fn registers_pessimistic_pipelined_locks() {
    run_registers(
        "registers_pessimistic_pipelined_locks",
        TxnMode::Pessimistic,
        LockMode::Pipelined,
    );
}

#[test]
fn registers_pessimistic_in_memory_locks() {
    run_registers(
        "registers_pessimistic_in_memory_locks",
        TxnMode::Pessimistic,
        LockMode::InMemory,
    );
}
