//! A session's reset and its limits against an in-process cluster: COM_RESET_CONNECTION
//! (`SqlSession::reset`) puts the transaction mode back to the global one, a statement with
//! more placeholders than the protocol can count is refused with 1390, and the number of
//! statements a session holds prepared is bounded (1461).
#![allow(clippy::unwrap_used)] // a failed step is a failed test

mod sql_support;

use sql_support::{Db, ok};
use surgedb::sql::SqlSession;

/// Asserts another session's update of row `id` of `d.t` waits out a 1 s lock wait timeout.
fn assert_row_locked(db: &Db, id: i64) {
    let mut b = db.session();
    ok(&mut b, "use d; set innodb_lock_wait_timeout = 1; begin");
    let e = b
        .query(&format!("update t set v = v + 1 where id = {id}"))
        .pop()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.code, 1205, "row {id}: {e:?}");
}

/// A pool hands a connection on after a reset: a `SET tidb_txn_mode` of the last user must
/// not leave the next one's DML without row locks.
#[test]
fn a_reset_session_runs_in_the_global_mode_again() {
    let db = Db::start();
    let mut a = db.session();
    ok(
        &mut a,
        "create database d; use d; create table t (id int primary key, v int); \
         insert into t values (1, 0)",
    );
    ok(&mut a, "set tidb_txn_mode = 'optimistic'");
    a.reset();
    ok(&mut a, "use d; begin; update t set v = 1 where id = 1");
    // Pessimistic (the global default): `a`'s update holds the row's lock, so `b`'s waits
    // out its lock wait timeout. Optimistic, it would have taken no lock.
    assert_row_locked(&db, 1);
    ok(&mut a, "commit");
}

#[test]
fn more_than_65535_placeholders_are_refused() {
    let db = Db::start();
    let mut s = db.session();
    let within = format!("select {}", vec!["?"; 65_535].join(","));
    assert_eq!(s.prepare(&within).unwrap().params, 65_535);
    let past = format!("select {}", vec!["?"; 65_536].join(","));
    let e = s.prepare(&past).unwrap_err();
    assert_eq!(e.code, 1390, "{e:?}");
}

#[test]
fn a_session_holds_at_most_16382_prepared_statements() {
    let db = Db::start();
    let mut s = db.session();
    let mut ids = std::collections::HashSet::new();
    for _ in 0..16_382 {
        assert!(
            ids.insert(s.prepare("select 1").unwrap().id),
            "an id reused"
        );
    }
    let e = s.prepare("select 1").unwrap_err();
    assert_eq!(e.code, 1461, "{e:?}");
    assert!(e.message.contains("max_prepared_stmt_count"), "{e:?}");
    // Closing one makes room again, under an id never given before (ids only go up).
    let first = *ids.iter().min().unwrap();
    s.close_statement(first);
    let id = s.prepare("select 1").unwrap().id;
    assert!(!ids.contains(&id), "id {id} given again");
    assert!(id > *ids.iter().max().unwrap(), "id {id} went back");
}

/// `LOCK IN SHARE MODE` (run as text by a form of its own, since the parser lacks it) keeps
/// its `?` placeholders when prepared, and locks as `FOR SHARE` does.
#[test]
fn a_prepared_lock_in_share_mode_takes_parameters() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database d; use d; create table t (id int primary key, v int); \
         insert into t values (1, 10), (2, 20)",
    );
    let p = s
        .prepare("select v from t where id = ? lock in share mode")
        .unwrap();
    assert_eq!(p.params, 1);
    ok(&mut s, "begin");
    match s.execute(p.id, &[surgedb::sql::Value::Int(2)]).unwrap() {
        surgedb::sql::Output::Rows { rows, .. } => {
            assert_eq!(rows, vec![vec![surgedb::sql::Value::Int(20)]]);
        }
        o => panic!("{o:?}"),
    }
    // The row is locked until the transaction ends.
    assert_row_locked(&db, 2);
    ok(&mut s, "commit");
}

/// A number bound to a `?` in ORDER BY or GROUP BY, or a scalar subquery there, is a
/// constant, as in MySQL: not a select-list position (`ORDER BY 1`, typed, still is).
#[test]
fn a_bound_or_computed_number_in_order_or_group_by_is_a_constant() {
    use surgedb::sql::{Output, Value};
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database d; use d; create table t (id int primary key, k int); \
         insert into t values (1, 10), (2, 20), (3, 20)",
    );
    let count_rows = |o: Output| match o {
        Output::Rows { rows, .. } => rows.len(),
        o => panic!("{o:?}"),
    };
    let group = s.prepare("select count(*) from t group by ?").unwrap();
    // Bound to 1 (a position if it were typed): one group of every row.
    let out = s.execute(group.id, &[Value::Int(1)]).unwrap();
    assert_eq!(count_rows(out), 1);
    let order = s.prepare("select id from t order by ?").unwrap();
    // Bound to 0 (1054 if it were a position): every row, in no particular order.
    let out = s.execute(order.id, &[Value::Int(0)]).unwrap();
    assert_eq!(count_rows(out), 3);
    assert_eq!(
        count_rows(ok(&mut s, "select id from t order by (select 0)")),
        3
    );
    assert_eq!(
        count_rows(ok(&mut s, "select count(*) from t group by (select 1)")),
        1
    );
    // Typed, a number is a position.
    assert_eq!(count_rows(ok(&mut s, "select k from t group by 1")), 2);
}
