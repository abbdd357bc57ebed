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
//! Each run prints its seed and the command that replays it (`TXN_SEED`); a run takes 8 s
//! of workload (about 15 s in all on two cores), `TXN_LONG=1` 60 s.

mod support;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::{
    ChangeKind, KeyRead, Layout, LinkFaults, LossyRouter, ReadKind, SplitMix64, TestCluster,
    TxnHistory, TxnOutcome, TxnRecord, check_snapshot_isolation, fault_tolerant_client, long_run,
    region_change, seed_for,
};
use surge_raft_lite::NetFaults;
use surge_txn::{
    LocalCluster, LockMode, META_REGION_ID, Transaction, TxnClient, TxnError, TxnMode,
};

const ACCOUNTS: u64 = 8;
const REGISTERS: u64 = 8;
const KEYS: u64 = ACCOUNTS + REGISTERS;
const INITIAL: i64 = 1000;
const TOTAL: i64 = INITIAL * ACCOUNTS as i64;
const CLIENTS: u64 = 4;
/// The transaction that opens the accounts, and the final read.
const LOAD_ID: u64 = 1;
const FINAL_ID: u64 = 2;

/// The runs share the machine's two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Key `k`'s bytes: accounts 0..8, then registers. Accounts `2p` and `2p + 1` share a first
/// byte in region `p` of four, as do registers `2p` and `2p + 1` (a little further on).
fn key_bytes(k: u64) -> Vec<u8> {
    let (i, base, tag) = if k < ACCOUNTS {
        (k, 8, b'a')
    } else {
        (k - ACCOUNTS, 40, b'r')
    };
    let first = u8::try_from((i / 2) * 64 + base).expect("four pairs");
    vec![first, tag, u8::try_from(i).expect("few keys")]
}

fn is_account(k: u64) -> bool {
    k < ACCOUNTS
}

/// A value: the writing transaction, the key it is for, a balance (0 for registers).
fn encode(txn: u64, key: u64, balance: i64) -> Vec<u8> {
    format!("{txn}.{key}.{balance}").into_bytes()
}

/// `(writer, balance)` of key `k`'s value; `(0, INITIAL or 0)` for no value.
fn decode(k: u64, v: Option<&[u8]>) -> Result<(u64, i64), String> {
    let Some(v) = v else {
        return if is_account(k) {
            Err(format!("account {k} has no value"))
        } else {
            Ok((0, 0))
        };
    };
    let s = std::str::from_utf8(v).map_err(|e| format!("key {k}: {e}"))?;
    let parts: Vec<&str> = s.split('.').collect();
    let bad = || format!("key {k} holds {s:?}");
    let [txn, key, balance] = parts[..] else {
        return Err(bad());
    };
    let (txn, key, balance): (u64, u64, i64) = (
        txn.parse().map_err(|_| bad())?,
        key.parse().map_err(|_| bad())?,
        balance.parse().map_err(|_| bad())?,
    );
    if key != k {
        return Err(format!(
            "key {k} holds a value written for key {key}: {s:?}"
        ));
    }
    Ok((txn, balance))
}

/// Everything a run shares between its threads.
struct Run<'a> {
    history: TxnHistory,
    /// Corrupt values and snapshots whose accounts do not add up.
    violations: Mutex<Vec<String>>,
    /// Transactions by kind and outcome.
    tally: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Snapshot reads of every account.
    totals_checked: Mutex<u64>,
    /// Why each commit that failed or whose outcome is unknown did so, for the report.
    commit_errors: Mutex<BTreeMap<u64, String>>,
    stop: AtomicBool,
    cluster: &'a LocalCluster,
}

/// One transaction being run: its record, filled in as it goes.
struct Txn<'r, 'a> {
    run: &'r Run<'a>,
    t: Transaction,
    rec: TxnRecord,
    invoke: u64,
}

impl<'r, 'a> Txn<'r, 'a> {
    fn begin(
        run: &'r Run<'a>,
        client: &TxnClient,
        mode: TxnMode,
        id: u64,
        who: u64,
    ) -> Option<Self> {
        let invoke = run.history.now();
        let t = client.begin(mode).ok()?;
        let rec = TxnRecord {
            id,
            client: who,
            start_ts: t.start_ts(),
            reads: Vec::new(),
            writes: Vec::new(),
            outcome: TxnOutcome::Aborted,
            complete: 0,
        };
        Some(Txn {
            run,
            t,
            rec,
            invoke,
        })
    }

    fn violation(&self, what: String) {
        self.run
            .violations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!(
                "txn {} (start_ts {}): {what}",
                self.rec.id, self.rec.start_ts
            ));
    }

    fn note(
        &mut self,
        k: u64,
        v: Option<&[u8]>,
        kind: ReadKind,
        invoke: u64,
    ) -> Result<i64, TxnError> {
        match decode(k, v) {
            Ok((saw, balance)) => {
                self.rec.reads.push(KeyRead {
                    key: k,
                    saw,
                    kind,
                    invoke,
                });
                Ok(balance)
            }
            Err(e) => {
                self.violation(e.clone());
                Err(TxnError::Protocol { detail: e })
            }
        }
    }

    /// A snapshot read of `k`.
    fn get(&mut self, k: u64) -> Result<i64, TxnError> {
        let v = self.t.get(&key_bytes(k))?;
        self.note(k, v.as_deref(), ReadKind::Snapshot, self.invoke)
    }

    /// A snapshot read of `keys` in one batch; the balances in the order of `keys`.
    fn batch_get(&mut self, keys: &[u64]) -> Result<Vec<i64>, TxnError> {
        let bytes: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
        let pairs = self.t.batch_get(&bytes)?;
        let mut out = Vec::with_capacity(keys.len());
        for (&k, kb) in keys.iter().zip(&bytes) {
            let v = pairs
                .iter()
                .find(|(pk, _)| pk == kb)
                .map(|(_, v)| v.as_slice());
            out.push(self.note(k, v, ReadKind::Snapshot, self.invoke)?);
        }
        Ok(out)
    }

    /// A read of `k` for update: a locking read in a pessimistic transaction, a snapshot
    /// read in an optimistic one (checked at prewrite).
    fn get_for_update(&mut self, k: u64) -> Result<i64, TxnError> {
        let invoke = self.run.history.now();
        let v = self.t.get_for_update(&key_bytes(k))?;
        let kind = match self.t.mode() {
            TxnMode::Pessimistic => ReadKind::Latest,
            TxnMode::Optimistic => ReadKind::Snapshot,
        };
        let invoke = if kind == ReadKind::Snapshot {
            self.invoke
        } else {
            invoke
        };
        self.note(k, v.as_deref(), kind, invoke)
    }

    fn put(&mut self, k: u64, balance: i64) -> Result<(), TxnError> {
        if !self.rec.writes.contains(&k) {
            self.rec.writes.push(k);
        }
        self.t.put(&key_bytes(k), &encode(self.rec.id, k, balance))
    }

    /// Commits after `body` succeeded, rolls back after it failed; records the transaction.
    fn finish(mut self, kind: &'static str, body: Result<(), TxnError>) {
        let outcome = match body {
            Ok(()) => {
                let result = self.t.commit();
                if let Err(e) = &result {
                    self.run
                        .commit_errors
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(self.rec.id, e.to_string());
                }
                match result {
                    Ok(commit_ts) => TxnOutcome::Committed { commit_ts },
                    // The reply to a request that ran was lost or garbled: it may have
                    // committed. (A protocol error is not among the errors `commit`
                    // documents as "did not commit".)
                    Err(TxnError::Undetermined { .. } | TxnError::Protocol { .. }) => {
                        TxnOutcome::Unknown
                    }
                    Err(_) => TxnOutcome::Aborted,
                }
            }
            Err(_) => {
                let _ = self.t.rollback();
                TxnOutcome::Aborted
            }
        };
        self.rec.outcome = outcome;
        self.rec.complete = self.run.history.now();
        let label = match outcome {
            TxnOutcome::Committed { .. } => "committed",
            TxnOutcome::Unknown => "unknown",
            TxnOutcome::Aborted => "aborted",
        };
        *self
            .run
            .tally
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry((kind, label))
            .or_default() += 1;
        self.run.history.record(self.rec);
    }
}

/// Two distinct keys among `n` from `base`: half the time the two of one pair (one region
/// while no split parts them), else any two.
fn two_keys(rng: &mut SplitMix64, base: u64, n: u64) -> (u64, u64) {
    if rng.chance(50) {
        let p = rng.below(n / 2);
        (base + 2 * p, base + 2 * p + 1)
    } else {
        let a = rng.below(n);
        let b = (a + 1 + rng.below(n - 1)) % n;
        (base + a, base + b)
    }
}

/// One client thread: random transactions until the run stops.
fn client_loop(run: &Run<'_>, client: &TxnClient, who: u64, mut rng: SplitMix64) {
    let mut seq = 0;
    while !run.stop.load(Ordering::Relaxed) {
        seq += 1;
        let id = who * 10_000_000 + seq;
        let mode = if rng.chance(50) {
            TxnMode::Optimistic
        } else {
            TxnMode::Pessimistic
        };
        let Some(mut tx) = Txn::begin(run, client, mode, id, who) else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        match rng.below(100) {
            0..=34 => {
                let (from, to) = two_keys(&mut rng, 0, ACCOUNTS);
                let amount = i64::try_from(rng.range(1, 20)).expect("small");
                let body = (|| {
                    let a = tx.get_for_update(from)?;
                    let b = tx.get_for_update(to)?;
                    tx.put(from, a - amount)?;
                    tx.put(to, b + amount)
                })();
                tx.finish("transfer", body);
            }
            35..=49 => {
                let (a, b) = two_keys(&mut rng, ACCOUNTS, REGISTERS);
                let third = ACCOUNTS + rng.below(REGISTERS);
                let body = (|| {
                    tx.put(a, 0)?;
                    tx.put(b, 0)?;
                    if rng.chance(30) && third != a && third != b {
                        tx.put(third, 0)?;
                    }
                    Ok(())
                })();
                tx.finish("tuple write", body);
            }
            50..=64 => {
                let (a, b) = two_keys(&mut rng, ACCOUNTS, REGISTERS);
                let both = rng.chance(50);
                let account = rng.below(ACCOUNTS);
                let body = (|| {
                    // A snapshot read of an account it does not write, beside the update.
                    tx.get(account)?;
                    tx.get_for_update(a)?;
                    tx.put(a, 0)?;
                    if both {
                        tx.get_for_update(b)?;
                        tx.put(b, 0)?;
                    }
                    Ok(())
                })();
                tx.finish("read-modify-write", body);
            }
            65..=79 => {
                // Every account in one snapshot: the total never changes.
                let keys: Vec<u64> = (0..ACCOUNTS).collect();
                let body = tx.batch_get(&keys).map(|balances| {
                    let sum: i64 = balances.iter().sum();
                    *run.totals_checked.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                    if sum != TOTAL {
                        tx.violation(format!(
                            "a snapshot's accounts add up to {sum}, not {TOTAL}: {balances:?}"
                        ));
                    }
                });
                tx.finish("read all accounts", body);
            }
            80..=91 => {
                let n = rng.range(2, 5);
                let mut keys: Vec<u64> = (0..n).map(|_| rng.below(KEYS)).collect();
                keys.sort_unstable();
                keys.dedup();
                let batch = rng.chance(50);
                let body = if batch {
                    tx.batch_get(&keys).map(|_| ())
                } else {
                    keys.iter().try_for_each(|&k| tx.get(k).map(|_| ()))
                };
                tx.finish("read keys", body);
            }
            _ => {
                let k = rng.below(KEYS);
                let body = tx.get_for_update(k).map(|_| ());
                tx.finish("locking read", body);
            }
        }
    }
}

/// The clients' link in calm times: a few faults.
fn calm_link() -> LinkFaults {
    LinkFaults {
        drop_request: 3,
        drop_reply: 6,
        garble_reply: 2,
        late: 2,
        delay: 30,
        max_delay: Duration::from_millis(20),
    }
}

/// Raft messages between the nodes: 5-20 % lost, the rest delayed by up to 2-15 ms.
#[allow(clippy::field_reassign_with_default)] // set field by field: no struct literal of a
// type whose crate may make it `#[non_exhaustive]`
fn node_link_faults(rng: &mut SplitMix64) -> NetFaults {
    let mut f = NetFaults::default();
    f.drop_pct = u32::try_from(rng.range(5, 20)).unwrap_or(5);
    f.max_delay = Duration::from_millis(rng.range(2, 15));
    f
}

/// Network faults until the run stops, one at a time with calm in between; returns a line
/// per fault.
fn fault_loop(run: &Run<'_>, link: &LossyRouter, mut rng: SplitMix64) -> Vec<String> {
    let c = run.cluster;
    let started = Instant::now();
    let mut log = Vec::new();
    let sleep = |ms: u64| {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until && !run.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    while !run.stop.load(Ordering::Relaxed) {
        link.set(calm_link());
        sleep(rng.range(100, 400));
        let at = started.elapsed().as_millis();
        let hold = rng.range(200, 700);
        let line = match rng.below(4) {
            0 => {
                let mut f = calm_link();
                f.drop_request = 30;
                f.drop_reply = 50;
                f.garble_reply = 10;
                f.late = 15;
                f.delay = 150;
                f.max_delay = Duration::from_millis(50);
                link.set(f);
                sleep(hold);
                format!("lossy client link for {hold} ms")
            }
            1 => {
                let f = node_link_faults(&mut rng);
                c.set_faults(f);
                sleep(hold);
                c.set_faults(NetFaults::default());
                format!(
                    "node links drop {}%, delay up to {:?}, for {hold} ms",
                    f.drop_pct, f.max_delay
                )
            }
            2 => {
                let regions = c.regions();
                let group = if regions.is_empty() || rng.chance(20) {
                    META_REGION_ID
                } else {
                    regions[rng.below(regions.len() as u64) as usize].id
                };
                match c.leader_of_group(group) {
                    Some(leader) => {
                        let others: Vec<u64> = c
                            .node_ids()
                            .iter()
                            .copied()
                            .filter(|n| *n != leader)
                            .collect();
                        c.network().partition(&[leader], &others);
                        sleep(hold);
                        c.network().heal();
                        format!("partition leader {leader} of group {group} for {hold} ms")
                    }
                    None => format!("group {group} has no leader: no partition"),
                }
            }
            _ => {
                let nodes = c.node_ids();
                let node = nodes[rng.below(nodes.len() as u64) as usize];
                link.cut(node, true);
                sleep(hold);
                link.cut(node, false);
                format!("client cut off from node {node} for {hold} ms")
            }
        };
        log.push(format!("{at:>6} ms {line}"));
    }
    link.set(LinkFaults::default());
    c.set_faults(NetFaults::default());
    c.network().heal();
    log
}

/// Region changes without pause until the run stops; returns the count of successful
/// splits and merges and a line per change.
fn churn_loop(run: &Run<'_>, mut rng: SplitMix64) -> (u64, u64, Vec<String>) {
    let started = Instant::now();
    let (mut splits, mut merges, mut log) = (0, 0, Vec::new());
    while !run.stop.load(Ordering::Relaxed) {
        let at = started.elapsed().as_millis();
        let (kind, ok, line) = region_change(run.cluster, &mut rng, 3, 8);
        match (kind, ok) {
            (ChangeKind::Split, true) => splits += 1,
            (ChangeKind::Merge, true) => merges += 1,
            _ => {}
        }
        log.push(format!("{at:>6} ms {line}"));
        std::thread::sleep(Duration::from_millis(rng.range(20, 120)));
    }
    (splits, merges, log)
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
        let Ok(surge_txn::KvResponse::Status(s)) = c.call(*id, surge_txn::KvRequest::NodeStatus)
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
    let tc = TestCluster::start(layout);
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
    failures.extend(
        run.violations
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
    );
    if let Some(b) = balances
        && b.iter().sum::<i64>() != TOTAL
    {
        failures.push(format!(
            "the final balances {b:?} add up to {}",
            b.iter().sum::<i64>()
        ));
    }
    let checked = Instant::now();
    match check_snapshot_isolation(&txns) {
        Ok(summary) => eprintln!(
            "{test}: snapshot isolation holds ({summary:?}, checked in {:?})",
            checked.elapsed()
        ),
        Err(e) => failures.push(e),
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
