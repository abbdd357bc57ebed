//! The original write-ups, run as their authors ran them: SQL typed into the stock `mariadb`
//! client and sysbench 1.0.20, against a cluster of `surgedb node` processes serving the
//! MySQL protocol.
//!
//! - AliSQL's hot-row transcript (`update /*+ commit_on_success ... */`, `select ... from
//!   update`, `show global status like '%Group_update%'`), with the same results;
//! - TiKV 6.0's lock-loss transcript: T1 and T2 both `begin; delete from t where id=1;`, T2
//!   blocks, the row's leader node is killed with `kill -9`; with in-memory locks T2's delete
//!   goes through and commits while T1's commit fails naming `PessimisticLockNotFound`, with
//!   sync locks T1 commits; with the leader stopped cleanly (`cluster stop --node`) instead,
//!   its in-memory lock moves to the new leader and T1 commits;
//! - a transaction older than the GC life time: its next read gets error 1105 naming the
//!   life time;
//! - sysbench's `oltp_write_only`, `oltp_read_write`, `oltp_point_select` and
//!   `oltp_update_index`: prepare, run at 1 and 16 threads with prepared statements and with
//!   `--db-ps-mode=disable`, cleanup, with no FATAL error.
//!
//! The clients are real programs. When one is missing the test prints `SKIPPED: ...` and
//! passes, unless `SURGE_REQUIRE_MARIADB_BINLOG=1` (the `mariadb` client comes in the same
//! package as `mariadb-binlog`) or `SURGE_REQUIRE_SYSBENCH=1` is set, as in CI.

#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::ProcCluster;

/// Whether `program` runs here; when it does not, prints `SKIPPED` or, if `require_env` is
/// set to 1, fails.
fn have(program: &str, require_env: &str, package: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var(require_env).as_deref() != Ok("1"),
            "{program} is required ({require_env}=1) but not installed (apt-get install {package})"
        );
        eprintln!("SKIPPED: {program} is not installed (apt-get install {package})");
    }
    found
}

fn have_mariadb() -> bool {
    have("mariadb", "SURGE_REQUIRE_MARIADB_BINLOG", "mariadb-client")
}

/// The MySQL address (`host`, `port`) of node `id`.
fn mysql_addr(c: &ProcCluster, id: u64) -> (String, String) {
    let addr = c
        .manifest
        .node(id)
        .unwrap()
        .mysql_addr
        .clone()
        .expect("cluster.json names the node's mysql_addr");
    let (h, p) = addr.rsplit_once(':').unwrap();
    (h.to_string(), p.to_string())
}

/// Runs `sql` through `mariadb --comments -N -B` (tab-separated rows, no headers) on node
/// `id`, returning (success, stdout, stderr).
fn mariadb(c: &ProcCluster, id: u64, extra: &[&str], sql: &str) -> (bool, String, String) {
    let (h, p) = mysql_addr(c, id);
    let mut child = Command::new("mariadb")
        .args(["--comments", &format!("-h{h}"), &format!("-P{p}"), "-uroot"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// As [`mariadb`], failing the test on an error.
fn sql_ok(c: &ProcCluster, id: u64, sql: &str) -> String {
    let (ok, out, err) = mariadb(c, id, &["-N", "-B"], sql);
    assert!(
        ok,
        "mariadb failed on:\n{sql}\nstdout:\n{out}\nstderr:\n{err}"
    );
    out
}

#[test]
fn the_hot_row_transcript_gives_the_write_ups_results() {
    if !have_mariadb() {
        return;
    }
    let c = ProcCluster::start(3, "in-memory");
    let out = sql_ok(
        &c,
        2,
        "create database s004; use s004;
         set global hotspot=ON; set global hotspot_lock_type=ON;
         create table test (id int primary key, data int);
         insert into test values (1, 1);
         update /*+ commit_on_success */ test set data = data + 1 where id = 1;
         select * from test;
         update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ test set data = data + 1 where id = 1;
         select * from test;
         select id, data from update /*+ commit_on_success */ test set data = data + 1 where id = 1;
         select * from test;
         show global status like '%Group_update%';",
    );
    let lines: Vec<&str> = out.lines().collect();
    // The selects, in order: after the first update 2, after the second 3, the select from
    // update returns the row it made (4), and the table then holds 4.
    let rows: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("1\t"))
        .collect();
    assert_eq!(rows, ["1\t2", "1\t3", "1\t4", "1\t4"], "output:\n{out}");
    let leader_count = lines
        .iter()
        .find_map(|l| l.strip_prefix("Group_update_leader_count\t"))
        .unwrap_or_else(|| panic!("no Group_update_leader_count in:\n{out}"));
    let leader_count: u64 = leader_count.trim().parse().unwrap();
    assert!(
        leader_count >= 1,
        "three hinted updates ran grouped, yet Group_update_leader_count is {leader_count}"
    );
    // Hint-less updates of the same row still work (an ordinary lock), on another node.
    let out = sql_ok(
        &c,
        3,
        "use s004; update test set data = data * 10 where id = 1; select data from test where id = 1;",
    );
    assert_eq!(out.trim(), "40");
    // A hinted update that matches no row fails the hint's check and rolls back.
    let (ok, _, err) = mariadb(
        &c,
        1,
        &["-N", "-B"],
        "use s004; update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ test set data = data + 1 where id = 2;",
    );
    assert!(
        !ok && err.contains("ERROR"),
        "target_affect_row(1) on a missing row must fail: {err}"
    );
    assert_eq!(
        sql_ok(&c, 1, "select data from s004.test where id = 1;").trim(),
        "40"
    );
}

#[test]
fn show_table_regions_names_the_leader_node() {
    if !have_mariadb() {
        return;
    }
    let c = ProcCluster::start(3, "in-memory");
    sql_ok(
        &c,
        1,
        "create database r; create table r.t (id int primary key, v int); insert into r.t values (1, 1);",
    );
    let leader = leader_of_table(&c, 1, "r", "t");
    assert!((1..=3).contains(&leader), "leader store {leader}");
}

/// The LEADER_STORE_ID of the first region `SHOW TABLE db.t REGIONS` lists.
fn leader_of_table(c: &ProcCluster, via: u64, db: &str, table: &str) -> u64 {
    let (ok, out, err) = mariadb(
        c,
        via,
        &["-B"],
        &format!("use {db}; show table {table} regions;"),
    );
    assert!(ok, "show table regions: {err}");
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let col = header
        .iter()
        .position(|h| *h == "LEADER_STORE_ID")
        .unwrap_or_else(|| panic!("no LEADER_STORE_ID column in {header:?}"));
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_else(|| panic!("no region rows:\n{out}"))
        .split('\t')
        .collect();
    row[col].parse().unwrap()
}

/// An interactive-like `mariadb` session fed statement by statement, its output collected.
struct Session {
    child: Child,
    stdin: ChildStdin,
    output: Arc<Mutex<String>>,
}

impl Session {
    fn open(c: &ProcCluster, id: u64, db: &str) -> Session {
        let (h, p) = mysql_addr(c, id);
        // -vvv: echo each statement and print "Query OK, N rows affected" as the
        // interactive client does; --force: go on after an error; --unbuffered: flush
        // after each statement.
        let mut child = Command::new("mariadb")
            .args(["--comments", &format!("-h{h}"), &format!("-P{p}"), "-uroot"])
            .args(["-vvv", "--force", "--unbuffered", "-D", db])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let output = output.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut o = output.lock().unwrap();
                    o.push_str(&line);
                    o.push('\n');
                }
            });
        }
        let stdin = child.stdin.take().unwrap();
        Session {
            child,
            stdin,
            output,
        }
    }

    fn send(&mut self, sql: &str) {
        writeln!(self.stdin, "{sql}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn text(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits until the output holds `needle` `n` times; false after `timeout`.
    fn wait_for(&self, needle: &str, n: usize, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.text().matches(needle).count() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of status variable `name` in `out` (`show global status` in `-N -B` form).
fn counter(out: &str, name: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}\t")))
        .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}

/// The cluster's counts of pessimistic locks written in a leader's memory so far, and of
/// in-memory locks proposed into the Raft log by transfers, merges and splits.
fn lock_counters(c: &ProcCluster, via: u64) -> (u64, u64) {
    let out = sql_ok(c, via, "show global status like 'Pessimistic_lock%';");
    let migrated = ["transfer", "merge", "split"]
        .iter()
        .map(|k| counter(&out, &format!("Pessimistic_lock_migrated_on_{k}")))
        .sum();
    (counter(&out, "Pessimistic_lock_in_memory"), migrated)
}

/// How long T1 may have run at the kill: its coordinator heartbeats a primary lock older
/// than half the client's 3 s lock TTL, which makes the lock durable.
const HEARTBEAT_AFTER: Duration = Duration::from_millis(1300);

/// TiKV 6.0's transcript: returns (T1's output, T2's output, the rows left, the stopped
/// leader's log) after both committed or failed. The leader is killed with `kill -9`, or
/// with `clean_stop` stopped by `cluster stop --node` (SIGTERM: it hands its regions over
/// first, the in-memory lock with them).
fn lock_loss(lock_mode: &str, clean_stop: bool) -> (String, String, String, String) {
    let c = ProcCluster::start(3, lock_mode);
    sql_ok(
        &c,
        1,
        "create database s000; create table s000.t (id int primary key, v int); insert into s000.t values (1, 1), (2, 2);",
    );
    // Both sessions on a node that survives: the kill must take the lock, not a session.
    // The leader is read once T1 holds its lock (leadership can move before that on a
    // busy machine); if it is the sessions' node, start over on another one.
    //
    // With in-memory locks, T1's lock must still be in the leader's memory at the kill: a
    // leader whose lock table is not writable yet (just elected, on a busy machine) falls
    // back to writing it through Raft, and a voluntary leader transfer or a merge (the
    // merge driver runs in the background) proposes it into the Raft log first; either
    // way it survives the kill and T2 rightly waits for T1 (TiKV does the same). The
    // cluster's counters tell (locks written in memory, locks migrated), read before T1
    // and again just before the kill with the leader; any change starts over. So does T1
    // reaching half its 3 s lock TTL: its coordinator's heartbeat then raises the TTL by a
    // replicated lock put (as TiKV's `TxnHeartBeat`), and the lock outlives the leader (a
    // busy machine stretched the steps past it once in about 20 runs).
    let mut via = 2;
    let mut attempts = 0;
    let (leader, mut t1, mut t2) = loop {
        attempts += 1;
        assert!(
            attempts <= 20,
            "no attempt of T1 kept its lock in memory on another node"
        );
        let before = lock_counters(&c, via);
        let mut t1 = Session::open(&c, via, "s000");
        let mut t2 = Session::open(&c, via, "s000");
        let t1_began = Instant::now();
        t1.send("begin;");
        t1.send("delete from t where id=1;");
        assert!(
            t1.wait_for("1 row affected", 1, Duration::from_secs(20)),
            "T1's delete did not finish:\n{}",
            t1.text()
        );
        let leader = leader_of_table(&c, via, "s000", "t");
        if leader == via {
            drop((t1, t2));
            via = if via == 3 { 1 } else { via + 1 };
            continue;
        }
        t2.send("begin;");
        t2.send("delete from t where id=1;");
        std::thread::sleep(Duration::from_millis(500));
        // Only BEGIN's "Query OK" so far: the delete waits.
        assert_eq!(
            t2.text().matches("Query OK").count(),
            1,
            "T2's delete must wait for T1's lock:\n{}",
            t2.text()
        );
        let after = lock_counters(&c, via);
        let in_memory = after.0 == before.0 + 1 && after.1 == before.1;
        if lock_mode != "in-memory"
            || (in_memory
                && leader_of_table(&c, via, "s000", "t") == leader
                && t1_began.elapsed() < HEARTBEAT_AFTER)
        {
            break (leader, t1, t2);
        }
        drop((t1, t2));
        std::thread::sleep(Duration::from_millis(500));
    };
    if clean_stop {
        c.stop_node(leader);
    } else {
        c.kill9(leader);
    }
    if lock_mode == "in-memory" && !clean_stop {
        // The lock died with the leader: T2's delete goes through on the new leader.
        assert!(
            t2.wait_for("1 row affected", 1, Duration::from_secs(40)),
            "T2's delete did not go through after node {leader}'s kill (sessions on node \
             {via}):\n{}\nT1:\n{}\ncounters:\n{}\nleader now: {:?}\nlogs of the survivors \
             (last 40 lines each):\n{}",
            t2.text(),
            t1.text(),
            sql_ok(&c, via, "show global status like 'Pessimistic_lock%';"),
            std::panic::catch_unwind(|| leader_of_table(&c, via, "s000", "t")).ok(),
            (1..=3u64)
                .filter(|n| *n != leader)
                .map(|n| {
                    let log = c.log(n);
                    let lines: Vec<&str> = log.lines().collect();
                    format!(
                        "node {n}:\n{}",
                        lines[lines.len().saturating_sub(40)..].join("\n")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        );
        t2.send("commit;");
        assert!(
            t2.wait_for("Query OK", 3, Duration::from_secs(20)),
            "T2's commit:\n{}",
            t2.text()
        );
        t1.send("commit;");
        assert!(
            t1.wait_for("ERROR", 1, Duration::from_secs(30)),
            "T1's commit must fail:\n{}",
            t1.text()
        );
    } else {
        // The lock is in the Raft log: T1 commits, then T2's delete finds no row.
        std::thread::sleep(Duration::from_secs(2));
        t1.send("commit;");
        assert!(
            t1.wait_for("Query OK", 3, Duration::from_secs(30)),
            "T1's commit:\n{}",
            t1.text()
        );
        assert!(
            t2.wait_for("0 rows affected", 2, Duration::from_secs(40)),
            "T2's delete after T1's commit:\n{}",
            t2.text()
        );
        t2.send("commit;");
        assert!(
            t2.wait_for("Query OK", 3, Duration::from_secs(20)),
            "T2's commit:\n{}",
            t2.text()
        );
    }
    let rows = sql_ok(&c, via, "select id from s000.t order by id;");
    (t1.text(), t2.text(), rows, c.log(leader))
}

#[test]
fn an_in_memory_lock_dies_with_its_leader_and_the_holders_commit_fails() {
    if !have_mariadb() {
        return;
    }
    let (t1, _t2, rows, _) = lock_loss("in-memory", false);
    assert!(
        t1.contains("ERROR 1213") && t1.contains("PessimisticLockNotFound"),
        "T1's commit must fail with 1213 naming PessimisticLockNotFound:\n{t1}"
    );
    assert_eq!(rows.trim(), "2", "T2 deleted row 1 and committed");
}

#[test]
fn a_sync_lock_survives_its_leaders_kill_and_the_holder_commits() {
    if !have_mariadb() {
        return;
    }
    let (t1, _t2, rows, _) = lock_loss("sync", false);
    assert!(!t1.contains("ERROR"), "T1 must commit:\n{t1}");
    assert_eq!(rows.trim(), "2");
}

/// The same transcript with the leader stopped cleanly (a rolling restart) instead of
/// killed: it hands its regions to the others first, T1's in-memory lock with them, so T2
/// keeps waiting, T1 commits and T2 then deletes nothing.
#[test]
fn an_in_memory_lock_moves_with_its_leaders_clean_stop_and_the_holder_commits() {
    if !have_mariadb() {
        return;
    }
    let (t1, _t2, rows, leader_log) = lock_loss("in-memory", true);
    let handed = common::leaders_handed_over(&leader_log);
    assert!(
        matches!(handed, Some((_, _, locks)) if locks >= 1),
        "T1's in-memory lock moved with its region: {handed:?}\n{leader_log}"
    );
    assert!(!t1.contains("ERROR"), "T1 must commit:\n{t1}");
    assert_eq!(rows.trim(), "2");
}

/// A transaction open longer than the GC life time (an idle `mariadb` session, a long
/// statement) is not cut off: its node's coordinator holds the GC back at its start, as
/// TiDB holds its safe point at the oldest running transaction, so it reads its snapshot
/// after collections ran and commits.
#[test]
fn a_transaction_older_than_the_gc_life_time_still_reads_and_commits_in_the_stock_client() {
    if !have_mariadb() {
        return;
    }
    // A 2 s life time (GC is on by default, with 600 s), a collection every second.
    let c = ProcCluster::start_with_args(3, "in-memory", common::FAST_GC_ARGS);
    sql_ok(
        &c,
        1,
        "create database g; create table g.t (id int primary key, v int); insert into g.t values (1, 10), (2, 20);",
    );
    let mut s = Session::open(&c, 1, "g");
    s.send("begin;");
    s.send("select v from t where id=1;");
    assert!(
        s.wait_for("1 row in set", 1, Duration::from_secs(20)),
        "{}",
        s.text()
    );
    // Row 2 changes after the transaction's snapshot, twice: versions a collection past
    // its start would remove.
    sql_ok(
        &c,
        2,
        "update g.t set v = 21 where id = 2; update g.t set v = 22 where id = 2;",
    );
    // Past the life time and the collection margin (7 s), with collections every second.
    std::thread::sleep(Duration::from_secs(10));
    s.send("select v from t where id=2;");
    assert!(
        s.wait_for("1 row in set", 2, Duration::from_secs(20)),
        "a read 10 s into a transaction with a 2 s life time:\n{}",
        s.text()
    );
    assert!(!s.text().contains("ERROR"), "{}", s.text());
    // Its snapshot: the value before both updates.
    assert!(s.text().contains("|   20 |"), "{}", s.text());
    s.send("update t set v = v + 1 where id = 1;");
    s.send("commit;");
    s.send("select v from t where id=1;");
    assert!(
        s.wait_for("1 row in set", 3, Duration::from_secs(20)),
        "{}",
        s.text()
    );
    assert!(!s.text().contains("ERROR"), "{}", s.text());
    assert_eq!(sql_ok(&c, 1, "select v from g.t where id=1;").trim(), "11");
    // The collections ran meanwhile (the meta leader's node logs each).
    let logs: String = (1..=3).map(|n| c.log(n)).collect();
    assert!(logs.contains(": gc below "), "{logs}");
}

/// Runs `sysbench SCRIPT ARGS... COMMAND`, failing the test on a FATAL error or a failed exit.
fn sysbench(c: &ProcCluster, node: u64, script: &str, extra: &[&str], command: &str) -> String {
    let (h, p) = mysql_addr(c, node);
    let out = Command::new("sysbench")
        .args([
            "--db-driver=mysql",
            &format!("--mysql-host={h}"),
            &format!("--mysql-port={p}"),
            "--mysql-user=root",
            "--mysql-db=sbtest",
            "--tables=2",
            "--table-size=2000",
        ])
        .args(extra)
        .args([script, command])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && !text.contains("FATAL"),
        "sysbench {script} {extra:?} {command} failed ({}):\n{text}",
        out.status
    );
    text
}

/// The transactions per second a sysbench run reports.
fn tps(run: &str) -> f64 {
    run.lines()
        .find_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("transactions:")?;
            let open = rest.find('(')?;
            rest[open + 1..].split_whitespace().next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no transactions line in:\n{run}"))
}

#[test]
fn sysbench_oltp_scripts_run_with_and_without_prepared_statements() {
    if !have_mariadb() || !have("sysbench", "SURGE_REQUIRE_SYSBENCH", "sysbench") {
        return;
    }
    let c = ProcCluster::start(3, "in-memory");
    sql_ok(
        &c,
        1,
        "drop database if exists sbtest; create database sbtest;",
    );
    for script in [
        "oltp_write_only",
        "oltp_read_write",
        "oltp_point_select",
        "oltp_update_index",
    ] {
        sysbench(&c, 1, script, &[], "prepare");
        for threads in ["1", "16"] {
            for ps in ["auto", "disable"] {
                let run = sysbench(
                    &c,
                    1 + (threads.len() as u64),
                    script,
                    &[
                        &format!("--threads={threads}"),
                        "--time=3",
                        &format!("--db-ps-mode={ps}"),
                    ],
                    "run",
                );
                let tps = tps(&run);
                eprintln!("{script} threads={threads} ps={ps}: {tps} tps");
                assert!(
                    tps > 0.0,
                    "{script} at {threads} threads ran no transaction"
                );
            }
        }
        // sysbench's write scripts delete and insert the same ids: the row count holds.
        let n = sql_ok(
            &c,
            3,
            "select (select count(*) from sbtest.sbtest1) + (select count(*) from sbtest.sbtest2);",
        );
        assert_eq!(n.trim(), "4000", "{script} changed the row count");
        sysbench(&c, 1, script, &[], "cleanup");
    }
}

#[test]
fn a_big_update_overflows_the_regions_in_memory_lock_budget_and_falls_back() {
    if !have_mariadb() || !have("sysbench", "SURGE_REQUIRE_SYSBENCH", "sysbench") {
        return;
    }
    let c = ProcCluster::start(3, "in-memory");
    sql_ok(
        &c,
        1,
        "drop database if exists sbtest; create database sbtest;",
    );
    sysbench(
        &c,
        1,
        "oltp_write_only",
        &["--tables=1", "--table-size=8000"],
        "prepare",
    );
    let before = sql_ok(
        &c,
        2,
        "show global status like 'Pessimistic_lock_fallback_full';",
    );
    // The write-up's statement: one transaction locks every row (and its index entries),
    // more than a region's 512 KiB of in-memory locks.
    let out = sql_ok(
        &c,
        2,
        "use sbtest; begin; update sbtest1 set k=k+1 limit 8000; \
         show global status like 'Pessimistic_lock_fallback_full'; commit; \
         select count(*) from sbtest1;",
    );
    let lines: Vec<&str> = out.lines().collect();
    let during = counter(&lines.join("\n"), "Pessimistic_lock_fallback_full");
    assert!(
        during > counter(&before, "Pessimistic_lock_fallback_full"),
        "the 8000-row update did not fall back to pipelined locks:\n{out}"
    );
    assert_eq!(lines.last().copied(), Some("8000"), "{out}");
}
