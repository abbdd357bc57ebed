//! Every statement kind of the SQL layer against an in-process cluster: DDL, DML, SELECT
//! forms, transactions, variables and SHOW, and the error codes clients act on.

mod sql_support;

use sql_support::{Db, affected, err, lines, ok, rows};
use surgedb::sql::{Output, SqlSession, Value};

#[test]
fn ddl_insert_select_update_delete() {
    let db = Db::start();
    let mut s = db.session();
    ok(&mut s, "create database d1; use d1");
    ok(
        &mut s,
        "create table t (id int primary key auto_increment, name varchar(20) not null, \
         score decimal(6,2) default '1.50', k int, unique key uname (name), key kk (k)) engine=innodb",
    );
    match ok(
        &mut s,
        "insert into t (name, k) values ('a', 1), ('b', 2), ('c', 2)",
    ) {
        Output::Done {
            affected_rows,
            last_insert_id,
            ..
        } => {
            assert_eq!(affected_rows, 3);
            assert_eq!(last_insert_id, 1);
        }
        o => panic!("{o:?}"),
    }
    assert_eq!(lines(&mut s, "select last_insert_id()"), ["1"]);
    assert_eq!(
        lines(&mut s, "select * from t order by id"),
        ["1|a|1.50|1", "2|b|1.50|2", "3|c|1.50|2"]
    );
    // Point get, range, index equality, full scan with WHERE.
    assert_eq!(lines(&mut s, "select name from t where id = 2"), ["b"]);
    assert_eq!(
        lines(
            &mut s,
            "select name from t where id between 2 and 3 order by name desc"
        ),
        ["c", "b"]
    );
    assert_eq!(
        lines(&mut s, "select id from t where k = 2 order by id"),
        ["2", "3"]
    );
    assert_eq!(lines(&mut s, "select id from t where name = 'c'"), ["3"]);
    assert_eq!(
        lines(&mut s, "select id from t where score > 1 and k < 2"),
        ["1"]
    );
    // Aggregates: SUM of integers is DECIMAL, AVG keeps four more digits.
    assert_eq!(
        lines(
            &mut s,
            "select count(*), sum(k), min(name), max(id), avg(k) from t"
        ),
        ["3|5|a|3|1.6667"]
    );
    assert_eq!(
        lines(&mut s, "select k, count(*) from t group by k order by k"),
        ["1|1", "2|2"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select k, count(*) c from t group by k having c > 1"
        ),
        ["2|2"]
    );
    assert_eq!(
        lines(&mut s, "select distinct k from t order by k desc"),
        ["2", "1"]
    );
    assert_eq!(
        lines(&mut s, "select id from t order by id limit 1 offset 1"),
        ["2"]
    );
    assert_eq!(
        lines(&mut s, "select id from t order by id limit 1, 2"),
        ["2", "3"]
    );
    assert_eq!(lines(&mut s, "select count(*) from t where k > 100"), ["0"]);
    assert_eq!(
        lines(&mut s, "select sum(k) from t where k > 100"),
        ["NULL"]
    );
    // NULL semantics.
    ok(&mut s, "insert into t (name) values ('n')");
    assert_eq!(lines(&mut s, "select id from t where k is null"), ["4"]);
    assert_eq!(lines(&mut s, "select count(k), count(*) from t"), ["3|4"]);
    assert_eq!(
        lines(&mut s, "select id from t where k = null"),
        Vec::<String>::new()
    );
    assert_eq!(
        lines(
            &mut s,
            "select 1 + null, null = null, 5 / 2, 7 div 2, 7 % 3, -3 * 2"
        ),
        ["NULL|NULL|2.5000|3|1|-6"]
    );
    // UPDATE by key, by index, by scan; ORDER BY / LIMIT.
    assert_eq!(affected(&mut s, "update t set k = k + 10 where id = 1"), 1);
    assert_eq!(affected(&mut s, "update t set score = 9 where k = 2"), 2);
    assert_eq!(
        affected(&mut s, "update t set k = 0 where name like 'n%'"),
        1
    );
    assert_eq!(
        affected(&mut s, "update t set score = 0 order by id desc limit 1"),
        1
    );
    assert_eq!(
        lines(&mut s, "select id, k, score from t order by id"),
        ["1|11|1.50", "2|2|9.00", "3|2|9.00", "4|0|0.00"]
    );
    // The index follows the updates.
    assert_eq!(lines(&mut s, "select id from t where k = 11"), ["1"]);
    assert_eq!(
        lines(&mut s, "select id from t where k = 1"),
        Vec::<String>::new()
    );
    assert_eq!(
        affected(&mut s, "delete from t where k = 2 order by id limit 1"),
        1
    );
    assert_eq!(affected(&mut s, "delete from t where id in (1, 4)"), 2);
    assert_eq!(lines(&mut s, "select id, name from t"), ["3|c"]);
    assert_eq!(lines(&mut s, "select id from t where k = 2"), ["3"]);
    // Unique index: the freed name can be taken again.
    ok(&mut s, "insert into t (name) values ('a')");
    assert_eq!(err(&mut s, "insert into t (name) values ('c')").code, 1062);
}

#[test]
fn insert_forms() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database d; use d; create table t (id int primary key, v int not null default 7, u varchar(5), unique (u))",
    );
    assert_eq!(
        affected(&mut s, "insert into t values (1, default, 'x')"),
        1
    );
    assert_eq!(affected(&mut s, "insert into t (id) values (2)"), 1);
    assert_eq!(
        lines(&mut s, "select id, v, u from t order by id"),
        ["1|7|x", "2|7|NULL"]
    );
    let e = err(&mut s, "insert into t values (1, 1, 'y')");
    assert_eq!((e.code, e.state.as_str()), (1062, "23000"));
    assert!(
        e.message.contains("'1'") && e.message.contains("PRIMARY"),
        "{}",
        e.message
    );
    let e = err(&mut s, "insert into t values (3, 1, 'x')");
    assert_eq!(e.code, 1062);
    assert!(e.message.contains("t.u"), "{}", e.message);
    // A multi-row INSERT (one batched check) is all or nothing.
    let e = err(&mut s, "insert into t values (8, 1, 'p'), (1, 1, 'q')");
    assert!(e.code == 1062 && e.message.contains("'1'"), "{}", e.message);
    let e = err(&mut s, "insert into t values (8, 1, 'p'), (8, 1, 'q')");
    assert!(e.code == 1062 && e.message.contains("'8'"), "{}", e.message);
    let e = err(&mut s, "insert into t values (8, 1, 'p'), (9, 1, 'x')");
    assert!(e.code == 1062 && e.message.contains("t.u"), "{}", e.message);
    assert_eq!(lines(&mut s, "select count(*) from t where id >= 8"), ["0"]);
    assert_eq!(
        affected(
            &mut s,
            "insert ignore into t values (1, 1, 'y'), (3, 3, 'z')"
        ),
        1
    );
    assert_eq!(
        affected(
            &mut s,
            "insert into t values (1, 1, 'q') on duplicate key update v = v + values(v)"
        ),
        2
    );
    assert_eq!(lines(&mut s, "select v, u from t where id = 1"), ["8|x"]);
    assert_eq!(affected(&mut s, "replace into t values (2, 5, 'x')"), 3);
    assert_eq!(
        lines(&mut s, "select id, v, u from t order by id"),
        ["2|5|x", "3|3|z"]
    );
    assert_eq!(
        err(&mut s, "insert into t (id, v) values (9, null)").code,
        1048
    );
    assert_eq!(
        err(&mut s, "insert into t (id, nope) values (9, 1)").code,
        1054
    );
    assert_eq!(err(&mut s, "insert into t (id, v) values (9)").code, 1136);
    assert_eq!(
        err(&mut s, "insert into t (id, u) values (9, 'toolong')").code,
        1406
    );
    // Types round-trip through the row codec and the text protocol.
    ok(
        &mut s,
        "create table ty (a tinyint unsigned, b bigint, c double, d decimal(10,3), e char(3), f varbinary(4), g date, h datetime, i text, j float)",
    );
    ok(
        &mut s,
        "insert into ty values (255, -9223372036854775808, 1.5, '-12.3456', 'ab ', X'00ff', '2026-12-02', '2026-12-02 01:02:03', 'long text', 0.5)",
    );
    assert_eq!(
        lines(&mut s, "select * from ty"),
        [
            "255|-9223372036854775808|1.5|-12.346|ab|\u{0}\u{fffd}|2026-12-02|2026-12-02 01:02:03|long text|0.5"
        ]
    );
    assert_eq!(err(&mut s, "insert into ty (a) values (256)").code, 1264);
    // INSERT ... SELECT.
    ok(
        &mut s,
        "create table copy (id int primary key, v int, u varchar(5))",
    );
    assert_eq!(
        affected(
            &mut s,
            "insert into copy select id, v * 10, u from t where id >= 2"
        ),
        2
    );
    assert_eq!(
        lines(&mut s, "select * from copy order by id"),
        ["2|50|x", "3|30|z"]
    );
    assert_eq!(
        err(&mut s, "insert into copy select id, v, u from t").code,
        1062
    );
}

#[test]
fn transactions_and_errors() {
    let db = Db::start();
    let mut a = db.session();
    let mut b = db.session();
    assert_eq!(err(&mut a, "select * from t").code, 1046);
    assert_eq!(err(&mut a, "use nope").code, 1049);
    ok(
        &mut a,
        "create database d; use d; create table t (id int primary key, v int)",
    );
    ok(&mut b, "use d");
    assert_eq!(err(&mut a, "select * from nope").code, 1146);
    assert_eq!(err(&mut a, "select nope from t").code, 1054);
    assert_eq!(err(&mut a, "selec 1").code, 1064);
    assert_eq!(err(&mut a, "select * from t join t u on 1").code, 1235);
    ok(&mut a, "begin; insert into t values (1, 1)");
    assert!(a.in_transaction());
    assert_eq!(lines(&mut b, "select count(*) from t"), ["0"]);
    ok(&mut a, "rollback");
    assert_eq!(lines(&mut b, "select count(*) from t"), ["0"]);
    ok(
        &mut a,
        "start transaction; insert into t values (1, 1); commit",
    );
    assert_eq!(lines(&mut b, "select v from t"), ["1"]);
    // BEGIN inside a transaction commits it.
    ok(&mut a, "begin; update t set v = 2 where id = 1; begin");
    assert_eq!(lines(&mut b, "select v from t"), ["2"]);
    ok(&mut a, "commit");
    // autocommit off: statements collect in one transaction until COMMIT.
    ok(
        &mut a,
        "set autocommit = 0; update t set v = 3 where id = 1",
    );
    assert!(!a.autocommit() && a.in_transaction());
    assert_eq!(lines(&mut b, "select v from t"), ["2"]);
    ok(&mut a, "set autocommit = 1");
    assert_eq!(lines(&mut b, "select v from t"), ["3"]);
    // A duplicate inside a transaction fails the statement only.
    ok(&mut a, "begin; insert into t values (2, 2)");
    assert_eq!(err(&mut a, "insert into t values (1, 9)").code, 1062);
    assert!(a.in_transaction());
    ok(&mut a, "commit");
    assert_eq!(
        lines(&mut b, "select id, v from t order by id"),
        ["1|3", "2|2"]
    );
    // DELETE + INSERT of one id in one transaction never raises 1062.
    ok(
        &mut a,
        "begin; delete from t where id = 1; insert into t values (1, 10); commit",
    );
    assert_eq!(lines(&mut b, "select v from t where id = 1"), ["10"]);
    // Optimistic sessions: a conflicting commit is 1213 (retryable), rolled back.
    ok(
        &mut a,
        "set tidb_txn_mode = 'optimistic'; begin; update t set v = 20 where id = 2",
    );
    ok(&mut b, "update t set v = 30 where id = 2");
    let e = err(&mut a, "commit");
    assert_eq!((e.code, e.state.as_str()), (1213, "40001"), "{}", e.message);
    assert!(!a.in_transaction());
    assert_eq!(lines(&mut b, "select v from t where id = 2"), ["30"]);
    // SELECT FOR UPDATE locks: the other pessimistic writer waits, then sees the change.
    ok(&mut a, "set tidb_txn_mode = 'pessimistic'; begin");
    assert_eq!(
        lines(&mut a, "select v from t where id = 2 for update"),
        ["30"]
    );
    let handle = std::thread::spawn(move || {
        let r = affected(&mut b, "update t set v = v + 1 where id = 2");
        (r, b)
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    ok(&mut a, "update t set v = 40 where id = 2; commit");
    let (r, mut b) = handle.join().unwrap();
    assert_eq!(r, 1);
    assert_eq!(lines(&mut b, "select v from t where id = 2"), ["41"]);
}

#[test]
fn variables_show_and_catalog() {
    let db = Db::start();
    let mut s = db.session();
    assert_eq!(rows(&mut s, "select @@version_comment limit 1").len(), 1);
    assert_eq!(
        lines(&mut s, "select database(), user()"),
        ["NULL|root@127.0.0.1"]
    );
    assert_eq!(
        lines(&mut s, "select @@character_set_client, @@autocommit"),
        ["utf8mb4|1"]
    );
    ok(
        &mut s,
        "set names latin1; set @x = 5; set session sql_mode = ''",
    );
    assert_eq!(
        lines(&mut s, "select @@character_set_results, @x + 1"),
        ["latin1|6"]
    );
    assert_eq!(
        lines(&mut s, "show variables like 'character_set_res%'"),
        ["character_set_results|latin1"]
    );
    ok(
        &mut s,
        "create database if not exists d; create database if not exists d; use d",
    );
    assert_eq!(err(&mut s, "create database d").code, 1007);
    ok(&mut s, "create table b (id int primary key, x int)");
    ok(&mut s, "create table if not exists b (id int)");
    assert_eq!(err(&mut s, "create table b (id int)").code, 1050);
    ok(&mut s, "create table a (name char(10) primary key, v int)");
    assert_eq!(lines(&mut s, "show tables"), ["a", "b"]);
    assert_eq!(lines(&mut s, "show tables like 'a%'"), ["a"]);
    assert!(lines(&mut s, "show databases").contains(&"d".to_owned()));
    assert_eq!(
        lines(&mut s, "show columns from b"),
        ["id|int|NO|PRI|NULL|", "x|int|YES||NULL|"]
    );
    assert_eq!(
        lines(&mut s, "describe b"),
        lines(&mut s, "show columns from b")
    );
    ok(
        &mut s,
        "create table ix (id int primary key, a int, b int, unique key ab (a, b), key bk (b))",
    );
    assert_eq!(
        rows(&mut s, "show index from ix")
            .iter()
            .map(|r| format!("{}|{}|{}|{}", r[1], r[2], r[3], r[4]))
            .collect::<Vec<_>>(),
        ["0|PRIMARY|1|id", "0|ab|1|a", "0|ab|2|b", "1|bk|1|b"]
    );
    assert_eq!(
        lines(
            &mut s,
            "select cast('12' as signed) + 1, cast(1.5 as decimal(5,2)), cast(7 as char), convert('3', unsigned)"
        ),
        ["13|1.50|7|3"]
    );
    assert_eq!(s.prepare("select * from nope").unwrap_err().code, 1146);
    assert_eq!(
        s.prepare("update nope set a = 1 where id = ?")
            .unwrap_err()
            .code,
        1146
    );
    assert_eq!(s.prepare("select nope from b").unwrap_err().code, 1054);
    let create = rows(&mut s, "show create table b");
    assert!(create[0][1].contains("PRIMARY KEY (`id`)"), "{create:?}");
    // A non-integer primary key: a unique index over a hidden handle.
    ok(&mut s, "insert into a values ('k1', 1), ('k2', 2)");
    assert_eq!(err(&mut s, "insert into a values ('k1', 3)").code, 1062);
    assert_eq!(lines(&mut s, "select v from a where name = 'k2'"), ["2"]);
    // Another engine (another node) sees the schema and the rows.
    let other = Db::engine_on(&db.cluster, Default::default(), 2);
    let mut s2 = db.session_of(&other);
    ok(&mut s2, "use d");
    assert_eq!(lines(&mut s2, "select v from a order by v"), ["1", "2"]);
    // CREATE INDEX backfills; TRUNCATE and DROP.
    ok(&mut s, "insert into b values (1, 5), (2, 5), (3, 6)");
    ok(&mut s, "create index ix on b (x)");
    assert_eq!(
        lines(&mut s, "select id from b where x = 5 order by id"),
        ["1", "2"]
    );
    assert_eq!(err(&mut s, "create unique index ux on b (x)").code, 1062);
    assert_eq!(lines(&mut s, "select id from b where x = 6"), ["3"]);
    ok(&mut s, "truncate table b");
    assert_eq!(lines(&mut s, "select count(*) from b"), ["0"]);
    ok(&mut s, "drop table b; drop table if exists b");
    assert_eq!(err(&mut s, "drop table b").code, 1051);
    assert_eq!(err(&mut s, "select * from b").code, 1146);
    assert!(
        lines(&mut s, "show processlist")
            .iter()
            .any(|l| l.contains("root") && l.contains("show processlist"))
    );
    ok(&mut s, "drop database d");
    // The other engine trusts its cached schema for one lease, then sees the drop.
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(err(&mut s2, "select * from a").code, 1146);
    // show warnings after INSERT IGNORE.
    ok(
        &mut s,
        "create database w; use w; create table t (id int primary key)",
    );
    ok(&mut s, "insert ignore into t values (1), (1)");
    assert_eq!(rows(&mut s, "show warnings").len(), 1);
}

#[test]
fn prepared_statements_bind_parameters() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database d; use d; create table t (id int primary key, c char(10), k int)",
    );
    let ins = s
        .prepare("insert into t (id, c, k) values (?, ?, ?)")
        .unwrap();
    assert_eq!(ins.params, 3);
    for i in 1..=5 {
        s.execute(
            ins.id,
            &[
                Value::Int(i),
                Value::Bytes(format!("c{i}").into_bytes()),
                Value::Int(i * 10),
            ],
        )
        .unwrap();
    }
    let sel = s
        .prepare("select c, k from t where id between ? and ? order by id")
        .unwrap();
    assert_eq!(sel.params, 2);
    assert_eq!(sel.columns.len(), 2);
    assert_eq!(sel.columns[0].name, "c");
    match s.execute(sel.id, &[Value::Int(2), Value::Int(3)]).unwrap() {
        Output::Rows { rows, .. } => assert_eq!(
            rows,
            vec![
                vec![Value::Bytes(b"c2".to_vec()), Value::Int(20)],
                vec![Value::Bytes(b"c3".to_vec()), Value::Int(30)],
            ]
        ),
        o => panic!("{o:?}"),
    }
    let upd = s.prepare("update t set k = k + 1 where id = ?").unwrap();
    assert_eq!(
        s.execute(upd.id, &[Value::Int(1)]).unwrap(),
        Output::Done {
            affected_rows: 1,
            last_insert_id: 0,
            warnings: 0,
            info: "Rows matched: 1  Changed: 1  Warnings: 0".into()
        }
    );
    assert_eq!(s.execute(upd.id, &[]).unwrap_err().code, 1210);
    assert_eq!(s.execute(999, &[]).unwrap_err().code, 1243);
    let begin = s.prepare("BEGIN").unwrap();
    s.execute(begin.id, &[]).unwrap();
    assert!(s.in_transaction());
    s.close_statement(upd.id);
    assert_eq!(s.execute(upd.id, &[Value::Int(1)]).unwrap_err().code, 1243);
}

#[test]
fn auto_increment_ids_are_distinct_and_rise_per_node() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database ai; use ai; create table t (id bigint primary key auto_increment, who int)",
    );
    let other = Db::engine_on(&db.cluster, Default::default(), 2);
    let per = 40;
    let ids: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|w| {
                let mut c = if w % 2 == 0 {
                    db.session()
                } else {
                    db.session_of(&other)
                };
                scope.spawn(move || {
                    ok(&mut c, "use ai");
                    (0..per)
                        .map(
                            |_| match ok(&mut c, &format!("insert into t (who) values ({w})")) {
                                Output::Done { last_insert_id, .. } => last_insert_id,
                                o => panic!("{o:?}"),
                            },
                        )
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = ids.iter().flatten().copied().collect();
    for one in &ids {
        assert!(
            one.windows(2).all(|w| w[0] < w[1]),
            "ids rise within a session: {one:?}"
        );
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 4 * per);
    assert_eq!(
        lines(&mut s, "select count(*), count(distinct id) from t"),
        [format!("{0}|{0}", 4 * per)]
    );
    // An explicit id above the counter moves it: the next generated id is above it.
    ok(&mut s, "insert into t values (100000, 9)");
    match ok(&mut s, "insert into t (who) values (9)") {
        Output::Done { last_insert_id, .. } => assert!(last_insert_id > 100000, "{last_insert_id}"),
        o => panic!("{o:?}"),
    }
}

/// Each statement's result carries the session's flags of right after it; a client without
/// multi-statements gets MariaDB's 1064 for a query of several (none of them run), while
/// comments after the last `;` are no statement.
#[test]
fn statement_results_carry_their_own_flags_and_multi_statements_off_refuses() {
    let db = Db::start();
    let mut s = db.session();
    ok(
        &mut s,
        "create database m; use m; create table t (id int primary key)",
    );
    let r = s.query_statements("begin; insert into t values (1); commit", true);
    let flags: Vec<bool> = r.iter().map(|x| x.in_transaction).collect();
    assert_eq!(flags, [true, true, false], "{r:?}");
    assert!(r.iter().all(|x| x.result.is_ok() && x.autocommit));

    let r = s.query_statements(
        "insert into t values (2);\n insert into t values (3)",
        false,
    );
    assert_eq!(r.len(), 1, "{r:?}");
    let e = r[0].result.as_ref().expect_err("refused");
    assert_eq!(e.code, 1064);
    assert!(
        e.message
            .ends_with("near 'insert into t values (3)' at line 2"),
        "{}",
        e.message
    );
    let r = s.query_statements("select count(*) from t -- how many\n; -- none ran\n", false);
    assert_eq!(r.len(), 1, "{r:?}");
    match &r[0].result {
        Ok(Output::Rows { rows, .. }) => assert_eq!(rows.len(), 1, "{rows:?}"),
        other => panic!("count: {other:?}"),
    }
    assert_eq!(
        lines(&mut s, "select count(*) from t"),
        ["1"],
        "only the first insert"
    );
    assert_eq!(
        s.query("-- only a comment")[0].as_ref().map_err(|e| e.code),
        Err(1065)
    );
}
