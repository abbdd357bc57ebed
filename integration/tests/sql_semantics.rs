//! SQL semantics a review found answered wrongly, each pinned to MySQL's answer or to error
//! 1235 naming the construct (never a silently wrong result): index ranges with bounds the
//! column's type cannot hold exactly, window functions, GROUP BY positions, INSERT's row
//! alias and ON DUPLICATE KEY UPDATE's assignment order and NOT NULL check, correlated
//! subqueries on an aliased table, HAVING without GROUP BY, WITH ROLLUP, ORDER BY / LIMIT
//! outside a parenthesised query, FOR SHARE and its options, clauses of other dialects, and
//! the hot-row UPDATE's exactness.

mod sql_support;

use std::time::Duration;

use sql_support::{Db, affected, err, lines, ok};
use surge_txn::ClientConfig;
use surgedb::sql::SqlError;

fn unsupported(e: &SqlError, names: &str) {
    assert_eq!((e.code, e.state.as_str()), (1235, "42000"), "{}", e.message);
    assert!(
        e.message.to_lowercase().contains(&names.to_lowercase()),
        "the message names {names}: {}",
        e.message
    );
}

#[test]
fn index_ranges_with_inexact_bounds_keep_every_matching_row() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database r; use r; create table t (id bigint primary key, k int, d date, \
         price decimal(10,2), f float, name varchar(10), big bigint, v int, \
         key kk (k), key kd (d), key kp (price), key kf (f), key kn (name), key kb (big))",
    );
    ok(
        &mut s,
        "insert into t values \
         (1, 1, '2024-02-29', 9.99, 0.05, '9', 9007199254740993, 0), \
         (2, 2, '2024-03-01', 10.00, 0.1, '10', 9007199254740995, 0), \
         (3, 3, '2024-03-02', 10.01, 0.2, '01', 9007199254740997, 0), \
         (9007199254740995, 4, '2024-03-03', 10.02, 0.3, 'x', 1, 0)",
    );
    // INT: the bound rounds to 3 (> 2.5) or 2 (< 2.4); neither may drop a row.
    assert_eq!(
        lines(&mut s, "select id from t where k > 2.5 order by id"),
        ["3", "9007199254740995"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k >= 2.5 and k < 4"),
        ["3"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k < 2.4 order by id"),
        ["1", "2"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k <= 2.4 order by id"),
        ["1", "2"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k between 1.5 and 2.5"),
        ["2"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k > '2.5' and k < '3.5'"),
        ["3"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where 2.5 < k and k < 3.5"),
        ["3"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k = 2.5"),
        Vec::<String>::new()
    );
    assert_eq!(lines(&mut s, "select id from t where k = 2.0"), ["2"]);
    // DATE: the time part is cut off the bound.
    assert_eq!(
        lines(
            &mut s,
            "select id from t where d < '2024-03-01 12:00:00' order by id"
        ),
        ["1", "2"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select id from t where d > '2024-03-01 12:00:00' and d < '2024-03-03'"
        ),
        ["3"]
    );
    // DECIMAL(10,2): 9.995 rounds to 10.00, 10.005 to 10.01.
    assert_eq!(
        lines(
            &mut s,
            "select id from t where price > 9.995 and price < 10.015 order by id"
        ),
        ["2", "3"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where price < 10.005 order by id"),
        ["1", "2"]
    );
    // FLOAT keeps the f32 nearest the bound: 0.1 as a FLOAT is above the DECIMAL 0.1.
    assert_eq!(
        lines(
            &mut s,
            "select id from t where f > 0.1 and f < 0.25 order by id"
        ),
        ["2", "3"]
    );
    // A string column compared with a number compares numbers: '01' = 1, '10' > 5.
    assert_eq!(lines(&mut s, "select id from t where name = 1"), ["3"]);
    assert_eq!(
        lines(&mut s, "select id from t where name > 5 order by id"),
        ["1", "2"]
    );
    // A double or string that is exactly an integer compares with a BIGINT as that
    // integer (MySQL converts the constant to the column's type), also past 2^53, where
    // as doubles 2^53+3 and 2^53+4 would be equal.
    assert_eq!(
        lines(
            &mut s,
            "select id from t where big >= 9007199254740996e0 order by id"
        ),
        ["3"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where id >= 9007199254740996e0"),
        Vec::<String>::new()
    );
    assert_eq!(
        lines(&mut s, "select id from t where id = '9007199254740995'"),
        ["9007199254740995"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where big = '9007199254740997'"),
        ["3"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select id from t where big >= ' 9007199254740995 ' and big < 9007199254740997"
        ),
        ["2"]
    );
    // Not exactly an integer: compared as doubles (MySQL keeps such a constant too), where
    // 2^53+5 and 2^53+3.5 are both 2^53+4, so neither is above the other.
    assert_eq!(
        lines(&mut s, "select id from t where big > '9007199254740995.5'"),
        Vec::<String>::new()
    );
    // UPDATE and DELETE take the same paths and check their WHERE on each row.
    assert_eq!(affected(&mut s, "update t set v = 1 where k > 2.5"), 2);
    assert_eq!(
        affected(&mut s, "update t set v = 2 where d < '2024-03-01 12:00:00'"),
        2
    );
    assert_eq!(
        lines(&mut s, "select id, v from t order by id"),
        ["1|2", "2|2", "3|1", "9007199254740995|1"]
    );
    assert_eq!(
        affected(
            &mut s,
            "delete from t where price > 9.995 and price < 10.015"
        ),
        2
    );
    assert_eq!(affected(&mut s, "delete from t where k < 2.4"), 1);
    assert_eq!(lines(&mut s, "select id from t"), ["9007199254740995"]);
}

#[test]
fn window_functions_are_refused() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database w; use w; create table t (id int primary key, g int, x int); \
         insert into t values (1, 1, 10), (2, 1, 20), (3, 2, 30)",
    );
    for sql in [
        "select id, sum(x) over (partition by g) from t",
        "select sum(x) over () from t",
        "select id, row_number() over (order by id) from t",
        "select id, count(*) over w from t window w as (partition by g)",
        "select id from t window w as (partition by g)",
        "select 1 + sum(x) over (order by id) from t",
    ] {
        unsupported(&err(&mut s, sql), "window functions");
    }
}

#[test]
fn group_by_a_position_groups_by_that_select_column() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database g; use g; create table t (id int primary key, g int, x int); \
         insert into t values (1, 1, 10), (2, 1, 20), (3, 2, 30)",
    );
    assert_eq!(
        lines(
            &mut s,
            "select g, count(*), sum(x) from t group by 1 order by 1"
        ),
        ["1|2|30", "2|1|30"]
    );
    assert_eq!(
        lines(&mut s, "select sum(x), g from t group by 2 order by 2 desc"),
        ["30|2", "30|1"]
    );
    // An alias of an expression names it too.
    assert_eq!(
        lines(
            &mut s,
            "select g * 10 as gg, count(*) from t group by gg order by gg"
        ),
        ["10|2", "20|1"]
    );
    for (sql, n) in [
        ("select g from t group by 3", "3"),
        ("select g from t group by 0", "0"),
    ] {
        let e = err(&mut s, sql);
        assert_eq!((e.code, e.state.as_str()), (1054, "42S22"), "{}", e.message);
        assert_eq!(
            e.message,
            format!("Unknown column '{n}' in 'group statement'")
        );
    }
    // ORDER BY 0 is no position either.
    let e = err(&mut s, "select g from t order by 0");
    assert_eq!(e.message, "Unknown column '0' in 'order clause'");
}

#[test]
fn insert_row_alias_names_the_inserted_row() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database a; use a; create table t (a int primary key, b varchar(5), c int); \
         insert into t values (1, 'old', 5)",
    );
    assert_eq!(
        affected(
            &mut s,
            "insert into t values (1, 'new', 7) as new \
             on duplicate key update b = new.b, c = c + new.c"
        ),
        2
    );
    assert_eq!(lines(&mut s, "select * from t"), ["1|new|12"]);
    // Column aliases name the inserted values, bare or qualified.
    assert_eq!(
        affected(
            &mut s,
            "insert into t (a, b, c) values (1, 'z', 100) as n (p, q, r) \
             on duplicate key update b = q, c = n.r + p"
        ),
        2
    );
    assert_eq!(lines(&mut s, "select * from t"), ["1|z|101"]);
    // A bare alias that is also a column of the table is not guessed at.
    let e = err(
        &mut s,
        "insert into t values (1, 'y', 1) as n (a, x, y) on duplicate key update c = a",
    );
    unsupported(&e, "column alias `a`");
    assert_eq!(lines(&mut s, "select * from t"), ["1|z|101"]);
    // Without a conflict the row is inserted as given.
    assert_eq!(
        affected(
            &mut s,
            "insert into t values (2, 'two', 2) as new on duplicate key update b = new.b"
        ),
        1
    );
    assert_eq!(lines(&mut s, "select * from t where a = 2"), ["2|two|2"]);
}

#[test]
fn correlated_subquery_on_an_aliased_table_is_not_run_uncorrelated() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database c; use c; \
         create table emp (id int primary key, dept varchar(5), salary int); \
         insert into emp values (1, 'a', 10), (2, 'a', 30), (3, 'b', 20), (4, 'b', 5)",
    );
    // `emp.dept` inside names the outer table: the inner one is only `e2`. This layer does
    // not evaluate correlated subqueries, so 1235 rather than the overall maximum.
    let e = err(
        &mut s,
        "select id from emp where salary = \
         (select max(salary) from emp as e2 where e2.dept = emp.dept) order by id",
    );
    unsupported(&e, "correlated subquery");
    let e = err(
        &mut s,
        "select id from emp e1 where salary = \
         (select max(salary) from emp e2 where e2.dept = e1.dept)",
    );
    unsupported(&e, "correlated subquery");
    // Unaliased, `emp` inside is the inner table (the innermost scope), as MySQL resolves it.
    assert_eq!(
        lines(
            &mut s,
            "select id from emp where salary = \
             (select max(salary) from emp where emp.dept = 'b')"
        ),
        ["3"]
    );
}

#[test]
fn having_without_group_by_filters_rows() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database h; use h; create table t (id int primary key, price int, qty int); \
         insert into t values (1, 10, 5), (2, 30, 4), (3, 101, 1), (4, 7, 20)",
    );
    assert_eq!(
        lines(
            &mut s,
            "select id, price * qty as total from t having total > 100 order by id"
        ),
        ["2|120", "3|101", "4|140"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select id, price from t having price > 20 and id < 3"
        ),
        ["2|30"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select id from t where qty > 1 having id > 1 order by id limit 1"
        ),
        ["2"]
    );
    assert_eq!(
        lines(&mut s, "select 1 as one having one > 1"),
        Vec::<String>::new()
    );
    assert_eq!(lines(&mut s, "select 2 as two having two > 1"), ["2"]);
}

#[test]
fn group_by_with_rollup_is_refused() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database u; use u; create table t (id int primary key, g int); \
         insert into t values (1, 1), (2, 2)",
    );
    let e = err(&mut s, "select g, count(*) from t group by g with rollup");
    unsupported(&e, "WITH ROLLUP");
}

#[test]
fn on_duplicate_key_update_refuses_null_in_a_not_null_column() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database n; use n; \
         create table t (id int primary key, name varchar(5) not null); \
         insert into t values (1, 'a')",
    );
    let e = err(
        &mut s,
        "insert into t values (1, 'b') on duplicate key update name = null",
    );
    assert_eq!((e.code, e.state.as_str()), (1048, "23000"), "{}", e.message);
    assert_eq!(e.message, "Column 'name' cannot be null");
    assert_eq!(lines(&mut s, "select * from t"), ["1|a"]);
}

#[test]
fn assignments_run_left_to_right() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database o; use o; create table t (id int primary key, a int, b int); \
         insert into t values (1, 1, 0), (2, 1, 0)",
    );
    assert_eq!(
        affected(
            &mut s,
            "insert into t values (1, 0, 0) on duplicate key update a = a + 1, b = a"
        ),
        2
    );
    assert_eq!(lines(&mut s, "select a, b from t where id = 1"), ["2|2"]);
    assert_eq!(
        affected(&mut s, "update t set a = a + 1, b = a where id = 2"),
        1
    );
    assert_eq!(lines(&mut s, "select a, b from t where id = 2"), ["2|2"]);
}

#[test]
fn clauses_outside_a_parenthesised_query_apply() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database p; use p; create table t (id int primary key); \
         insert into t values (1), (2), (3)",
    );
    assert_eq!(
        lines(&mut s, "(select id from t) order by id desc limit 1"),
        ["3"]
    );
    assert_eq!(
        lines(&mut s, "((select id from t)) order by id desc limit 2"),
        ["3", "2"]
    );
    assert_eq!(
        lines(&mut s, "(select id from t order by id desc) limit 1"),
        ["3"]
    );
    assert_eq!(
        lines(&mut s, "(select id from t order by id desc limit 1)"),
        ["3"]
    );
    // An inner LIMIT applies before an outer ORDER BY or LIMIT: refused, not merged.
    let e = err(
        &mut s,
        "(select id from t order by id limit 2) order by id desc",
    );
    unsupported(&e, "parenthesised query");
    let e = err(&mut s, "(select id from t limit 2) limit 1");
    unsupported(&e, "parenthesised query");
}

#[test]
fn for_share_and_nowait_lock_and_skip_locked_is_refused() {
    let db = Db::start_with(
        ClientConfig::default().with_wait_for_lock_timeout(Some(Duration::from_secs(5))),
    );
    let mut a = db.session();
    let mut b = db.session();
    ok(
        &mut a,
        "create database l; use l; create table t (id int primary key, v int); \
         insert into t values (1, 0), (2, 0)",
    );
    ok(&mut b, "use l; set innodb_lock_wait_timeout = 1");
    for locking in ["for share", "lock in share mode"] {
        ok(&mut a, "begin");
        assert_eq!(
            lines(&mut a, &format!("select v from t where id = 1 {locking}")),
            ["0"]
        );
        // The row is locked (exclusively: stricter than a shared lock, never looser).
        let e = err(&mut b, "update t set v = 1 where id = 1");
        assert_eq!(e.code, 1205, "{locking}: {}", e.message);
        ok(&mut a, "commit");
    }
    unsupported(
        &err(
            &mut a,
            "select v from t where id = 1 for update skip locked",
        ),
        "SKIP LOCKED",
    );
    // NOWAIT is taken and waits as a plain lock does (Django and others send it): the
    // answer is the same, only MySQL's immediate error 3572 on a held lock becomes a wait.
    for nowait in ["for share nowait", "for update nowait"] {
        ok(&mut a, "begin");
        assert_eq!(
            lines(&mut a, &format!("select v from t where id = 1 {nowait}")),
            ["0"]
        );
        let e = err(&mut b, "update t set v = 1 where id = 1");
        assert_eq!(e.code, 1205, "{nowait}: {}", e.message);
        ok(&mut a, "commit");
        // And NOWAIT meeting a held lock waits, then times out with 1205 (MySQL: 3572).
        ok(&mut a, "begin");
        ok(&mut a, "select v from t where id = 1 for update");
        ok(&mut b, "begin");
        let e = err(&mut b, &format!("select v from t where id = 1 {nowait}"));
        assert_eq!(e.code, 1205, "{nowait} on a held lock: {}", e.message);
        ok(&mut b, "rollback");
        ok(&mut a, "commit");
    }
    assert_eq!(lines(&mut a, "select v from t order by id"), ["0", "0"]);
}

#[test]
fn clauses_of_other_dialects_are_refused() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database x; use x; create table t (id int primary key); \
         insert into t values (1), (2), (3)",
    );
    unsupported(
        &err(&mut s, "select id from t fetch first 1 rows only"),
        "FETCH",
    );
    unsupported(&err(&mut s, "select top 1 id from t"), "TOP");
    unsupported(&err(&mut s, "select id from t qualify id > 1"), "QUALIFY");
}

#[test]
fn hot_row_update_is_exact_or_not_taken() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database k; use k; set global hotspot=ON");
    ok(
        &mut s,
        "create table t (id int primary key, c int); insert into t values (2, 10), (3, 10)",
    );
    // No integer id equals 2.5: nothing is updated (not id 3).
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success */ t set c = c - 1 where id = 2.5"
        ),
        0
    );
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success */ t set c = c - 1 where id = 3 limit 0"
        ),
        0
    );
    assert_eq!(
        lines(&mut s, "select id, c from t order by id"),
        ["2|10", "3|10"]
    );
    // The exact ones still update.
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success */ t set c = c - 1 where id = 3.0 limit 1"
        ),
        1
    );
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success */ t set c = c - 1 where id = '2'"
        ),
        1
    );
    assert_eq!(
        lines(&mut s, "select id, c from t order by id"),
        ["2|9", "3|9"]
    );
}

/// A string against a number reads as its numeric prefix, as MySQL converts it ('abc' is 0,
/// '12abc' is 12), in comparisons and in arithmetic; it used to be NULL in a comparison
/// (so `code <> 0` dropped 'abc', which MySQL also drops, but kept nothing for '12abc' =
/// 12) and 0 in arithmetic whatever its prefix.
#[test]
fn strings_against_numbers_read_as_their_numeric_prefix() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database n; use n; create table t (id int primary key, code varchar(10)); \
         insert into t values (1, 'abc'), (2, '12abc'), (3, ' 5'), (4, '1e1x'), (5, '-.5')",
    );
    assert_eq!(
        lines(
            &mut s,
            "select 'abc' = 0, '12abc' = 12, '12abc' + 1, ' 5x' > 4, '1e3x' = 1000, '.' = 0"
        ),
        ["1|1|13|1|1|1"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where code = 0 order by id"),
        ["1"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where code > 4 order by id"),
        ["2", "3", "4"]
    );
    assert_eq!(lines(&mut s, "select id from t where code < 0"), ["5"]);
    assert_eq!(lines(&mut s, "select code + 0 from t where id = 4"), ["10"]);
}

/// The table option `AUTO_INCREMENT = n` sets the first id (it was ignored: ids started at
/// 1); an explicit id above it still moves it on; a value that is not a count is refused.
#[test]
fn the_auto_increment_table_option_sets_the_first_id() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database a; use a; \
         create table t (id int primary key auto_increment, v int) engine=innodb auto_increment=1000; \
         create table u (id int primary key auto_increment, v int) AUTO_INCREMENT 0",
    );
    ok(&mut s, "insert into t (v) values (1), (2)");
    ok(&mut s, "insert into u (v) values (1)");
    assert_eq!(
        lines(&mut s, "select id from t order by id"),
        ["1000", "1001"]
    );
    assert_eq!(lines(&mut s, "select id from u"), ["1"]);
    ok(&mut s, "insert into t values (5000, 3)");
    ok(&mut s, "insert into t (v) values (4)");
    assert_eq!(lines(&mut s, "select max(id) from t"), ["5001"]);
    unsupported(
        &err(
            &mut s,
            "create table w (id int primary key) auto_increment = 'x'",
        ),
        "AUTO_INCREMENT",
    );
}

/// A string constant narrows a key or index range only when it is a clean number, so the
/// access path and the row filter read it alike: `'1e3'` finds row 1000 by its key (it
/// found nothing), `'12abc'` and `'nan'` are read as their numeric prefix by both.
#[test]
fn string_constants_read_alike_by_the_key_path_and_the_filter() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database c; use c; create table t (id int primary key, k int, d double, \
         key kk (k), key kd (d)); \
         insert into t values (1000, 12, 0), (7, 0, 12)",
    );
    assert_eq!(lines(&mut s, "select id from t where id = '1e3'"), ["1000"]);
    assert_eq!(
        lines(&mut s, "select id from t where id in ('1e3', '7')"),
        ["7", "1000"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k = '12abc'"),
        ["1000"]
    );
    assert_eq!(lines(&mut s, "select id from t where d = 'nan'"), ["1000"]);
    assert_eq!(lines(&mut s, "select id from t where d >= '12abc'"), ["7"]);
    assert_eq!(
        lines(&mut s, "select sum('12abc'), not 'abc', not '12abc'"),
        ["12|1|0"]
    );
}

/// An AUTO_INCREMENT counter at the top of BIGINT ends with MySQL's error 1467, not a
/// wrapped or repeated id. It ends one id before MySQL would: the allocator never hands
/// out i64::MAX itself (MySQL gives max - 1, then max, and fails on the next).
#[test]
fn an_auto_increment_counter_at_its_end_is_an_error() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database e; use e; create table t (id bigint primary key auto_increment, v int) \
         auto_increment = 9223372036854775806",
    );
    ok(&mut s, "insert into t (v) values (1)");
    assert_eq!(lines(&mut s, "select id from t"), ["9223372036854775806"]);
    let e = err(&mut s, "insert into t (v) values (2)");
    assert_eq!(e.code, 1467, "{}", e.message);
    assert_eq!(lines(&mut s, "select count(*) from t"), ["1"]);
}

/// Rows whose handle's first key byte is 0xFF (from 0x7F00_0000_0000_0000 up) are in
/// every scan: a full scan, a range, a count, and the backfill of a new index (they were
/// past the scan's end key, `_r` followed by 0xFF, and so missing from all of them).
#[test]
fn rows_with_the_largest_handles_are_scanned() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database h; use h; create table t (id bigint primary key, v int); \
         insert into t values (9223372036854775806, 1), (9223372036854775807, 2), (5, 3), \
         (-9223372036854775808, 4), (9151314442816847872, 5)",
    );
    assert_eq!(
        lines(&mut s, "select count(*), max(id), min(id) from t"),
        ["5|9223372036854775807|-9223372036854775808"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where id > 10 order by id"),
        [
            "9151314442816847872",
            "9223372036854775806",
            "9223372036854775807"
        ]
    );
    ok(&mut s, "create index kv on t (v)");
    assert_eq!(
        lines(&mut s, "select id from t where v >= 1 order by v"),
        [
            "9223372036854775806",
            "9223372036854775807",
            "5",
            "-9223372036854775808",
            "9151314442816847872"
        ]
    );
}
