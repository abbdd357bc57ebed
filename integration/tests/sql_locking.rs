//! Lock waits and deadlocks as MySQL clients expect them: 1205 after the lock wait timeout
//! and 1213 (SQLSTATE 40001) for a deadlock victim, each rolling the transaction back on
//! the server; and the lock mode switched with TiDB's `set config` statements.

mod sql_support;

use std::time::Duration;

use sql_support::{Db, err, lines, ok};
use surge_txn::{ClientConfig, LockMode};
use surgedb::sql::SqlSession;

#[test]
fn lock_wait_timeout_is_1205_and_deadlock_is_1213() {
    let db = Db::start_with(
        ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_millis(300))),
    );
    let mut a = db.session();
    let mut b = db.session();
    ok(
        &mut a,
        "create database l; use l; create table t (id int primary key, v int)",
    );
    ok(&mut a, "insert into t values (1, 0), (2, 0)");
    ok(&mut b, "use l");
    // InnoDB's default, 50 s, whatever the client's own default; a session sets its own
    // (whole seconds), and a bad value is refused.
    assert_eq!(lines(&mut b, "select @@innodb_lock_wait_timeout"), ["50"]);
    ok(&mut b, "set innodb_lock_wait_timeout = 1");
    assert_eq!(lines(&mut b, "select @@innodb_lock_wait_timeout"), ["1"]);
    assert_eq!(lines(&mut a, "select @@innodb_lock_wait_timeout"), ["50"]);
    assert_eq!(err(&mut b, "set innodb_lock_wait_timeout = 0").code, 1231);
    ok(&mut a, "begin; update t set v = 1 where id = 1");
    ok(&mut b, "begin; update t set v = 2 where id = 2");
    let started = std::time::Instant::now();
    let e = err(&mut b, "update t set v = 2 where id = 1");
    assert_eq!(e.code, 1205, "{}", e.message);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(900),
        "the session's 1 s, not the client's 300 ms: waited {waited:?}"
    );
    assert!(
        !b.in_transaction(),
        "the waiter's transaction is rolled back"
    );
    ok(&mut a, "commit");
    assert_eq!(lines(&mut a, "select v from t order by id"), ["1", "0"]);

    // A deadlock: a holds 1 and wants 2, b holds 2 and wants 1.
    let db = Db::start_with(
        ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_secs(10))),
    );
    let mut a = db.session();
    let mut b = db.session();
    ok(
        &mut a,
        "create database l; use l; create table t (id int primary key, v int)",
    );
    ok(&mut a, "insert into t values (1, 0), (2, 0)");
    ok(&mut b, "use l");
    ok(&mut a, "begin; update t set v = v + 1 where id = 1");
    ok(&mut b, "begin; update t set v = v + 1 where id = 2");
    let waiter = std::thread::spawn(move || {
        let r = a
            .query("update t set v = v + 1 where id = 2")
            .pop()
            .unwrap();
        (r, a)
    });
    std::thread::sleep(Duration::from_millis(300));
    let rb = b
        .query("update t set v = v + 1 where id = 1")
        .pop()
        .unwrap();
    let (ra, mut a) = waiter.join().unwrap();
    let (victim, survivor) = match (&ra, &rb) {
        (Err(e), Ok(_)) => (e.clone(), &mut b),
        (Ok(_), Err(e)) => (e.clone(), &mut a),
        other => panic!("one side is the deadlock victim: {other:?}"),
    };
    assert_eq!(
        (victim.code, victim.state.as_str()),
        (1213, "40001"),
        "{}",
        victim.message
    );
    ok(survivor, "commit");
    assert!(!a.in_transaction() && !b.in_transaction());
    assert_eq!(lines(&mut a, "select sum(v) from t"), ["2"]);
}

#[test]
fn set_config_switches_the_lock_mode_on_every_node() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "set config tikv pessimistic-txn.pipelined='true'");
    ok(&mut s, "set config tikv pessimistic-txn.in-memory='true'");
    assert_eq!(
        lines(&mut s, "show config like 'pessimistic-txn%'"),
        [
            "tikv|node-1|pessimistic-txn.pipelined|true",
            "tikv|node-1|pessimistic-txn.in-memory|true"
        ]
    );
    let client = db.engine.client();
    assert!(
        client
            .lock_modes()
            .iter()
            .all(|(_, m)| *m == LockMode::InMemory),
        "{:?}",
        client.lock_modes()
    );
    ok(&mut s, "set config surgedb lock_mode='sync'");
    assert!(
        client
            .lock_modes()
            .iter()
            .all(|(_, m)| *m == LockMode::Sync)
    );
    assert!(lines(&mut s, "show config").contains(&"surgedb|node-1|lock_mode|sync".to_owned()));
    assert_eq!(
        err(&mut s, "set config tikv pessimistic-txn.in-memory='maybe'").code,
        1231
    );
    assert_eq!(
        err(&mut s, "set config tikv raftstore.capacity='1'").code,
        1235
    );
}

/// An `UPDATE ... LIMIT 1` locks the row it updates, not the rows of its scan batch past
/// it: a row held by another transaction further on does not make it wait. Without a
/// `LIMIT` the statement locks (in batches) every row it reads, and waits for the held one.
#[test]
fn an_update_with_limit_locks_nothing_past_where_it_stops() {
    let db = Db::start_with(ClientConfig::default());
    let mut a = db.session();
    let mut b = db.session();
    ok(
        &mut a,
        "create database lim; use lim; create table t (id int primary key, v int)",
    );
    let rows: Vec<String> = (1..=20).map(|i| format!("({i}, 0)")).collect();
    ok(&mut a, &format!("insert into t values {}", rows.join(",")));
    ok(&mut b, "use lim; set innodb_lock_wait_timeout = 1");
    ok(&mut a, "begin; update t set v = 9 where id = 15");
    let start = std::time::Instant::now();
    ok(&mut b, "update t set v = 1 where v = 0 limit 1");
    assert!(
        start.elapsed() < Duration::from_millis(900),
        "the LIMIT 1 update waited for row 15: {:?}",
        start.elapsed()
    );
    assert_eq!(lines(&mut b, "select v from t where id = 1"), ["1"]);
    assert_eq!(
        err(&mut b, "update t set v = 2 where v = 0").code,
        1205,
        "without a LIMIT, row 15 is read and its lock waited for"
    );
    ok(&mut a, "commit");
    ok(&mut b, "update t set v = 2 where v = 0");
    assert_eq!(
        lines(&mut b, "select count(*) from t where v = 2"),
        ["18"],
        "every row but 1 (v = 1) and 15 (v = 9)"
    );
}
