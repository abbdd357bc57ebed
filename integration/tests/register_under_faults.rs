//! A per-key register workload over 3 node processes while a region leader's process is
//! killed with `kill -9` and restarted and another node is paused (SIGSTOP) and resumed
//! (SIGCONT): reads, unique blind writes and compare-and-set (`get_for_update` + put) on three
//! keys in three regions from four clients with in-memory pessimistic locks, the history
//! checked for per-key linearizability (an undetermined outcome may or may not have taken
//! effect). A final read after healing joins each key's history. `SURGE_LONG=1` runs more
//! fault cycles.

#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

mod common;

use std::time::{Duration, Instant};

use common::{ProcCluster, long, region_of};
use surge_testkit::{History, Op, OpKind, check_registers};
use surge_txn::{TxnClient, TxnError, TxnMode};

const REGISTERS: u64 = 3;

/// Register `r`'s key, in its own region.
fn register_key(r: u64) -> Vec<u8> {
    vec![u8::try_from(r * 0x50 + 0x08).unwrap(), b'r', b'e', b'g']
}

fn decode(v: Option<Vec<u8>>) -> u64 {
    v.map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap())
}

/// `Some(Some(t))`: took effect, completed at `t`; `Some(None)`: unknown; `None`: no effect.
fn settle(h: &History, result: Result<(), TxnError>) -> Option<Option<u64>> {
    match result {
        Ok(()) => Some(Some(h.now())),
        Err(TxnError::Undetermined { .. }) => Some(None),
        Err(_) => None,
    }
}

fn read(client: &TxnClient, key: &[u8]) -> Result<u64, TxnError> {
    let mut t = client.begin(TxnMode::Optimistic)?;
    let v = decode(t.get(key)?);
    t.commit()?;
    Ok(v)
}

fn write(client: &TxnClient, key: &[u8], value: u64) -> Result<(), TxnError> {
    let mut t = client.begin(TxnMode::Pessimistic)?;
    t.put(key, value.to_string().as_bytes())?;
    t.commit().map(|_| ())
}

/// Compare-and-set; `Ok(Err(found))`: the register held `found`, nothing written.
fn cas(client: &TxnClient, key: &[u8], expect: u64, new: u64) -> Result<Result<(), u64>, TxnError> {
    let mut t = client.begin(TxnMode::Pessimistic)?;
    let found = decode(t.get_for_update(key)?);
    if found != expect {
        t.rollback();
        return Ok(Err(found));
    }
    t.put(key, new.to_string().as_bytes())?;
    t.commit()?;
    Ok(Ok(()))
}

fn client_loop(client: &TxnClient, id: u64, h: &History, stop: &std::sync::atomic::AtomicBool) {
    let mut seed = (id + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = 0u64;
    let mut seen = [0u64; REGISTERS as usize];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let r = seed % REGISTERS;
        let key = register_key(r);
        let slot = r as usize;
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
        next += 1;
        let value = (id + 1) * 1_000_000 + next;
        match (seed >> 8) % 10 {
            0..=3 => {
                if let Ok(v) = read(client, &key) {
                    record(OpKind::Read(v), invoke, Some(h.now()));
                    seen[slot] = v;
                }
            }
            4..=6 => {
                if let Some(complete) = settle(h, write(client, &key, value)) {
                    record(OpKind::Write(value), invoke, complete);
                }
            }
            _ => {
                let expect = seen[slot];
                match cas(client, &key, expect, value) {
                    Ok(Err(found)) => {
                        record(OpKind::Read(found), invoke, Some(h.now()));
                        seen[slot] = found;
                    }
                    other => {
                        if let Some(complete) = settle(h, other.map(|_| ())) {
                            record(OpKind::Cas { expect, new: value }, invoke, complete);
                            seen[slot] = value;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn registers_over_three_processes_stay_linearizable_under_kill_9_and_pause() {
    let c = ProcCluster::start(3, "in-memory");
    let client = c.client();
    let history = History::new();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let victim = client
        .leader_of_region(region_of(&register_key(0)))
        .unwrap();
    let paused = if victim == 3 { 2 } else { 3 };
    let cycles = if long() { 3 } else { 1 };
    let mut last_fault = Instant::now();
    std::thread::scope(|s| {
        for id in 0..4 {
            let (txn, h, stop) = (client.txn(), &history, &stop);
            s.spawn(move || client_loop(txn, id, h, stop));
        }
        std::thread::sleep(Duration::from_millis(1000));
        for _ in 0..cycles {
            c.kill9(victim);
            std::thread::sleep(Duration::from_millis(1500));
            c.restart(victim);
            std::thread::sleep(Duration::from_millis(1000));
            c.pause(paused);
            std::thread::sleep(Duration::from_millis(1500));
            c.resume(paused);
            last_fault = Instant::now();
            std::thread::sleep(Duration::from_millis(1500));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    // Healed: one final read per register joins its history.
    for r in 0..REGISTERS {
        let invoke = history.now();
        let v = read(client.txn(), &register_key(r)).unwrap();
        history.record(Op {
            key: r,
            kind: OpKind::Read(v),
            client: 99,
            invoke,
            complete: Some(history.now()),
        });
    }
    let ops = history.ops();
    let count = |f: fn(&OpKind) -> bool| ops.iter().filter(|o| f(&o.kind)).count();
    let writes = count(|k| matches!(k, OpKind::Write(_)));
    let cases = count(|k| matches!(k, OpKind::Cas { .. }));
    let unknown = ops.iter().filter(|o| o.complete.is_none()).count();
    eprintln!(
        "registers: {} ops ({} reads, {writes} writes, {cases} cas, {unknown} unknown), {cycles} fault cycles, last fault {:?} before the end",
        ops.len(),
        count(|k| matches!(k, OpKind::Read(_))),
        last_fault.elapsed()
    );
    assert!(
        writes + cases >= 10,
        "too few writes took effect: {writes} + {cases}"
    );
    check_registers(&ops).unwrap();
}

/// The copied checker refuses a stale read: the test above can fail.
#[test]
fn the_checker_refuses_a_read_of_an_overwritten_value() {
    let op = |kind, invoke, complete| Op {
        key: 0,
        kind,
        client: 0,
        invoke,
        complete: Some(complete),
    };
    let ok = [op(OpKind::Write(1), 0, 10), op(OpKind::Read(1), 20, 30)];
    assert!(check_registers(&ok).is_ok());
    let stale = [
        op(OpKind::Write(1), 0, 10),
        op(OpKind::Write(2), 20, 30),
        op(OpKind::Read(1), 40, 50),
    ];
    assert!(check_registers(&stale).is_err());
}
