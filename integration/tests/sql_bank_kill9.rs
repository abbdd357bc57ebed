//! A bank over SQL through the MySQL protocol, on a cluster of `surgedb node` processes
//! whose nodes are killed with `kill -9` and restarted while transfers run (the serving
//! nodes and the regions' leaders included).
//!
//! Each transfer is one pessimistic transaction through the `mysql` crate (an independent
//! client): `SELECT ... FOR UPDATE` of both accounts, two `UPDATE`s and an `INSERT` into a
//! transfer log, then `COMMIT`. A worker whose connection breaks reconnects through another
//! node; 1213 and 1205 are retried as sysbench does. At the end, through every node:
//! - the total of the balances is what it was (no half transfer);
//! - every account's balance is its opening balance plus what the log says came in minus
//!   what went out (a transfer's log row commits exactly with its balance changes);
//! - every transfer whose `COMMIT` was acknowledged is in the log (nothing committed is
//!   lost); a transfer whose `COMMIT` broke with the connection may or may not be.

#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

mod common;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::ProcCluster;
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

const ACCOUNTS: u64 = 10;
const OPENING: i64 = 1000;
const WORKERS: u64 = 4;

/// A connection to node `id`'s MySQL port, with timeouts short enough that a dead node
/// costs seconds.
fn connect(c: &ProcCluster, id: u64) -> Result<Conn, mysql::Error> {
    let addr = c.manifest.node(id).unwrap().mysql_addr.clone().unwrap();
    let (host, port) = addr.rsplit_once(':').unwrap();
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some(host))
        .tcp_port(port.parse().unwrap())
        .user(Some("root"))
        .db_name(Some("bank"))
        .prefer_socket(false)
        .tcp_connect_timeout(Some(Duration::from_secs(2)))
        .read_timeout(Some(Duration::from_secs(30)))
        .write_timeout(Some(Duration::from_secs(30)));
    Conn::new(opts)
}

fn code(e: &mysql::Error) -> Option<u16> {
    match e {
        mysql::Error::MySqlError(e) => Some(e.code),
        _ => None,
    }
}

/// How one transfer ended.
enum Outcome {
    Committed,
    /// Refused by the server with a retryable code; the transaction is rolled back.
    Retry,
    /// The connection broke before `COMMIT` was sent: not committed.
    BrokenBefore,
    /// The connection broke during `COMMIT`: committed or not, unknown.
    BrokenInCommit,
}

/// The statements of one transfer before its `COMMIT`.
fn transfer_body(
    conn: &mut Conn,
    from: u64,
    to: u64,
    amount: i64,
    tag: &str,
) -> Result<(), mysql::Error> {
    conn.query_drop("BEGIN")?;
    let (lo, hi) = (from.min(to), from.max(to));
    conn.query_drop(format!("SELECT balance FROM acct WHERE id={lo} FOR UPDATE"))?;
    conn.query_drop(format!("SELECT balance FROM acct WHERE id={hi} FOR UPDATE"))?;
    conn.query_drop(format!(
        "UPDATE acct SET balance=balance-{amount} WHERE id={from}"
    ))?;
    conn.query_drop(format!(
        "UPDATE acct SET balance=balance+{amount} WHERE id={to}"
    ))?;
    conn.query_drop(format!(
        "INSERT INTO xfer (tag, src, dst, amount) VALUES ('{tag}', {from}, {to}, {amount})"
    ))
}

fn transfer(conn: &mut Conn, from: u64, to: u64, amount: i64, tag: &str) -> Outcome {
    if let Err(e) = transfer_body(conn, from, to, amount, tag) {
        return match code(&e) {
            Some(1213 | 1205) => Outcome::Retry,
            // Another refusal while a node is down (a region without a leader for longer
            // than the client's budget): the statement failed before COMMIT, so the
            // transaction commits nothing; roll it back and go on.
            Some(other) => {
                eprintln!("transfer {tag}: error {other}: {e}");
                let _ = conn.query_drop("ROLLBACK");
                Outcome::Retry
            }
            None => Outcome::BrokenBefore,
        };
    }
    match conn.query_drop("COMMIT") {
        Ok(()) => Outcome::Committed,
        Err(e) => match code(&e) {
            Some(1213 | 1205) => Outcome::Retry,
            // Any other failure of COMMIT may leave it committed or not.
            Some(other) => {
                eprintln!("commit of {tag}: error {other}: {e}");
                Outcome::BrokenInCommit
            }
            None => Outcome::BrokenInCommit,
        },
    }
}

#[test]
fn transfers_through_kill9_of_nodes_keep_every_balance_and_every_acknowledged_commit() {
    let c = ProcCluster::start(3, "in-memory");
    let mut setup = connect_first(&c);
    setup
        .query_drop("CREATE DATABASE IF NOT EXISTS bank")
        .unwrap();
    setup.query_drop("USE bank").unwrap();
    setup
        .query_drop("CREATE TABLE acct (id INT PRIMARY KEY, balance BIGINT NOT NULL)")
        .unwrap();
    setup
        .query_drop(
            "CREATE TABLE xfer (tag VARCHAR(40) PRIMARY KEY, src INT NOT NULL, \
             dst INT NOT NULL, amount BIGINT NOT NULL, KEY by_src (src))",
        )
        .unwrap();
    let rows: Vec<String> = (1..=ACCOUNTS)
        .map(|i| format!("({i}, {OPENING})"))
        .collect();
    setup
        .query_drop(format!("INSERT INTO acct VALUES {}", rows.join(",")))
        .unwrap();
    drop(setup);

    let stop = AtomicBool::new(false);
    let acknowledged = Mutex::new(Vec::<String>::new());
    let unknown = AtomicU64::new(0);
    let committed_after_last_kill = AtomicU64::new(0);
    let last_kill_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let (c, stop, acknowledged, unknown) = (&c, &stop, &acknowledged, &unknown);
            let (after, last_kill_done) = (&committed_after_last_kill, &last_kill_done);
            s.spawn(move || {
                let mut node = 1 + w % 3;
                let mut conn: Option<Conn> = None;
                let mut seq = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let Some(cn) = conn.as_mut() else {
                        match connect(c, node) {
                            Ok(cn) => conn = Some(cn),
                            Err(_) => {
                                node = node % 3 + 1;
                                std::thread::sleep(Duration::from_millis(100));
                            }
                        }
                        continue;
                    };
                    seq += 1;
                    let from = 1 + (seq * 7 + w) % ACCOUNTS;
                    let to = 1 + (seq * 3 + w + 1) % ACCOUNTS;
                    if from == to {
                        continue;
                    }
                    let tag = format!("w{w}-{seq}");
                    let amount = i64::try_from(1 + seq % 50).unwrap();
                    match transfer(cn, from, to, amount, &tag) {
                        Outcome::Committed => {
                            acknowledged.lock().unwrap().push(tag);
                            if last_kill_done.load(Ordering::SeqCst) {
                                after.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        Outcome::Retry => {}
                        Outcome::BrokenBefore => {
                            conn = None;
                            node = node % 3 + 1;
                        }
                        Outcome::BrokenInCommit => {
                            unknown.fetch_add(1, Ordering::SeqCst);
                            conn = None;
                            node = node % 3 + 1;
                        }
                    }
                }
            });
        }
        // Faults: a follower-or-server node, then node 1 (which leads every region of a
        // fresh cluster), each killed mid-run and restarted.
        std::thread::sleep(Duration::from_secs(3));
        for node in [2, 1] {
            c.kill9(node);
            std::thread::sleep(Duration::from_secs(2));
            c.restart(node);
            std::thread::sleep(Duration::from_secs(3));
        }
        last_kill_done.store(true, Ordering::SeqCst);
        // Progress after the faults, then stop.
        let deadline = Instant::now() + Duration::from_secs(60);
        while committed_after_last_kill.load(Ordering::SeqCst) < 20 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        stop.store(true, Ordering::SeqCst);
    });
    let acknowledged = acknowledged.into_inner().unwrap();
    assert!(
        committed_after_last_kill.load(Ordering::SeqCst) >= 20,
        "transfers stopped going through after the kills ({} acknowledged in all)",
        acknowledged.len()
    );

    for id in 1..=3 {
        let mut conn = connect(&c, id).unwrap();
        let total: i64 = conn
            .query_first("SELECT SUM(balance) FROM acct")
            .unwrap()
            .unwrap();
        assert_eq!(
            total,
            OPENING * i64::try_from(ACCOUNTS).unwrap(),
            "total through node {id}"
        );
        let log: Vec<(String, u64, u64, i64)> = conn
            .query("SELECT tag, src, dst, amount FROM xfer")
            .unwrap();
        let balances: Vec<(u64, i64)> = conn.query("SELECT id, balance FROM acct").unwrap();
        for (acct, balance) in &balances {
            let moved: i64 = log
                .iter()
                .map(|(_, src, dst, amount)| {
                    i64::from(dst == acct) * amount - i64::from(src == acct) * amount
                })
                .sum();
            assert_eq!(
                *balance,
                OPENING + moved,
                "account {acct} through node {id}: its balance and the transfer log disagree"
            );
        }
        let logged: HashSet<&str> = log.iter().map(|(tag, ..)| tag.as_str()).collect();
        let lost: Vec<&String> = acknowledged
            .iter()
            .filter(|t| !logged.contains(t.as_str()))
            .collect();
        assert!(
            lost.is_empty(),
            "acknowledged transfers missing through node {id}: {lost:?}"
        );
        assert!(
            log.len()
                <= acknowledged.len() + usize::try_from(unknown.load(Ordering::SeqCst)).unwrap(),
            "more transfers logged ({}) than acknowledged ({}) or in doubt",
            log.len(),
            acknowledged.len()
        );
    }
    eprintln!(
        "{} transfers acknowledged, {} in doubt (connection lost during COMMIT)",
        acknowledged.len(),
        unknown.load(Ordering::SeqCst)
    );
}

/// A connection to whichever node answers first (without a database: it is created here).
fn connect_first(c: &ProcCluster) -> Conn {
    let addr = c.manifest.node(1).unwrap().mysql_addr.clone().unwrap();
    let (host, port) = addr.rsplit_once(':').unwrap();
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some(host))
        .tcp_port(port.parse().unwrap())
        .user(Some("root"))
        .prefer_socket(false);
    Conn::new(opts).unwrap()
}
