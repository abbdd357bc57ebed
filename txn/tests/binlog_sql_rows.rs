//! Transactions that log their own row events ([`Transaction::binlog_rows`],
//! [`Transaction::binlog_query`], [`TxnClient::binlog_query`]), as a SQL layer does for its
//! tables: the binlog group holds exactly the caller's events (no `surgedb`.`kv` rows for
//! the keys written), other transactions keep logging kv rows, a bad value fails only its
//! statement, a large one commits by rename, and a coordinator killed after the commit
//! point logs the caller's events at restart from its prepare journal.

mod binlog_support;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use binlog_support::{binlog_config, cluster, coordinator, key};
use surge_binlog::{EventBody, LogReader, RowsKind};
use surge_testkit::CrashChild;
use surge_txn::{
    BinlogCharset, BinlogColumn, BinlogTable, BinlogType, BinlogValue, SqlRowChange, TXN_CRASH_ENV,
    TXN_CRASH_SKIP_ENV, TxnClient, TxnError, TxnMode, txn_crash_points,
};

const DIR_ENV: &str = "SURGE_TXN_SQL_CRASH_DIR";

/// `shop`.`items (id BIGINT UNSIGNED PRIMARY KEY, qty INT NOT NULL, name VARCHAR(40))`.
fn items() -> Arc<BinlogTable> {
    Arc::new(
        BinlogTable::new(
            "shop",
            "items",
            45,
            vec![
                BinlogColumn::new("id", BinlogType::BigInt).unsigned(),
                BinlogColumn::new("qty", BinlogType::Int),
                BinlogColumn::new(
                    "name",
                    BinlogType::VarChar {
                        len: 40,
                        charset: BinlogCharset::Utf8mb4,
                    },
                )
                .nullable(),
            ],
        )
        .expect("valid table")
        .with_primary_key(vec![0])
        .expect("valid key"),
    )
}

fn row(id: u64, qty: i64, name: &str) -> Vec<BinlogValue> {
    vec![
        BinlogValue::UInt(id),
        BinlogValue::Int(qty),
        BinlogValue::text(name),
    ]
}

/// The row's key in the store (region picked by the id).
fn row_key(id: u64) -> Vec<u8> {
    key((id % 4) as u8, &format!("items/{id}"))
}

/// What one binlog transaction held: its xid, the tables its Table_maps named, its Query
/// statements, and its rows of `items` (kind, images).
struct Logged {
    xid: u64,
    tables: Vec<String>,
    queries: Vec<String>,
    rows: Vec<(RowsKind, Vec<Vec<BinlogValue>>)>,
}

fn logged(dir: &Path) -> Vec<Logged> {
    let table = items();
    let reader = LogReader::open(dir, "surge-bin", None).expect("open the binlog");
    let mut out = Vec::new();
    for t in reader.transactions() {
        let t = t.expect("a whole transaction");
        let mut l = Logged {
            xid: t.xid.expect("an xid"),
            tables: Vec::new(),
            queries: Vec::new(),
            rows: Vec::new(),
        };
        for (_, ev) in &t.events {
            match &ev.body {
                EventBody::TableMap(m) => l.tables.push(format!("{}.{}", m.database, m.table)),
                EventBody::Query(q) => l
                    .queries
                    .push(String::from_utf8_lossy(&q.query).into_owned()),
                EventBody::Rows(r) if r.table_id == table.table_id() => {
                    l.rows
                        .push((r.kind, r.table_rows(&table).expect("rows of items")));
                }
                _ => {}
            }
        }
        out.push(l);
    }
    out
}

#[test]
fn a_sql_transaction_logs_only_its_own_events_and_others_keep_kv_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = coordinator(&c, &bin);
    let table = items();

    // INSERT two rows (two regions: two-phase commit), in a pessimistic transaction. A kv
    // write made before the first binlog_rows is not logged either.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&key(3, "meta"), b"schema v1").expect("put");
    assert!(!t.binlog_is_caller_logged());
    t.binlog_annotate("INSERT INTO items VALUES (1, 10, 'apple'), (2, 20, 'pear')")
        .expect("annotate");
    for id in [1, 2] {
        t.insert(&row_key(id), format!("{id}").as_bytes())
            .expect("insert");
    }
    t.binlog_rows(
        &table,
        &[
            SqlRowChange::Insert {
                after: row(1, 10, "apple"),
            },
            SqlRowChange::Insert {
                after: row(2, 20, "pear"),
            },
        ],
    )
    .expect("log rows");
    assert!(t.binlog_is_caller_logged());
    let insert_ts = t.start_ts();
    t.commit().expect("commit");

    // UPDATE and DELETE in an optimistic one, logged before the writes: the writes then
    // need no read to learn whether their keys existed (no kv row is logged for them).
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.binlog_rows(
        &table,
        &[SqlRowChange::Update {
            before: row(1, 10, "apple"),
            after: row(1, 9, "apple"),
        }],
    )
    .expect("log update");
    t.put(&row_key(1), b"1'").expect("put");
    t.binlog_rows(
        &table,
        &[SqlRowChange::Delete {
            before: row(2, 20, "pear"),
        }],
    )
    .expect("log delete");
    t.delete(&row_key(2)).expect("delete");
    let update_ts = t.start_ts();
    t.commit().expect("commit");

    // An ordinary transaction still logs its kv rows.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&key(0, "plain"), b"v").expect("put");
    let plain_ts = t.start_ts();
    t.commit().expect("commit");

    // A rolled-back SQL transaction logs nothing.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&row_key(3), b"3").expect("put");
    t.binlog_rows(
        &table,
        &[SqlRowChange::Insert {
            after: row(3, 1, "x"),
        }],
    )
    .expect("log");
    t.rollback();

    let log = logged(&bin);
    // The kv write of the first transaction made `surgedb.kv` rows nowhere but in the plain
    // transaction.
    let xids: Vec<u64> = log.iter().map(|l| l.xid).collect();
    assert_eq!(xids, vec![insert_ts, update_ts, plain_ts]);
    assert_eq!(log[0].tables, vec!["shop.items"]);
    assert_eq!(
        log[0].rows,
        vec![(
            RowsKind::Write,
            vec![row(1, 10, "apple"), row(2, 20, "pear")]
        )]
    );
    assert_eq!(log[1].tables, vec!["shop.items", "shop.items"]);
    assert_eq!(
        log[1].rows,
        vec![
            (
                RowsKind::Update,
                vec![row(1, 10, "apple"), row(1, 9, "apple")]
            ),
            (RowsKind::Delete, vec![row(2, 20, "pear")]),
        ]
    );
    assert_eq!(log[2].tables, vec!["surgedb.kv"]);
    // The store has what the transactions wrote, whatever was logged.
    assert_eq!(
        client.get(&key(3, "meta")).expect("get"),
        Some(b"schema v1".to_vec())
    );
    assert_eq!(client.get(&row_key(2)).expect("get"), None);

    let files: Vec<_> = client.binlog().expect("binlog").file_paths();
    if let Some(text) = surge_testkit::mariadb_binlog::verify(&files, "-vv") {
        assert_eq!(text.matches("### INSERT INTO `shop`.`items`").count(), 2);
        assert!(text.contains("### UPDATE `shop`.`items`"));
        assert!(text.contains("#Q> INSERT INTO items VALUES (1, 10, 'apple'), (2, 20, 'pear')"));
        assert!(text.contains("###   @3='apple' /* VARSTRING(160)"));
        assert_eq!(text.matches("### DELETE FROM `shop`.`items`").count(), 1);
        assert_eq!(text.matches("### INSERT INTO `surgedb`.`kv`").count(), 1);
    }
}

#[test]
fn ddl_is_logged_inside_a_transaction_or_on_its_own() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = coordinator(&c, &bin);
    client
        .binlog_query("shop", "CREATE DATABASE IF NOT EXISTS shop")
        .expect("DDL alone");
    // A transaction that only logs DDL (writes no key) still logs its group at commit.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.binlog_query(
        "shop",
        "CREATE TABLE items (id BIGINT UNSIGNED PRIMARY KEY)",
    )
    .expect("DDL");
    let ddl_ts = t.start_ts();
    t.commit().expect("commit");
    // With a key written too (the schema's own key, say).
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&key(1, "schema/items"), b"v2").expect("put");
    t.binlog_query(
        "shop",
        "ALTER TABLE items ADD COLUMN qty INT NOT NULL DEFAULT 0",
    )
    .expect("DDL");
    t.commit().expect("commit");
    assert!(matches!(
        client.binlog_query("shop", "  "),
        Err(TxnError::Binlog { .. })
    ));

    let log = logged(&bin);
    let queries: Vec<Vec<String>> = log.iter().map(|l| l.queries.clone()).collect();
    assert_eq!(
        queries,
        vec![
            vec!["CREATE DATABASE IF NOT EXISTS shop".to_string()],
            vec!["CREATE TABLE items (id BIGINT UNSIGNED PRIMARY KEY)".to_string()],
            vec!["ALTER TABLE items ADD COLUMN qty INT NOT NULL DEFAULT 0".to_string()],
        ]
    );
    assert_eq!(log[1].xid, ddl_ts);
    assert!(log.iter().all(|l| l.tables.is_empty()), "no kv rows");
    let xids: std::collections::BTreeSet<u64> = log.iter().map(|l| l.xid).collect();
    assert_eq!(xids.len(), 3, "distinct xids");
}

#[test]
fn a_bad_value_fails_its_statement_and_the_transaction_goes_on() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = coordinator(&c, &bin);
    let table = items();
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&row_key(5), b"5").expect("put");
    let bad = vec![
        BinlogValue::UInt(5),
        BinlogValue::Int(i64::from(i32::MAX) + 1),
        BinlogValue::Null,
    ];
    let e = t
        .binlog_rows(&table, &[SqlRowChange::Insert { after: bad }])
        .expect_err("out of range");
    match &e {
        TxnError::BinlogValue { table, column, .. } => {
            assert_eq!((table.as_str(), column.as_str()), ("shop.items", "qty"));
        }
        other => panic!("{other}"),
    }
    assert!(!e.is_retryable());
    t.binlog_rows(
        &table,
        &[SqlRowChange::Insert {
            after: vec![BinlogValue::UInt(5), BinlogValue::Int(1), BinlogValue::Null],
        }],
    )
    .expect("a good row");
    t.commit().expect("commit");
    let log = logged(&bin);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].rows.len(), 1);
    assert_eq!(log[0].rows[0].1[0][2], BinlogValue::Null);
}

#[test]
fn without_a_binlog_the_calls_do_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = TxnClient::new(c.router(), surge_txn::ClientConfig::default());
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&row_key(1), b"1").expect("put");
    t.binlog_rows(
        &items(),
        &[SqlRowChange::Insert {
            after: row(1, 1, "a"),
        }],
    )
    .expect("no-op");
    t.binlog_query("shop", "DROP TABLE x").expect("no-op");
    assert!(!t.binlog_is_caller_logged());
    t.commit().expect("commit");
    client.binlog_query("shop", "DROP TABLE y").expect("no-op");
    assert_eq!(client.get(&row_key(1)).expect("get"), Some(b"1".to_vec()));
}

#[test]
fn a_large_sql_transaction_spills_and_commits_by_rename() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = coordinator(&c, &bin);
    let table = items();
    let name = "n".repeat(40);
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    let mut changes = Vec::new();
    // About 1.5 MiB of row images: past the test's 1 MiB rename threshold.
    for id in 0..25_000u64 {
        if id % 1000 == 0 {
            t.put(&row_key(id), b"r").expect("put");
        }
        changes.push(SqlRowChange::Insert {
            after: row(id, 1, &name),
        });
    }
    t.binlog_rows(&table, &changes).expect("log");
    let ts = t.start_ts();
    t.commit().expect("commit");
    assert_eq!(client.binlog().expect("binlog").stats().renames, 1);
    let log = logged(&bin);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].xid, ts);
    let n: usize = log[0].rows.iter().map(|(_, r)| r.len()).sum();
    assert_eq!(n, 25_000);
}

/// The child of the crash test: commits SQL-logged transactions, printing `inflight <ts>`
/// and `acked <ts>`, until the crash point stops it.
#[test]
fn child_process() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let c = cluster(&dir.join("cluster"));
    let client = coordinator(&c, &dir.join("binlog"));
    let table = items();
    for id in 0.. {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        // Two regions: a two-phase commit, so the crash point after the primary is hit.
        t.put(&row_key(id), b"a").expect("put");
        t.put(&row_key(id + 1000 + 1), b"b").expect("put");
        t.binlog_rows(
            &table,
            &[
                SqlRowChange::Insert {
                    after: row(id, 1, "first"),
                },
                SqlRowChange::Insert {
                    after: row(id + 1001, 2, "second"),
                },
            ],
        )
        .expect("log");
        println!("inflight {}", t.start_ts());
        let ts = t.start_ts();
        t.commit().expect("commit");
        println!("acked {ts}");
    }
}

#[test]
fn a_crash_after_the_commit_point_logs_the_callers_events_at_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let mut child = CrashChild::spawn(
        "child_process",
        [
            (DIR_ENV, dir.path().as_os_str()),
            (
                TXN_CRASH_ENV,
                OsStr::new(txn_crash_points::AFTER_PRIMARY_COMMIT),
            ),
            (TXN_CRASH_SKIP_ENV, OsStr::new("2")),
        ],
    );
    let mut acked = Vec::new();
    let mut inflight = None;
    child.wait_reached(|line| {
        if let Some(ts) = line.strip_prefix("inflight ") {
            inflight = Some(ts.trim().parse::<u64>().expect("ts"));
        } else if let Some(ts) = line.strip_prefix("acked ") {
            acked.push(ts.trim().parse::<u64>().expect("ts"));
        }
    });
    child.kill();
    let inflight = inflight.expect("a transaction in flight");
    assert_eq!(acked.len(), 2);

    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = TxnClient::open(c.router(), binlog_config(&bin)).expect("restart");
    let report = client.binlog_recovery().expect("binlog");
    assert_eq!(report.logged_now, vec![inflight]);
    let log = logged(&bin);
    let xids: Vec<u64> = log.iter().map(|l| l.xid).collect();
    assert_eq!(xids, [acked.clone(), vec![inflight]].concat());
    let last = log.last().expect("the recovered group");
    assert_eq!(
        last.tables,
        vec!["shop.items"],
        "the caller's events, not kv rows"
    );
    assert_eq!(
        last.rows,
        vec![(
            RowsKind::Write,
            vec![row(2, 1, "first"), row(1003, 2, "second")]
        )]
    );
}
