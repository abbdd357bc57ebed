//! Scalar subqueries: `(SELECT ...)` as a value, evaluated once before the statement.

mod sql_support;

use sql_support::{Db, err, lines, ok};

#[test]
fn scalar_subqueries_are_values() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database q; use q; create table a (id int primary key, v int); \
         create table b (id int primary key, v int)",
    );
    ok(&mut s, "insert into a values (1, 10), (2, 20), (3, 30)");
    ok(&mut s, "insert into b values (1, 5)");
    // engine.sh and the write-ups count rows of two tables this way.
    assert_eq!(
        lines(
            &mut s,
            "select (select count(*) from q.a) + (select count(*) from q.b)"
        ),
        ["4"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select id from a where v > (select v from b where id = 1) * 3 order by id"
        ),
        ["2", "3"]
    );
    // Nested, and no row is NULL.
    assert_eq!(
        lines(
            &mut s,
            "select (select max(v) from a where v < (select sum(v) from a) / 2)"
        ),
        ["20"]
    );
    assert_eq!(
        lines(&mut s, "select (select v from b where id = 9) is null"),
        ["1"]
    );
    ok(
        &mut s,
        "update a set v = (select v from b where id = 1) where id = 3",
    );
    assert_eq!(lines(&mut s, "select v from a where id = 3"), ["5"]);
    // More than one row, more than one column.
    assert_eq!(err(&mut s, "select (select v from a)").code, 1242);
    assert_eq!(err(&mut s, "select (select id, v from b)").code, 1241);
    // A correlated subquery is refused, not answered from the wrong table.
    let e = err(&mut s, "select (select v from b where b.id = a.id) from a");
    assert_eq!(e.code, 1235, "{}", e.message);
    assert!(e.message.contains("a.id"), "{}", e.message);
    // Qualified with its own table or alias, it runs.
    assert_eq!(
        lines(
            &mut s,
            "select (select x.v from b x where x.id = 1) + (select b.v from b where b.id = 1)"
        ),
        ["10"]
    );
}
