//! A bank workload over 3 node processes while a node is killed with `kill -9` and
//! restarted, another is paused (SIGSTOP) and resumed (SIGCONT), and two regions' leaders
//! are moved with `TransferLeader` over TCP. Checked: every
//! snapshot read during the run sees the same total; afterwards the total holds, every
//! acknowledged transfer's ledger row is visible, and no transfer that failed left one.
//! `SURGE_LONG=1` runs more fault cycles.

#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{ProcCluster, long, region_of};
use parking_lot::Mutex;
use surge_txn::{TxnClient, TxnError, TxnMode};

const ACCOUNTS: u8 = 8;
const INITIAL: u64 = 100;

/// Account `i`'s key: first bytes 0x00, 0x20, ... so the accounts span 8 regions.
fn account(i: u8) -> Vec<u8> {
    let mut k = vec![i * 32];
    k.extend_from_slice(b"acct");
    k
}

fn ledger(worker: u64, n: u64) -> Vec<u8> {
    let mut k = vec![(((worker * 7 + n) % 8) as u8) * 32 + 16];
    k.extend_from_slice(format!("ledger/{worker}-{n}").as_bytes());
    k
}

fn parse(v: Option<Vec<u8>>) -> u64 {
    String::from_utf8(v.expect("account exists"))
        .unwrap()
        .parse()
        .unwrap()
}

#[derive(Default)]
struct Record {
    acked: Vec<(Vec<u8>, Vec<u8>, Instant)>,
    undetermined: Vec<Vec<u8>>,
    failed: Vec<Vec<u8>>,
}

fn transfer(
    client: &TxnClient,
    from: u8,
    to: u8,
    amount: u64,
    ledger_key: &[u8],
) -> Result<Option<Vec<u8>>, TxnError> {
    let mut t = client.begin(TxnMode::Pessimistic)?;
    let a = parse(t.get_for_update(&account(from))?);
    let b = parse(t.get_for_update(&account(to))?);
    if a < amount {
        t.rollback();
        return Ok(None);
    }
    t.put(&account(from), (a - amount).to_string().as_bytes())?;
    t.put(&account(to), (b + amount).to_string().as_bytes())?;
    let entry = format!("{from}->{to}:{amount}").into_bytes();
    t.put(ledger_key, &entry)?;
    t.commit()?;
    Ok(Some(entry))
}

fn total(client: &TxnClient) -> Result<u64, TxnError> {
    let mut t = client.begin(TxnMode::Optimistic)?;
    let keys: Vec<Vec<u8>> = (0..ACCOUNTS).map(account).collect();
    let pairs = t.batch_get(&keys)?;
    assert_eq!(pairs.len(), ACCOUNTS as usize, "an account vanished");
    Ok(pairs.into_iter().map(|(_, v)| parse(Some(v))).sum())
}

#[test]
fn bank_total_and_acknowledged_transfers_survive_kill_9_restart_pause_and_leader_moves() {
    let c = ProcCluster::start(3, "in-memory");
    let client = c.client();
    let mut init = client.txn().begin(TxnMode::Optimistic).unwrap();
    for i in 0..ACCOUNTS {
        init.put(&account(i), INITIAL.to_string().as_bytes())
            .unwrap();
    }
    init.commit().unwrap();
    let expected = INITIAL * u64::from(ACCOUNTS);

    let stop = Arc::new(AtomicBool::new(false));
    let record = Arc::new(Mutex::new(Record::default()));
    let mut workers = Vec::new();
    for w in 0..3u64 {
        let (txn, stop, record) = (client.txn().clone(), stop.clone(), record.clone());
        workers.push(std::thread::spawn(move || {
            let mut seed = w.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let from = (seed % u64::from(ACCOUNTS)) as u8;
                let to = ((seed >> 8) % u64::from(ACCOUNTS - 1)) as u8;
                let to = if to >= from { to + 1 } else { to };
                let amount = 1 + (seed >> 16) % 10;
                n += 1;
                let key = ledger(w, n);
                let outcome = transfer(&txn, from, to, amount, &key);
                let mut r = record.lock();
                match outcome {
                    Ok(Some(entry)) => r.acked.push((key, entry, Instant::now())),
                    Ok(None) => {}
                    Err(TxnError::Undetermined { .. }) => r.undetermined.push(key),
                    Err(_) => r.failed.push(key),
                }
            }
        }));
    }
    let reads = Arc::new(AtomicU64::new(0));
    let checker = {
        let (txn, stop, reads) = (client.txn().clone(), stop.clone(), reads.clone());
        std::thread::spawn(move || {
            let mut bad = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match total(&txn) {
                    Ok(t) if t != expected => bad.push(t),
                    Ok(_) => {
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {}
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            bad
        })
    };

    // Faults: the leader of account 0's region is killed and restarted; another node is
    // paused and resumed.
    let victim = client.leader_of_region(region_of(&account(0))).unwrap();
    let paused = if victim == 3 { 2 } else { 3 };
    let cycles = if long() { 4 } else { 1 };
    std::thread::sleep(Duration::from_millis(1500));
    let mut last_fault = Instant::now();
    let mut moved = 0;
    for _ in 0..cycles {
        c.kill9(victim);
        std::thread::sleep(Duration::from_millis(1500));
        c.restart(victim);
        std::thread::sleep(Duration::from_millis(1500));
        c.pause(paused);
        std::thread::sleep(Duration::from_millis(1500));
        c.resume(paused);
        std::thread::sleep(Duration::from_millis(1000));
        // Leaders moved on purpose: TransferLeader over TCP for the regions of accounts 1
        // and 2, each to a node that does not lead it now (in-memory locks migrate).
        for acct in [1, 2] {
            let region = region_of(&account(acct));
            let from = client.leader_of_region(region);
            let to = (1..=3).find(|n| Some(*n) != from).unwrap();
            client
                .transfer_leader(region, to, Duration::from_secs(20))
                .unwrap();
            moved += 1;
        }
        last_fault = Instant::now();
        std::thread::sleep(Duration::from_millis(1500));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let bad_totals = checker.join().unwrap();

    let r = record.lock();
    assert!(
        bad_totals.is_empty(),
        "snapshot totals {bad_totals:?}, want {expected}"
    );
    assert!(
        reads.load(Ordering::Relaxed) > 0,
        "no snapshot read succeeded"
    );
    assert!(
        r.acked.len() >= 5,
        "only {} transfers acknowledged",
        r.acked.len()
    );
    assert!(
        r.acked.iter().any(|(_, _, at)| *at > last_fault),
        "no transfer acknowledged after the last fault"
    );
    assert_eq!(total(client.txn()).unwrap(), expected);
    for (key, entry, _) in &r.acked {
        assert_eq!(
            client.txn().get(key).unwrap().as_ref(),
            Some(entry),
            "acknowledged transfer {:?} lost",
            String::from_utf8_lossy(key)
        );
    }
    for key in &r.failed {
        assert_eq!(
            client.txn().get(key).unwrap(),
            None,
            "failed transfer {:?} is visible",
            String::from_utf8_lossy(key)
        );
    }
    eprintln!(
        "bank: {} acknowledged, {} failed, {} undetermined, {} snapshot reads, {cycles} fault cycles, {moved} leaders moved",
        r.acked.len(),
        r.failed.len(),
        r.undetermined.len(),
        reads.load(Ordering::Relaxed)
    );
}
