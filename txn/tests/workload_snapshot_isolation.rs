//! Snapshot isolation of multi-key transactions while regions change and the network fails:
//! the register and region-change workloads, widened to transactions over several keys.
//!
//! Sixteen keys over four regions: eight bank accounts and eight registers, in pairs that
//! share a region (until a split parts them), so a transaction on one pair commits in one
//! phase and others in two. Four client threads run, in optimistic and pessimistic
//! transactions (the test's lock mode: sync, pipelined or in-memory):
//! - transfers between two accounts (read both, write both);
//! - blind writes of two or three registers (a tuple written by one transaction);
//! - read-modify-writes of registers, with a snapshot read of an account beside them;
//! - snapshot reads of several keys, or of every account (whose total never changes);
//! - locking reads without a write.
//!
//! Meanwhile one thread transfers leaders, splits and merges regions without pause, and
//! another injects network faults: on the clients' link (requests lost, replies lost or
//! garbled after the request ran, requests delivered late after the client gave up,
//! delays, the client cut off from a node: [`support::LossyRouter`]) and between the nodes
//! (Raft messages dropped and delayed, a region's or the meta group's leader partitioned).
//!
//! Every value names the transaction that wrote it, so each read says which transaction's
//! write it saw. The history (start and commit timestamps, reads, writes, outcomes) must be
//! consistent with snapshot isolation (`surge_testkit::check_snapshot_isolation`): no read
//! sees an aborted write, a partial transaction or a version above its snapshot, none misses
//! a commit at or below it or one acknowledged before it began, and no read-modify-write
//! commits over a version other than the one it read (no lost update). A commit whose
//! outcome is unknown may have happened or not, but all of it or none. Besides, every
//! snapshot of all the accounts adds up to the opening total, and a final read after the
//! faults heal (it joins the history) must show every acknowledged commit.
//!
//! Each run prints its seed and the command that replays it (`TXN_SEED`; the seed fixes
//! the choices, not the threads' timing, so a replay is likelier, not certain, to fail the
//! same way). A run has 8 s of workload, 10-13 s in all on two shared cores (a final read
//! that cannot get through adds its 30 s of retries); `TXN_LONG=1`: 60 s of workload.

#[path = "workload_snapshot_isolation/clients.rs"]
mod clients;
#[path = "workload_snapshot_isolation/disturbance.rs"]
mod disturbance;
#[path = "workload_snapshot_isolation/recorder.rs"]
mod recorder;
mod support;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clients::client_loop;
use disturbance::{churn_loop, fault_loop};
use recorder::{ACCOUNTS, INITIAL, KEYS, Run, TOTAL, decode, encode, is_account, key_bytes};
use support::{
    KeyRead, Layout, LossyRouter, ReadKind, SplitMix64, TestCluster, TxnHistory, TxnOutcome,
    TxnRecord, check_snapshot_isolation, fault_tolerant_client, long_run, seed_for,
};
use surge_txn::{LocalCluster, LockMode, TxnClient, TxnError, TxnMode};

const CLIENTS: u64 = 4;
/// The transaction that opens the accounts, and the final read.
const LOAD_ID: u64 = 1;
const FINAL_ID: u64 = 2;

/// The runs share the machine's two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

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

/// Every key in one snapshot, retried for up to 30 s: its record and the balances.
fn final_read(client: &TxnClient, history: &TxnHistory) -> Result<(TxnRecord, Vec<i64>), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let keys: Vec<u64> = (0..KEYS).collect();
    let bytes: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
    loop {
        let invoke = history.now();
        let attempt = client.begin(TxnMode::Optimistic).and_then(|mut t| {
            let pairs = t.batch_get(&bytes)?;
            Ok((t.start_ts(), pairs))
        });
        let (start_ts, pairs) = match attempt {
            Ok(v) => v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("final read: {e}; retrying");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        let mut reads = Vec::new();
        let mut balances = Vec::new();
        for (&k, kb) in keys.iter().zip(&bytes) {
            let v = pairs
                .iter()
                .find(|(pk, _)| pk == kb)
                .map(|(_, v)| v.as_slice());
            let (saw, balance) = decode(k, v)?;
            reads.push(KeyRead {
                key: k,
                saw,
                kind: ReadKind::Snapshot,
                invoke,
            });
            if is_account(k) {
                balances.push(balance);
            }
        }
        let rec = TxnRecord {
            id: FINAL_ID,
            client: 0,
            start_ts,
            reads,
            writes: Vec::new(),
            outcome: TxnOutcome::Committed {
                commit_ts: start_ts,
            },
            complete: history.now(),
        };
        return Ok((rec, balances));
    }
}

/// The regions as the meta group lists them and as each node holds them, for a report.
fn routing(c: &LocalCluster) -> String {
    let range = |r: &surge_txn::RegionInfo| {
        format!("{} [{:?}, {:?}) v{}", r.id, r.start, r.end, r.epoch.version)
    };
    let meta: Vec<String> = c.regions().iter().map(range).collect();
    let mut out = format!("the meta group's regions: {meta:?}");
    for id in c.node_ids() {
        let Ok(surge_txn::rpc::KvResponse::Status(s)) =
            c.call(*id, surge_txn::rpc::KvRequest::NodeStatus)
        else {
            continue;
        };
        let held: Vec<String> = s
            .regions
            .iter()
            .map(|r| format!("{} leader {:?}", range(&r.region), r.leader))
            .collect();
        out.push_str(&format!("; node {id} holds {held:?}"));
    }
    out
}

fn run_workload(test: &str, lock_mode: LockMode) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed_for("workload_snapshot_isolation", test);
    let mut rng = SplitMix64::new(seed);
    let run_for = Duration::from_secs(if long_run() { 60 } else { 8 });
    let mut layout = Layout::new(4, lock_mode);
    layout.seed = seed;
    // A voluntary transfer that cannot finish is abandoned after 2 s (not 10): the churn
    // thread waits for each change, and a long wait would leave the run without changes.
    let tc = TestCluster::start_with(layout, |config| {
        config.transfer_timeout = Duration::from_secs(2);
    });
    let c = &tc.cluster;
    // The final read and the opening go around the faults.
    let direct = tc.client(fault_tolerant_client());
    let history = TxnHistory::new();
    let load = eventually("open the accounts", || {
        let mut t = direct.begin(TxnMode::Optimistic)?;
        for k in 0..ACCOUNTS {
            t.put(&key_bytes(k), &encode(LOAD_ID, k, INITIAL))?;
        }
        let start_ts = t.start_ts();
        t.commit().map(|commit_ts| (start_ts, commit_ts))
    });
    history.record(TxnRecord {
        id: LOAD_ID,
        client: 0,
        start_ts: load.0,
        reads: Vec::new(),
        writes: (0..ACCOUNTS).collect(),
        outcome: TxnOutcome::Committed { commit_ts: load.1 },
        complete: history.now(),
    });

    let link = LossyRouter::new(c.router(), seed ^ 0x5eed);
    let client = TxnClient::new(link.router(), fault_tolerant_client());
    let run = Run {
        history,
        violations: Mutex::new(Vec::new()),
        tally: Mutex::new(BTreeMap::new()),
        totals_checked: Mutex::new(0),
        commit_errors: Mutex::new(BTreeMap::new()),
        stop: AtomicBool::new(false),
        cluster: c,
    };
    eprintln!("{test}: {lock_mode} locks, {run_for:?} of workload");
    let started = Instant::now();
    let (fault_log, (splits, merges, churn_log)) = std::thread::scope(|s| {
        let faults = {
            let (run, link, rng) = (&run, &link, rng.fork());
            s.spawn(move || fault_loop(run, link, rng))
        };
        let churn = {
            let (run, rng) = (&run, rng.fork());
            s.spawn(move || churn_loop(run, rng))
        };
        let clients: Vec<_> = (1..=CLIENTS)
            .map(|who| {
                let (run, client, rng) = (&run, client.clone(), rng.fork());
                s.spawn(move || client_loop(run, &client, who, rng))
            })
            .collect();
        while started.elapsed() < run_for {
            std::thread::sleep(Duration::from_millis(20));
        }
        run.stop.store(true, Ordering::SeqCst);
        for h in clients {
            h.join().expect("client thread");
        }
        (
            faults.join().expect("fault thread"),
            churn.join().expect("churn thread"),
        )
    });
    let elapsed = started.elapsed();
    for line in &fault_log {
        eprintln!("{test}: fault {line}");
    }
    for line in &churn_log {
        eprintln!("{test}: change {line}");
    }
    link.heal_and_drain();
    tc.heal_all(lock_mode);

    // Every key in one snapshot, after everything was acknowledged: it joins the history.
    let mut failures = Vec::new();
    let mut balances = None;
    match final_read(&direct, &run.history) {
        Ok((rec, b)) => {
            run.history.record(rec);
            balances = Some(b);
        }
        Err(e) => failures.push(format!(
            "the final read failed for 30 s after the faults healed: {e}; {}",
            routing(c)
        )),
    }
    let txns = run.history.txns();
    let tally = run.tally.into_inner().unwrap_or_else(|e| e.into_inner());
    let committed: u64 = tally
        .iter()
        .filter(|((kind, outcome), _)| *outcome == "committed" && !kind.starts_with("read"))
        .map(|(_, n)| n)
        .sum();
    let counters = client.counters();
    eprintln!(
        "{test}: {:.1} s, {} transactions {tally:?}; {} snapshots of every account; \
         {splits} splits and {merges} merges, {} regions at the end; client link: {}; \
         node network: {:?}; client {counters:?}; nodes {:?}",
        elapsed.as_secs_f64(),
        txns.len(),
        run.totals_checked
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
        c.regions().len(),
        link.stats(),
        c.network().stats(),
        c.counters()
    );
    let checked = Instant::now();
    match check_snapshot_isolation(&txns) {
        Ok(summary) => eprintln!(
            "{test}: snapshot isolation holds ({summary:?}, checked in {:?})",
            checked.elapsed()
        ),
        Err(e) => failures.push(e),
    }
    // The first few bad values and totals (one broken transaction shows in every later
    // snapshot of its keys), then how many more.
    let violations = run
        .violations
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    failures.extend(violations.iter().take(5).cloned());
    if violations.len() > 5 {
        failures.push(format!(
            "... and {} more bad values or snapshot totals",
            violations.len() - 5
        ));
    }
    if let Some(b) = balances
        && b.iter().sum::<i64>() != TOTAL
    {
        failures.push(format!(
            "the final balances {b:?} add up to {}",
            b.iter().sum::<i64>()
        ));
    }
    if !failures.is_empty() {
        // What the client said of the commits the failures name.
        let errors = run
            .commit_errors
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let text = failures.join("\n");
        for (id, e) in &errors {
            if text.contains(&format!("txn {id} ")) {
                eprintln!("{test}: txn {id}'s commit returned: {e}");
            }
        }
        for f in &failures {
            eprintln!("{test}: FAILURE {f}");
        }
        panic!(
            "{test} (seed {seed}): {} failure(s), listed above; the first: {}",
            failures.len(),
            failures[0]
        );
    }
    assert!(committed > 0, "{test}: no writing transaction committed");
    assert!(counters.one_pc_commits > 0, "{test}: no one-phase commit");
    assert!(
        splits + merges > 0,
        "{test}: no split or merge succeeded: the run proves nothing about them"
    );
}

#[test]
fn snapshot_isolation_with_sync_locks_under_region_changes_and_network_faults() {
    run_workload(
        "snapshot_isolation_with_sync_locks_under_region_changes_and_network_faults",
        LockMode::Sync,
    );
}

#[test]
fn snapshot_isolation_with_pipelined_locks_under_region_changes_and_network_faults() {
    run_workload(
        "snapshot_isolation_with_pipelined_locks_under_region_changes_and_network_faults",
        LockMode::Pipelined,
    );
}

#[test]
fn snapshot_isolation_with_in_memory_locks_under_region_changes_and_network_faults() {
    run_workload(
        "snapshot_isolation_with_in_memory_locks_under_region_changes_and_network_faults",
        LockMode::InMemory,
    );
}
