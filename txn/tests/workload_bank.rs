//! Bank workload: eight accounts over four regions, four client threads moving random
//! amounts between two accounts per transaction, a checker thread reading every account in
//! one snapshot, and a seeded schedule of crashes, leader partitions and leader transfers.
//!
//! What the results prove:
//! - every snapshot sees the same total: no transaction is seen half-applied, and a lost
//!   in-memory lock never lets two transfers both commit on a stale balance (the total
//!   would drift);
//! - after the faults heal, each account holds its initial balance plus the deltas of every
//!   acknowledged transfer plus those of some subset of the transfers whose outcome was
//!   unknown: an acknowledged commit is never lost and an aborted one never applied;
//! - something committed (a run where everything aborted proves nothing and fails).
//!
//! Run once per mode: optimistic, and pessimistic with Sync, Pipelined and InMemory locks.
//! Each run prints its seed and the command that replays it; `TXN_LONG=1` runs 30 s per
//! mode instead of 3.

mod support;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::{FaultSchedule, Layout, SplitMix64, TestCluster, fault_tolerant_client, long_run};
use surge_txn::{LockMode, Transaction, TxnClient, TxnError, TxnMode, rpc::META_REGION_ID};

const ACCOUNTS: usize = 8;
const INITIAL: i64 = 1000;
const CLIENTS: usize = 4;

/// The four runs share the machine's two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Account `i`'s key: first bytes 0, 32, .., 224, so the four even regions hold two each
/// (transfers inside a region commit in one phase, others in two).
fn account_key(i: usize) -> Vec<u8> {
    let first = u8::try_from(i * 32).expect("eight accounts");
    vec![
        first,
        b'a',
        b'c',
        b'c',
        b'0' + u8::try_from(i).expect("eight accounts"),
    ]
}

fn decode(v: Option<Vec<u8>>) -> Result<i64, String> {
    let v = v.ok_or("account missing")?;
    let s = std::str::from_utf8(&v).map_err(|e| e.to_string())?;
    s.parse().map_err(|e| format!("balance {s:?}: {e}"))
}

/// A transfer drawn by a client.
#[derive(Debug, Clone, Copy)]
struct Transfer {
    from: usize,
    to: usize,
    amount: i64,
}

/// What happened to the transfers and the snapshot checks of one run.
#[derive(Debug, Default)]
struct Tally {
    committed: u64,
    aborted: BTreeMap<&'static str, u64>,
    unknown: Vec<Transfer>,
    acked: [i64; ACCOUNTS],
    checks: u64,
    check_errors: BTreeMap<&'static str, u64>,
    violations: Vec<String>,
}

/// The error's variant, to count aborts by cause.
fn cause(e: &TxnError) -> &'static str {
    match e {
        TxnError::WriteConflict { .. } => "write_conflict",
        TxnError::LockWaitTimeout { .. } => "lock_wait_timeout",
        TxnError::Deadlock { .. } => "deadlock",
        TxnError::KeyIsLocked { .. } => "key_is_locked",
        TxnError::PessimisticLockNotFound { .. } => "pessimistic_lock_not_found",
        TxnError::PessimisticLockRolledBack { .. } => "pessimistic_lock_rolled_back",
        TxnError::TxnLockNotFound { .. } => "txn_lock_not_found",
        TxnError::CommitTsExpired { .. } => "commit_ts_expired",
        TxnError::Undetermined { .. } => "undetermined",
        TxnError::Region(_) => "region",
        TxnError::Unavailable(_) => "unavailable",
        _ => "other",
    }
}

/// Reads account `i` in `t`: a locking read in a pessimistic transaction, a snapshot read
/// (checked at prewrite) in an optimistic one.
fn read_balance(t: &mut Transaction, i: usize) -> Result<Result<i64, String>, TxnError> {
    let v = match t.mode() {
        TxnMode::Pessimistic => t.get_for_update(&account_key(i))?,
        TxnMode::Optimistic => t.get(&account_key(i))?,
        other => panic!("the bank workload runs no {other:?} transactions"),
    };
    Ok(decode(v))
}

/// One transfer transaction. `Ok(Err(_))` is a corrupt balance (a test failure).
fn transfer(
    client: &TxnClient,
    mode: TxnMode,
    tr: Transfer,
) -> Result<Result<(), String>, TxnError> {
    let mut t = client.begin(mode)?;
    let from = match read_balance(&mut t, tr.from)? {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let to = match read_balance(&mut t, tr.to)? {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    t.put(
        &account_key(tr.from),
        (from - tr.amount).to_string().as_bytes(),
    )?;
    t.put(&account_key(tr.to), (to + tr.amount).to_string().as_bytes())?;
    t.commit()?;
    Ok(Ok(()))
}

/// Every balance, in one snapshot.
fn read_all(client: &TxnClient) -> Result<Result<[i64; ACCOUNTS], String>, TxnError> {
    let mut t = client.begin(TxnMode::Optimistic)?;
    let keys: Vec<Vec<u8>> = (0..ACCOUNTS).map(account_key).collect();
    let pairs = t.batch_get(&keys)?;
    let start_ts = t.start_ts();
    t.commit()?;
    let mut out = [0; ACCOUNTS];
    for (i, slot) in out.iter_mut().enumerate() {
        let v = pairs
            .iter()
            .find(|(k, _)| *k == account_key(i))
            .map(|(_, v)| v.clone());
        *slot = match decode(v) {
            Ok(b) => b,
            Err(e) => return Ok(Err(format!("snapshot {start_ts}: account {i}: {e}"))),
        };
    }
    Ok(Ok(out))
}

/// Retries `f` for up to 30 s (the cluster is healing).
fn eventually<T>(what: &str, mut f: impl FnMut() -> Result<T, TxnError>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("{what}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{what} failed for 30 s: {e}"),
        }
    }
}

/// Whether some subset of `unknown` moves the balances from `base` to `fin`: exactly by
/// search when there are few, else per account within the reachable bounds.
fn explained_by_unknown(
    base: &[i64; ACCOUNTS],
    fin: &[i64; ACCOUNTS],
    unknown: &[Transfer],
) -> Result<(), String> {
    if unknown.len() <= 16 {
        for mask in 0u32..(1 << unknown.len()) {
            let mut b = *base;
            for (j, tr) in unknown.iter().enumerate() {
                if mask & (1 << j) != 0 {
                    b[tr.from] -= tr.amount;
                    b[tr.to] += tr.amount;
                }
            }
            if b == *fin {
                return Ok(());
            }
        }
        return Err(format!(
            "no subset of the {} unknown transfers {unknown:?} turns the acknowledged \
             balances {base:?} into the final {fin:?}",
            unknown.len()
        ));
    }
    for i in 0..ACCOUNTS {
        let lo: i64 = unknown
            .iter()
            .filter(|t| t.from == i)
            .map(|t| t.amount)
            .sum();
        let hi: i64 = unknown.iter().filter(|t| t.to == i).map(|t| t.amount).sum();
        if fin[i] < base[i] - lo || fin[i] > base[i] + hi {
            return Err(format!(
                "account {i}: final {} outside [{}, {}] (acknowledged {} with {} unknown \
                 transfers)",
                fin[i],
                base[i] - lo,
                base[i] + hi,
                base[i],
                unknown.len()
            ));
        }
    }
    Ok(())
}

fn run_bank(test: &str, mode: TxnMode, lock_mode: LockMode) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = support::seed_for("workload_bank", test);
    let mut rng = SplitMix64::new(seed);
    let run_for = Duration::from_secs(if long_run() { 30 } else { 3 });
    let mut layout = Layout::new(4, LockMode::InMemory);
    layout.seed = seed;
    let tc = TestCluster::start(layout);
    tc.cluster.set_lock_mode(lock_mode);
    let client = tc.client(fault_tolerant_client());

    // Open the accounts.
    eventually("open accounts", || {
        let mut t = client.begin(TxnMode::Optimistic)?;
        for i in 0..ACCOUNTS {
            t.put(&account_key(i), INITIAL.to_string().as_bytes())?;
        }
        t.commit()
    });
    let total = INITIAL * ACCOUNTS as i64;

    let mut groups: Vec<u64> = tc.cluster.regions().iter().map(|r| r.id).collect();
    groups.push(META_REGION_ID);
    let schedule = FaultSchedule::random(&mut rng, tc.cluster.node_ids(), &groups, run_for);
    eprintln!("{test}: {mode} transactions, {lock_mode} locks, faults:\n{schedule}");

    let tally = Mutex::new(Tally::default());
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let deadline = started + run_for;
    let fault_log = std::thread::scope(|s| {
        let faults = s.spawn(|| schedule.run(&tc.cluster, lock_mode, &stop));
        let checker = {
            let (client, tally, stop) = (client.clone(), &tally, &stop);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let outcome = read_all(&client);
                    let mut t = tally.lock().unwrap_or_else(|e| e.into_inner());
                    match outcome {
                        Ok(Ok(b)) if b.iter().sum::<i64>() == total => t.checks += 1,
                        Ok(Ok(b)) => t.violations.push(format!(
                            "snapshot total {} != {total}: {b:?}",
                            b.iter().sum::<i64>()
                        )),
                        Ok(Err(corrupt)) => t.violations.push(corrupt),
                        Err(e) => *t.check_errors.entry(cause(&e)).or_default() += 1,
                    }
                }
            })
        };
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let mut rng = rng.fork();
                let (client, tally) = (client.clone(), &tally);
                s.spawn(move || {
                    while Instant::now() < deadline {
                        let tr = draw_transfer(&mut rng);
                        let outcome = transfer(&client, mode, tr);
                        let mut t = tally.lock().unwrap_or_else(|e| e.into_inner());
                        match outcome {
                            Ok(Ok(())) => {
                                t.committed += 1;
                                t.acked[tr.from] -= tr.amount;
                                t.acked[tr.to] += tr.amount;
                            }
                            Ok(Err(corrupt)) => t.violations.push(corrupt),
                            Err(TxnError::Undetermined { .. }) => t.unknown.push(tr),
                            Err(e) => *t.aborted.entry(cause(&e)).or_default() += 1,
                        }
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().expect("client thread");
        }
        // The last transfers are done: stop the checker and whatever fault is in force.
        stop.store(true, Ordering::Relaxed);
        checker.join().expect("checker thread");
        faults.join().expect("fault thread")
    });
    let elapsed = started.elapsed();
    for line in &fault_log {
        eprintln!("{test}: fault {line}");
    }

    tc.heal_all(lock_mode);
    let fin = eventually("final read", || read_all(&client)).unwrap_or_else(|e| panic!("{e}"));
    let t = tally.into_inner().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "{test}: {:.1} s: committed {}, aborted {:?} ({} in all), unknown outcome {}, \
         snapshot checks {} (failed reads {:?}); client {:?}",
        elapsed.as_secs_f64(),
        t.committed,
        t.aborted,
        t.aborted.values().sum::<u64>(),
        t.unknown.len(),
        t.checks,
        t.check_errors,
        client.counters()
    );
    assert!(t.violations.is_empty(), "{test}: {:#?}", t.violations);
    assert!(t.committed > 0, "{test}: nothing committed in {elapsed:?}");
    assert!(t.checks > 0, "{test}: no snapshot check succeeded");
    assert_eq!(fin.iter().sum::<i64>(), total, "{test}: final total");
    let mut base = [INITIAL; ACCOUNTS];
    for (b, d) in base.iter_mut().zip(t.acked) {
        *b += d;
    }
    if let Err(e) = explained_by_unknown(&base, &fin, &t.unknown) {
        panic!("{test}: acknowledged transfers lost or aborted ones applied: {e}");
    }
}

fn draw_transfer(rng: &mut SplitMix64) -> Transfer {
    let n = ACCOUNTS as u64;
    let from = rng.below(n);
    let to = (from + 1 + rng.below(n - 1)) % n;
    Transfer {
        from: usize::try_from(from).expect("small"),
        to: usize::try_from(to).expect("small"),
        amount: i64::try_from(rng.range(1, 10)).expect("small"),
    }
}

#[test]
fn bank_optimistic() {
    run_bank("bank_optimistic", TxnMode::Optimistic, LockMode::InMemory);
}

#[test]
fn bank_pessimistic_sync_locks() {
    run_bank(
        "bank_pessimistic_sync_locks",
        TxnMode::Pessimistic,
        LockMode::Sync,
    );
}

#[test]
fn bank_pessimistic_pipelined_locks() {
    run_bank(
        "bank_pessimistic_pipelined_locks",
        TxnMode::Pessimistic,
        LockMode::Pipelined,
    );
}

#[test]
fn bank_pessimistic_in_memory_locks() {
    run_bank(
        "bank_pessimistic_in_memory_locks",
        TxnMode::Pessimistic,
        LockMode::InMemory,
    );
}
