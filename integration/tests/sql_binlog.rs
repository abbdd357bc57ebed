//! SQL writes in the binlog: each statement's rows as row events of its own table (a
//! Table_map naming the table), DDL as Query events, hot-row updates as Update_rows of the
//! table too; no `surgedb`.`kv` rows for SQL writes.

mod sql_support;

use std::sync::Arc;

use sql_support::{Db, affected, lines, ok};
use surge_binlog::{EventBody, LogReader, RowsKind};
use surge_txn::{BinlogOptions, ClientConfig, TxnClient};
use surgedb::sql::{ConnectionInfo, LocalClusterAdmin, SqlConfig, SqlEngine};

#[derive(Debug, Default)]
struct Logged {
    tables: Vec<String>,
    queries: Vec<String>,
    rows: Vec<RowsKind>,
}

fn logged(dir: &std::path::Path) -> Logged {
    let reader = LogReader::open(dir, "surge-bin", None).expect("open the binlog");
    let mut l = Logged::default();
    for t in reader.transactions() {
        let t = t.expect("a whole transaction");
        for (_, ev) in &t.events {
            match &ev.body {
                EventBody::TableMap(m) => l.tables.push(format!("{}.{}", m.database, m.table)),
                EventBody::Query(q) => l
                    .queries
                    .push(String::from_utf8_lossy(&q.query).into_owned()),
                EventBody::Rows(r) => l.rows.push(r.kind),
                _ => {}
            }
        }
    }
    l
}

#[test]
fn statements_log_row_events_of_their_tables() {
    let db = Db::start();
    let bin = tempfile::tempdir().expect("a binlog dir");
    let client = TxnClient::open(
        db.cluster.router(),
        ClientConfig::default().with_binlog(Some(BinlogOptions::new(bin.path()))),
    )
    .expect("a client with a binlog");
    let engine = SqlEngine::new(
        client,
        SqlConfig::default().with_admin(Arc::new(LocalClusterAdmin::new(db.cluster.clone()))),
    );
    let mut s = engine
        .session(&ConnectionInfo {
            id: 1,
            user: "root".into(),
            peer: "127.0.0.1:1".into(),
            database: None,
            interactive: false,
        })
        .expect("a session");
    ok(&mut s, "create database shop; use shop");
    ok(
        &mut s,
        "create table items (id int primary key, qty int not null, name varchar(20), d decimal(8,2), t datetime)",
    );
    ok(
        &mut s,
        "insert into items values (1, 5, 'a', '1.25', '2026-12-02 01:00:00'), (2, 7, null, null, null)",
    );
    assert_eq!(
        affected(&mut s, "update items set qty = qty - 1 where id = 1"),
        1
    );
    assert_eq!(affected(&mut s, "delete from items where id = 2"), 1);
    ok(&mut s, "set global hotspot = ON");
    assert_eq!(
        affected(
            &mut s,
            "update /*+ commit_on_success */ items set qty = qty - 1 where id = 1"
        ),
        1
    );
    assert_eq!(lines(&mut s, "select qty from items"), ["3"]);
    drop(s);
    drop(engine);
    let l = logged(bin.path());
    assert!(
        l.queries
            .iter()
            .any(|q| q.to_ascii_uppercase().starts_with("CREATE DATABASE")),
        "{l:?}"
    );
    assert!(
        l.queries
            .iter()
            .any(|q| q.to_ascii_uppercase().starts_with("CREATE TABLE")),
        "{l:?}"
    );
    assert!(
        l.tables.iter().all(|t| t == "shop.items"),
        "only the SQL table is mapped: {l:?}"
    );
    assert_eq!(
        l.rows,
        [
            RowsKind::Write,
            RowsKind::Update,
            RowsKind::Delete,
            RowsKind::Update
        ],
        "{l:?}"
    );
}
