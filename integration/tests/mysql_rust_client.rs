//! The `mysql` crate (an independent Rust client, built on `mysql_common`'s client side)
//! against the MySQL server over the test backend: text queries, multi-statements,
//! prepared statements executed again and again, typed values of every column kind, long
//! data, errors with their codes, transactions, a wrong password.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;

use std::sync::atomic::Ordering;

use mysql::prelude::*;
use mysql::{Conn, Opts, OptsBuilder, Value as M};
use mysql_backend::{eventually, start};
use surgedb::mysql::{MysqlConfig, MysqlServer};

fn opts(server: &MysqlServer, user: &str, pass: &str, db: Option<&str>) -> Opts {
    OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(server.local_addr().port())
        .user(Some(user))
        .pass(Some(pass))
        .db_name(db)
        // Without these the driver asks the server for @@socket and @@max_allowed_packet,
        // which the test backend's grammar does not know.
        .prefer_socket(false)
        .max_allowed_packet(Some(64 << 20))
        .into()
}

fn code(e: &mysql::Error) -> u16 {
    match e {
        mysql::Error::MySqlError(e) => e.code,
        other => panic!("not a server error: {other:?}"),
    }
}

#[test]
fn text_queries_multi_statements_and_errors() {
    let (server, backend) = start(MysqlConfig::default().with_user("app", "s3cret"));
    let mut conn = Conn::new(opts(&server, "app", "s3cret", Some("test"))).unwrap();
    assert_eq!(server.connections(), 1);

    let v: Option<String> = conn.query_first("select database()").unwrap();
    assert_eq!(v.as_deref(), Some("test"));
    conn.query_drop("insert into t values (1, 'one')").unwrap();
    assert_eq!(conn.last_insert_id(), 1);
    assert_eq!(conn.affected_rows(), 1);

    // Three statements, three results; the middle one a result set.
    let mut result = conn
        .query_iter("insert into t values (2, 'two'); select id, name from t; select 7")
        .unwrap();
    let mut sets = Vec::new();
    while let Some(set) = result.iter() {
        let rows: Vec<mysql::Row> = set.map(Result::unwrap).collect();
        sets.push(rows.len());
    }
    drop(result);
    assert_eq!(sets, vec![0, 2, 1]);

    let rows: Vec<(i64, String)> = conn.query("select id, name from t").unwrap();
    assert_eq!(rows, vec![(1, "one".into()), (2, "two".into())]);

    let e = conn
        .query_drop("insert into t values (1, 'again')")
        .unwrap_err();
    assert_eq!(code(&e), 1062);
    let e = conn.query_drop("select boom").unwrap_err();
    assert_eq!(code(&e), 1054);
    let e = conn.query_drop("frobnicate").unwrap_err();
    assert_eq!(code(&e), 1064);
    // A statement after an error in the same query does not run.
    let e = conn
        .query_drop("select boom; insert into t values (3, 'three')")
        .unwrap_err();
    assert_eq!(code(&e), 1054);
    let n: Vec<i64> = conn
        .query("select id, name from t")
        .unwrap()
        .into_iter()
        .map(|(id, _): (i64, String)| id)
        .collect();
    assert_eq!(n, vec![1, 2]);

    // The connection is still usable after errors; COM_PING, COM_INIT_DB, COM_RESET_CONNECTION.
    conn.ping().unwrap();
    conn.select_db("sbtest").unwrap();
    let v: Option<String> = conn.query_first("select database()").unwrap();
    assert_eq!(v.as_deref(), Some("sbtest"));
    let e = conn.select_db("nope").unwrap_err();
    assert_eq!(code(&e), 1049);
    conn.reset().unwrap();

    drop(conn);
    eventually("the session dropped", || {
        backend.shared.dropped.load(Ordering::SeqCst) == 1
    });
    eventually("no connections", || server.connections() == 0);
    server.shutdown();
}

#[test]
fn typed_values_text_and_binary() {
    let (server, _backend) = start(MysqlConfig::default());
    let mut conn = Conn::new(opts(&server, "root", "", None)).unwrap();
    let expected = vec![
        M::Int(-5),
        M::Int(65_535),
        M::Int(-70_000),
        M::Int(123_456),
        M::UInt(u64::MAX),
        M::Float(1.5),
        M::Double(2.25),
        M::Bytes(b"-123.45".to_vec()),
        M::Bytes(b"char".to_vec()),
        M::Bytes("h\u{e9}llo".as_bytes().to_vec()),
        M::Bytes(b"blob\x01".to_vec()),
        M::Date(2026, 12, 2, 0, 0, 0, 0),
        M::Date(2026, 12, 2, 1, 2, 3, 456),
        M::Date(2026, 12, 2, 23, 59, 58, 0),
        M::NULL,
    ];

    // Binary protocol: the values arrive typed.
    let stmt = conn.prep("select types").unwrap();
    let row: mysql::Row = conn.exec_first(&stmt, ()).unwrap().unwrap();
    let cols = row.columns();
    let got: Vec<M> = row.unwrap();
    assert_eq!(got, expected);
    use mysql::consts::{ColumnFlags, ColumnType};
    assert_eq!(cols[0].column_type(), ColumnType::MYSQL_TYPE_TINY);
    assert!(cols[1].flags().contains(ColumnFlags::UNSIGNED_FLAG));
    assert_eq!(cols[6].column_type(), ColumnType::MYSQL_TYPE_DOUBLE);
    assert_eq!(cols[6].decimals(), 31);
    assert_eq!(cols[7].column_type(), ColumnType::MYSQL_TYPE_NEWDECIMAL);
    assert_eq!(cols[7].decimals(), 2);
    assert_eq!(cols[9].character_set(), 45);
    assert_eq!(cols[10].character_set(), 63);
    assert_eq!(cols[12].decimals(), 6);

    // Text protocol: the same values as text, parsed back by their column types.
    let row: mysql::Row = conn.query_first("select types").unwrap().unwrap();
    let text: Vec<Option<String>> = (0..row.len())
        .map(|i| {
            row.as_ref(i).and_then(|v| match v {
                M::NULL => None,
                M::Bytes(b) => Some(String::from_utf8(b.clone()).unwrap()),
                other => Some(format!("{other:?}")),
            })
        })
        .collect();
    assert_eq!(
        text,
        [
            "-5",
            "65535",
            "-70000",
            "123456",
            "18446744073709551615",
            "1.5",
            "2.25",
            "-123.45",
            "char",
            "h\u{e9}llo",
            "blob\u{1}",
            "2026-12-02",
            "2026-12-02 01:02:03.000456",
            "2026-12-02 23:59:58",
        ]
        .iter()
        .map(|s| Some(s.to_string()))
        .chain([None])
        .collect::<Vec<_>>()
    );
    server.shutdown();
}

#[test]
fn prepared_statements_execute_again_and_again() {
    let (server, backend) = start(MysqlConfig::default());
    let mut conn = Conn::new(opts(&server, "root", "", Some("test"))).unwrap();

    let insert = conn.prep("insert into t values (?, ?)").unwrap();
    assert_eq!(insert.num_params(), 2);
    for i in 1..=20i64 {
        conn.exec_drop(&insert, (i, format!("name{i}"))).unwrap();
    }
    let e = conn.exec_drop(&insert, (5i64, "dup")).unwrap_err();
    assert_eq!(code(&e), 1062);

    let get = conn.prep("select id, name from t where id = ?").unwrap();
    for i in [1i64, 7, 20] {
        let row: Option<(i64, String)> = conn.exec_first(&get, (i,)).unwrap();
        assert_eq!(row, Some((i, format!("name{i}"))));
    }
    let none: Option<(i64, String)> = conn.exec_first(&get, (99i64,)).unwrap();
    assert_eq!(none, None);

    // Parameters of every type the driver sends come back as they went.
    let echo = conn.prep("select ?, ?, ?, ?, ?, ?, ?").unwrap();
    let params = vec![
        M::Int(-42),
        M::UInt(u64::MAX),
        M::Double(0.125),
        M::Float(2.5),
        M::Bytes(b"bytes\x00\xff".to_vec()),
        M::Date(2026, 1, 31, 12, 30, 45, 999_999),
        M::NULL,
    ];
    for _ in 0..3 {
        let row: mysql::Row = conn.exec_first(&echo, params.clone()).unwrap().unwrap();
        let got: Vec<M> = row.unwrap();
        assert_eq!(
            got,
            vec![
                M::Int(-42),
                M::UInt(u64::MAX),
                M::Double(0.125),
                M::Double(2.5),
                M::Bytes(b"bytes\x00\xff".to_vec()),
                M::Date(2026, 1, 31, 12, 30, 45, 999_999),
                M::NULL,
            ]
        );
    }

    // A parameter over 16 MiB goes by COM_STMT_SEND_LONG_DATA; its echo is a row over
    // 16 MiB, split into packets.
    let one = conn.prep("select ?").unwrap();
    let big = vec![b'x'; (16 << 20) + 100];
    let row: mysql::Row = conn.exec_first(&one, (big.clone(),)).unwrap().unwrap();
    let got: Vec<M> = row.unwrap();
    assert_eq!(got, vec![M::Bytes(big)]);

    // Transactions through prepared BEGIN/COMMIT.
    let begin = conn.prep("begin").unwrap();
    let commit = conn.prep("commit").unwrap();
    conn.exec_drop(&begin, ()).unwrap();
    conn.exec_drop(&insert, (100i64, "in txn")).unwrap();
    conn.exec_drop(&commit, ()).unwrap();
    assert!(backend.shared.table.lock().unwrap().contains_key(&100));

    let e = conn.prep("delete from t").unwrap_err();
    assert_eq!(code(&e), 1295);
    conn.close(echo).unwrap();
    server.shutdown();
}

#[test]
fn wrong_password_and_unknown_database_are_refused() {
    let (server, backend) = start(MysqlConfig::default().with_user("app", "right"));
    let e = Conn::new(opts(&server, "app", "wrong", None)).unwrap_err();
    assert_eq!(code(&e), 1045);
    let msg = e.to_string();
    assert!(
        msg.contains("Access denied for user 'app'@'127.0.0.1' (using password: YES)"),
        "{msg}"
    );
    let e = Conn::new(opts(&server, "nobody", "", None)).unwrap_err();
    assert_eq!(code(&e), 1045);
    assert!(e.to_string().contains("(using password: NO)"), "{e}");
    let e = Conn::new(opts(&server, "app", "right", Some("nope"))).unwrap_err();
    assert_eq!(code(&e), 1049);
    assert_eq!(backend.shared.opened.load(Ordering::SeqCst), 0);
    Conn::new(opts(&server, "app", "right", None)).unwrap();
    server.shutdown();
}

#[test]
fn transactions_and_rollback_on_drop() {
    let (server, backend) = start(MysqlConfig::default());
    let mut conn = Conn::new(opts(&server, "root", "", Some("test"))).unwrap();
    // (The status flags themselves are checked byte by byte in mysql_protocol_edges.rs: this
    // driver does not expose them.)
    conn.query_drop("begin").unwrap();
    conn.query_drop("insert into t values (1, 'a')").unwrap();
    conn.query_drop("rollback").unwrap();
    let rows: Vec<(i64, String)> = conn.query("select id, name from t").unwrap();
    assert!(rows.is_empty());
    conn.query_drop("set autocommit = 0").unwrap();
    conn.query_drop("insert into t values (2, 'b')").unwrap();
    let rows: Vec<(i64, String)> = conn.query("select id, name from t").unwrap();
    assert_eq!(rows, vec![(2, "b".to_string())]);
    assert!(backend.shared.table.lock().unwrap().is_empty());
    // Dropping the connection with the transaction open rolls it back.
    drop(conn);
    eventually("the rollback on drop", || {
        backend.shared.rollbacks_on_drop.load(Ordering::SeqCst) == 1
    });
    assert!(backend.shared.table.lock().unwrap().is_empty());
    server.shutdown();
}
