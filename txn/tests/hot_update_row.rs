//! [`TxnClient::hot_update_row`]: hot-row updates of arbitrary row bytes (a SQL layer's
//! encoded row) grouped like [`TxnClient::hot_update`]'s integers: concurrent members of one
//! key commit together, each sees its predecessor's row, a refusal (a SQL error) fails only
//! its member, a missing row affects nothing, and with a binlog every kept member is its
//! own binlog transaction holding its own SQL row event (Update_rows of its table with full
//! images, chained in arrival order), not a kv row.

mod binlog_support;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use binlog_support::{cluster, coordinator, key};
use surge_binlog::{CRASH_ENV, EventBody, LogReader, RowsKind, crash_points};
use surge_testkit::CrashChild;
use surge_txn::{
    BinlogCharset, BinlogColumn, BinlogRow, BinlogTable, BinlogType, BinlogValue, HotGroupRecord,
    HotHints, HotOp, HotReject, RowUpdate, SqlRowChange, TxnError, TxnMode,
};

/// `shop`.`stock (id BIGINT UNSIGNED PRIMARY KEY, qty INT NOT NULL, name VARCHAR(8))`.
fn stock() -> Arc<BinlogTable> {
    Arc::new(
        BinlogTable::new(
            "shop",
            "stock",
            46,
            vec![
                BinlogColumn::new("id", BinlogType::BigInt).unsigned(),
                BinlogColumn::new("qty", BinlogType::Int),
                BinlogColumn::new(
                    "name",
                    BinlogType::VarChar {
                        len: 8,
                        charset: BinlogCharset::Utf8mb4,
                    },
                ),
            ],
        )
        .expect("valid")
        .with_primary_key(vec![0])
        .expect("valid"),
    )
}

/// The test's row encoding: `id,qty,name`.
fn encode(id: u64, qty: i64, name: &str) -> Vec<u8> {
    format!("{id},{qty},{name}").into_bytes()
}

fn decode(row: &[u8]) -> Option<(u64, i64, String)> {
    let text = std::str::from_utf8(row).ok()?;
    let mut it = text.splitn(3, ',');
    Some((
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.to_string(),
    ))
}

fn values(row: &[u8]) -> Vec<BinlogValue> {
    let (id, qty, name) = decode(row).unwrap_or_default();
    vec![
        BinlogValue::UInt(id),
        BinlogValue::Int(qty),
        BinlogValue::text(&name),
    ]
}

/// `UPDATE stock SET qty = qty + delta [, name = rename] WHERE id = ?`, refusing (as MySQL
/// error 1690) a quantity below 0.
#[derive(Debug)]
struct AddQty {
    delta: i64,
    rename: Option<String>,
    table: Arc<BinlogTable>,
}

impl RowUpdate for AddQty {
    fn apply(&self, current: &[u8]) -> Result<Vec<u8>, HotReject> {
        let (id, qty, name) = decode(current).ok_or(HotReject::Refused {
            code: 1105,
            message: "undecodable row".to_string(),
        })?;
        let next = qty + self.delta;
        if next < 0 {
            return Err(HotReject::Refused {
                code: 1690,
                message: format!("qty {next} out of range"),
            });
        }
        Ok(encode(id, next, self.rename.as_deref().unwrap_or(&name)))
    }

    fn binlog(&self, before: &[u8], after: &[u8]) -> Option<BinlogRow> {
        Some(BinlogRow {
            table: Arc::clone(&self.table),
            change: SqlRowChange::Update {
                before: values(before),
                after: values(after),
            },
        })
    }
}

fn add(delta: i64) -> Arc<dyn RowUpdate> {
    Arc::new(AddQty {
        delta,
        rename: None,
        table: stock(),
    })
}

/// An Update_rows image pair: (before, after).
type ImagePair = (Vec<BinlogValue>, Vec<BinlogValue>);

/// Every binlog transaction's xid and its Update_rows images of `stock`, (before, after)
/// (other rows events are skipped).
fn logged(dir: &std::path::Path) -> Vec<(u64, Vec<ImagePair>)> {
    let table = stock();
    let reader = LogReader::open(dir, "surge-bin", None).expect("open");
    let mut out = Vec::new();
    for t in reader.transactions() {
        let t = t.expect("whole");
        let mut pairs = Vec::new();
        for (_, ev) in &t.events {
            if let EventBody::Rows(r) = &ev.body
                && r.kind == RowsKind::Update
            {
                let rows = r.table_rows(&table).expect("rows of stock");
                for p in rows.chunks(2) {
                    pairs.push((p[0].clone(), p[1].clone()));
                }
            }
        }
        out.push((t.xid.expect("xid"), pairs));
    }
    out
}

#[test]
fn concurrent_row_updates_group_and_each_member_logs_its_own_sql_row() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = coordinator(&c, &bin);
    let hot = key(1, "stock/7");
    // The row is created with the caller's own event, not a kv row.
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&hot, &encode(7, 100, "bolt")).expect("put");
    t.binlog_rows(
        &stock(),
        &[SqlRowChange::Insert {
            after: values(&encode(7, 100, "bolt")),
        }],
    )
    .expect("log");
    t.commit().expect("commit");

    let records: Arc<Mutex<Vec<HotGroupRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    client.set_hot_group_observer(Some(Arc::new(move |r: &HotGroupRecord| {
        sink.lock().expect("not poisoned").push(r.clone())
    })));
    const THREADS: i64 = 16;
    const EACH: i64 = 5;
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..EACH {
                    let out = client
                        .hot_update_row(&hot, add(-1), HotHints::hot_update())
                        .expect("update");
                    outcomes.lock().expect("not poisoned").push(out);
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().expect("not poisoned");
    let total = (THREADS * EACH) as u64;
    assert_eq!(outcomes.len() as u64, total);
    // Each member saw its predecessor's row: every after-quantity appears once.
    let mut afters: Vec<i64> = outcomes
        .iter()
        .map(|o| {
            assert_eq!(o.affected_rows, 1);
            let (_, b, _) = decode(o.before.as_deref().expect("before")).expect("row");
            let (_, a, _) = decode(o.after.as_deref().expect("after")).expect("row");
            assert_eq!(a, b - 1);
            a
        })
        .collect();
    afters.sort_unstable();
    assert_eq!(afters, (100 - total as i64..100).collect::<Vec<_>>());
    assert_eq!(
        client.get(&hot).expect("get"),
        Some(encode(7, 100 - total as i64, "bolt"))
    );
    let counters = client.hot_counters();
    assert_eq!(counters.members, total);
    assert!(counters.groups <= total);

    // The observer saw byte rows; the integer view is empty (the rows are not integers).
    let records = records.lock().expect("not poisoned").clone();
    let kept: usize = records.iter().map(|r| r.rows.len()).sum();
    assert_eq!(kept as u64, total);
    assert!(records.iter().all(|r| r.changes.is_empty()));

    // One binlog transaction per member, after the insert, each one Update_rows of
    // `stock` with full images; replayed in log order they chain from 100 down.
    let log = logged(&bin);
    assert_eq!(log.len() as u64, 1 + total);
    let mut qty = 100;
    for (_, pairs) in &log[1..] {
        assert_eq!(pairs.len(), 1);
        let (before, after) = &pairs[0];
        assert_eq!(before[1], BinlogValue::Int(qty));
        assert_eq!(after[1], BinlogValue::Int(qty - 1));
        assert_eq!(after[2], BinlogValue::text("bolt"));
        qty -= 1;
    }
    let files = client.binlog().expect("binlog").file_paths();
    if let Some(text) = surge_testkit::mariadb_binlog::verify(&files, "-v") {
        assert_eq!(
            text.matches("### UPDATE `shop`.`stock`").count() as u64,
            total
        );
        assert!(!text.contains("`surgedb`.`kv`"));
    }
}

#[test]
fn a_refusal_fails_only_its_member_and_a_missing_row_affects_none() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let client = coordinator(&c, &bin);
    let hot = key(2, "stock/9");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&hot, &encode(9, 1, "nut")).expect("put");
    t.commit().expect("commit");

    let ok = client
        .hot_update_row(&hot, add(-1), HotHints::hot_update().rollback_on_fail())
        .expect("to zero");
    assert_eq!(ok.after, Some(encode(9, 0, "nut")));
    assert_eq!(ok.group_writes, 1);
    assert!(ok.commit_ts.is_some());
    let e = client
        .hot_update_row(&hot, add(-1), HotHints::hot_update().rollback_on_fail())
        .expect_err("below zero");
    match e {
        TxnError::HotUpdateRejected {
            reason: HotReject::Refused { code, message },
            rollback,
            ..
        } => {
            assert_eq!(code, 1690);
            assert!(message.contains("qty -1"));
            assert!(rollback);
        }
        other => panic!("{other}"),
    }
    // A binlog row event whose values do not fit its table refuses the member too, and
    // nothing of it is written.
    let too_long: Arc<dyn RowUpdate> = Arc::new(AddQty {
        delta: 1,
        rename: Some("a name far too long".to_string()),
        table: stock(),
    });
    let e = client
        .hot_update_row(&hot, too_long, HotHints::hot_update())
        .expect_err("does not fit VARCHAR(8)");
    assert!(
        matches!(&e, TxnError::HotUpdateRejected { reason: HotReject::Refused { message, .. }, .. } if message.contains("column name")),
        "{e}"
    );
    assert_eq!(client.get(&hot).expect("get"), Some(encode(9, 0, "nut")));

    let missing = client
        .hot_update_row(
            &key(3, "stock/none"),
            add(1),
            HotHints::new().commit_on_success(),
        )
        .expect("no row");
    assert_eq!(
        (
            missing.affected_rows,
            missing.before,
            missing.after,
            missing.commit_ts
        ),
        (0, None, None, None)
    );
    let e = client
        .hot_update_row(&key(3, "stock/none"), add(1), HotHints::hot_update())
        .expect_err("no row affected (target_affect_row(1))");
    assert!(matches!(e, TxnError::TargetAffectRow { actual: 0, .. }));

    // Only the kept member was logged (after the kv insert of the row).
    let log = logged_xids(&bin);
    assert_eq!(log, 2);
}

/// How many binlog transactions the log holds.
fn logged_xids(dir: &std::path::Path) -> usize {
    LogReader::open(dir, "surge-bin", None)
        .expect("open")
        .transactions()
        .count()
}

#[test]
fn hot_op_and_row_updates_share_a_group_on_one_integer_key() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(&c, &dir.path().join("binlog"));
    let k = key(0, "counter");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&k, &HotOp::encode(10)).expect("put");
    t.commit().expect("commit");
    // A RowUpdate that doubles a decimal-ASCII integer, mixed with HotOp adds.
    #[derive(Debug)]
    struct Double;
    impl RowUpdate for Double {
        fn apply(&self, current: &[u8]) -> Result<Vec<u8>, HotReject> {
            let v = HotOp::decode(current).ok_or(HotReject::NotAnInteger {
                prefix: current.to_vec(),
            })?;
            Ok(HotOp::encode(v * 2))
        }
    }
    let out = client
        .hot_update(&k, HotOp::add(5), HotHints::hot_update())
        .expect("add");
    assert_eq!(out.value, Some(15));
    let out = client
        .hot_update_row(&k, Arc::new(Double), HotHints::hot_update())
        .expect("double");
    assert_eq!(out.after, Some(b"30".to_vec()));
    assert_eq!(client.get(&k).expect("get"), Some(b"30".to_vec()));
}

const DIR_ENV: &str = "SURGE_TXN_HOT_ROW_CRASH_DIR";
/// The row's quantity before the crash test's updates.
const CRASH_INITIAL: i64 = 1000;

/// The crash test's child (inert unless [`DIR_ENV`] is set): a store and a coordinator with
/// a binlog, the row inserted, then 16 threads adding 1 to its quantity with
/// `hot_update_row` (SQL row events) until a group's batch of members stops in
/// `surge-binlog` after its first member's transaction reached the file (crash point
/// `binlog.copy.between_txns`), where the parent kills it.
#[test]
fn child_process() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let c = cluster(&dir.join("cluster"));
    let client = coordinator(&c, &dir.join("binlog"));
    let hot = key(1, "stock/1");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&hot, &encode(1, CRASH_INITIAL, "gear")).expect("put");
    t.binlog_rows(
        &stock(),
        &[SqlRowChange::Insert {
            after: values(&encode(1, CRASH_INITIAL, "gear")),
        }],
    )
    .expect("log");
    t.commit().expect("commit the row");
    println!("ready");
    std::thread::scope(|s| {
        for _ in 0..16 {
            let (client, hot) = (client.clone(), hot.clone());
            s.spawn(move || {
                loop {
                    let out = client
                        .hot_update_row(&hot, add(1), HotHints::hot_update())
                        .expect("hot update");
                    let (_, qty, _) = decode(&out.after.expect("the row exists")).expect("row");
                    println!("acked {qty}");
                }
            });
        }
    });
}

#[test]
fn a_crash_between_two_sql_members_is_completed_by_recovery_from_the_journal() {
    let dir = tempfile::tempdir().expect("dir");
    let mut child = CrashChild::spawn(
        "child_process",
        [
            (DIR_ENV, dir.path().as_os_str()),
            (CRASH_ENV, OsStr::new(crash_points::COPY_BETWEEN_TXNS)),
        ],
    );
    let mut acked = Vec::new();
    child.wait_reached(|line| {
        if let Some(v) = line.strip_prefix("acked ") {
            acked.push(v.trim().parse::<i64>().expect("a value"));
        }
    });
    child.kill();

    let c = cluster(&dir.path().join("cluster"));
    let bin = dir.path().join("binlog");
    let before = logged(&bin).len();
    let client = coordinator(&c, &bin);
    let report = client.binlog_recovery().expect("binlog");
    assert!(!report.logged_now.is_empty(), "{report:?}");
    let txns = logged(&bin);
    assert!(txns.len() > before, "recovery wrote the missing members");
    assert_eq!(
        txns[before].0,
        txns[before - 1].0 + 1,
        "recovery continued the stopped group with its next member"
    );
    // Every member's transaction is one Update_rows of `stock` (the SQL event recovery took
    // from the journal, not a kv row), chained from the initial quantity to the store's.
    let stored = client.get(&key(1, "stock/1")).expect("get").expect("row");
    let (_, final_qty, _) = decode(&stored).expect("row");
    let mut qty = CRASH_INITIAL;
    for (xid, pairs) in &txns[1..] {
        assert_eq!(pairs.len(), 1, "txn {xid}");
        assert_eq!(pairs[0].0[1], BinlogValue::Int(qty), "txn {xid}: before");
        assert_eq!(pairs[0].1[1], BinlogValue::Int(qty + 1), "txn {xid}: after");
        qty += 1;
    }
    assert_eq!(qty, final_qty, "the chain ends at the store's row");
    for v in &acked {
        assert!(*v > CRASH_INITIAL && *v <= final_qty, "acknowledged {v}");
    }
}
