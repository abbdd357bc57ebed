//! The cost of a point UPDATE by primary key: one locking read (one lock) and one commit,
//! no scans; and a statement over many rows streams through them in batches.

mod sql_support;

use sql_support::{Db, affected, lines, ok};
use surge_txn::LockMode;

#[test]
fn a_point_update_takes_one_lock_and_one_commit() {
    let db = Db::start();
    db.cluster.set_lock_mode(LockMode::InMemory);
    let mut s = db.session();
    ok(&mut s, "create database p; use p");
    ok(
        &mut s,
        "create table t (id int primary key, k int not null, c char(20), key k_1 (k))",
    );
    let values: Vec<String> = (1..=100).map(|i| format!("({i}, {i}, 'c{i}')")).collect();
    ok(
        &mut s,
        &format!("insert into t values {}", values.join(",")),
    );
    // Warm the schema cache and the region cache.
    ok(&mut s, "update t set c = 'warm' where id = 1");
    let locks = || db.cluster.counters().in_memory_success;
    let commits = || db.engine.client().counters().commits;
    let (l0, c0) = (locks(), commits());
    assert_eq!(affected(&mut s, "update t set c = 'x' where id = 50"), 1);
    assert_eq!(
        (locks() - l0, commits() - c0),
        (1, 1),
        "one lock (the row key), one commit"
    );
    // An indexed column also moves its (non-unique) index entry: the old and the new entry
    // are locked too, both in one lock request (`apply_updates` batches them).
    let (l0, c0) = (locks(), commits());
    assert_eq!(affected(&mut s, "update t set k = k + 1 where id = 50"), 1);
    assert_eq!((locks() - l0, commits() - c0), (2, 1));
    // An absent row: the key is still locked (so a concurrent INSERT of it waits), nothing
    // written.
    let l0 = locks();
    assert_eq!(affected(&mut s, "update t set c = 'x' where id = 5000"), 0);
    assert_eq!(locks() - l0, 1);
}

#[test]
fn a_statement_over_many_rows_streams_in_batches() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database big; use big");
    ok(
        &mut s,
        "create table t (id int primary key auto_increment, k int not null, key k_1 (k))",
    );
    for _ in 0..3 {
        let values: Vec<String> = (0..400).map(|i| format!("({})", i % 10)).collect();
        ok(
            &mut s,
            &format!("insert into t (k) values {}", values.join(",")),
        );
    }
    // 1200 rows in one autocommit UPDATE (several scan batches), then in one explicit
    // transaction with a DELETE over an index range.
    assert_eq!(affected(&mut s, "update t set k = k + 100"), 1200);
    ok(&mut s, "begin");
    assert_eq!(affected(&mut s, "delete from t where k >= 105"), 600);
    assert_eq!(
        affected(&mut s, "update t set k = k - 100 where k < 105"),
        600
    );
    ok(&mut s, "commit");
    assert_eq!(
        lines(&mut s, "select count(*), sum(k), min(k), max(k) from t"),
        ["600|1200|0|4"]
    );
    assert_eq!(
        lines(&mut s, "select count(*) from t where k between 0 and 4"),
        ["600"]
    );
}
