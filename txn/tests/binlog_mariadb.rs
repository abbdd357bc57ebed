//! The coordinator's binlog read by MariaDB's own tools: `mariadb-binlog
//! --verify-binlog-checksum -v` accepts every file and prints exactly the committed history,
//! and `mariadb-binlog FILES | mariadb` into a private server in its default STRICT mode
//! reproduces the store's table. Skipped (saying so) when MariaDB is not installed; failing
//! then when `SURGE_REQUIRE_MARIADB_BINLOG=1` / `SURGE_REQUIRE_MARIADB_SERVER=1`, as in CI.

mod binlog_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use binlog_support::{Table, check_binlog, cluster, key, store_table};
use surge_testkit::mariadb_binlog;
use surge_testkit::mariadb_server::MariadbServer;
use surge_txn::{BinlogOptions, ClientConfig, TxnClient, TxnMode};

/// A coordinator with small binlog files (rotation) and a 1 MiB rename threshold.
fn coordinator(c: &surge_txn::LocalCluster, dir: &Path) -> TxnClient {
    let opts = BinlogOptions::new(dir)
        .with_large_commit_threshold(1 << 20)
        .with_max_binlog_size(64 << 10)
        .with_server_id(7)
        .with_gtid_domain(3);
    let config = ClientConfig::default().with_binlog(Some(opts));
    TxnClient::open(c.router(), config).expect("coordinator")
}

/// One row statement as the binlog should show it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Row {
    Insert(String, String),
    Update(String, String),
    Delete(String),
}

/// `k` as `mariadb-binlog -v` prints it (read lossily as UTF-8): control bytes as `\xNN`,
/// other bytes as they are.
fn printed(k: &[u8]) -> String {
    let mut raw = Vec::new();
    for &b in k {
        if b < 0x20 {
            raw.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        } else {
            raw.push(b);
        }
    }
    String::from_utf8_lossy(&raw).into_owned()
}

/// A single-threaded workload whose history the test knows: per committed transaction (by
/// start_ts) its row statements in order. Some transactions fail or roll back.
fn workload(client: &TxnClient) -> Vec<(u64, Vec<Row>)> {
    let mut table = Table::new();
    let mut history = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..40u64 {
        let mode = if i % 3 == 0 {
            TxnMode::Optimistic
        } else {
            TxnMode::Pessimistic
        };
        let mut t = client.begin(mode).expect("begin");
        let mut rows = Vec::new();
        let mut after = table.clone();
        for _ in 0..1 + next() % 4 {
            let r = (next() % 4) as u8;
            let k = key(r, &format!("key{}", next() % 6));
            let ks = printed(&k);
            if next() % 4 == 0 {
                t.delete(&k).expect("delete");
                if after.remove(&k).is_some() {
                    rows.push(Row::Delete(ks));
                }
            } else {
                let v = format!("value-{i}-{}", next() % 100);
                t.put(&k, v.as_bytes()).expect("put");
                let row = if after.contains_key(&k) {
                    Row::Update(ks, v.clone())
                } else {
                    Row::Insert(ks, v.clone())
                };
                after.insert(k, v.into_bytes());
                rows.push(row);
            }
        }
        let start_ts = t.start_ts();
        if i % 7 == 6 {
            t.rollback();
            continue;
        }
        t.commit().expect("commit");
        table = after;
        history.push((start_ts, rows));
    }
    // One large transaction: spills past 1 MiB and commits by rename.
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    let mut rows = Vec::new();
    let v = "L".repeat(40 << 10);
    for i in 0..40u8 {
        let k = key(i % 4, &format!("large{i:02}"));
        t.put(&k, v.as_bytes()).expect("put");
        rows.push(Row::Insert(printed(&k), v.clone()));
    }
    let start_ts = t.start_ts();
    t.commit().expect("commit large");
    history.push((start_ts, rows));
    history
}

/// The `'…'` value of a `###   @N='…'` line (the test's keys and values need no escapes).
fn quoted(line: &str) -> String {
    let v = line.split_once('=').map_or("", |(_, v)| v).trim();
    v.trim_matches('\'').to_string()
}

/// The row statements and xids `mariadb-binlog -v` printed, per transaction, in order.
fn parse_history(text: &str) -> Vec<(u64, Vec<Row>)> {
    let mut out = Vec::new();
    let mut rows = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let at = |j: usize| lines.get(i + j).copied().unwrap_or("");
        if l.starts_with("### INSERT INTO `surgedb`.`kv`") {
            rows.push(Row::Insert(quoted(at(2)), quoted(at(3))));
        } else if l.starts_with("### UPDATE `surgedb`.`kv`") {
            rows.push(Row::Update(quoted(at(2)), quoted(at(4))));
        } else if l.starts_with("### DELETE FROM `surgedb`.`kv`") {
            rows.push(Row::Delete(quoted(at(2))));
        } else if let Some(x) = l.find("Xid = ").map(|p| &l[p + 6..]) {
            let xid = x.trim().parse().expect("xid");
            out.push((xid, std::mem::take(&mut rows)));
        }
        i += 1;
    }
    out
}

#[test]
fn mariadb_binlog_verifies_every_file_and_prints_the_committed_history() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(&c, &dir.path().join("binlog"));
    let history = workload(&client);
    let binlog = client.binlog().expect("binlog");
    assert_eq!(binlog.stats().renames, 1);
    let files = binlog.file_paths();
    assert!(files.len() >= 3, "rotation: {files:?}");
    let Some(text) = mariadb_binlog::verify(&files, "-v") else {
        return;
    };
    assert!(text.contains("GTID 3-7-"), "domain 3, server 7");
    let printed = parse_history(&text);
    assert_eq!(printed.len(), history.len());
    for (got, want) in printed.iter().zip(&history) {
        assert_eq!(got, want, "transaction {}", want.0);
    }
}

#[test]
fn the_binlog_replays_into_a_strict_mariadb_to_the_store_table() {
    let Some(server) = MariadbServer::start() else {
        return;
    };
    let mode = server.sql("SELECT @@GLOBAL.sql_mode");
    assert!(mode.contains("STRICT_TRANS_TABLES"), "sql_mode {mode}");
    server.sql(
        "CREATE DATABASE surgedb; CREATE TABLE surgedb.kv \
         (k VARBINARY(3072) NOT NULL PRIMARY KEY, v LONGBLOB) ENGINE=InnoDB",
    );
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(&c, &dir.path().join("binlog"));
    // Concurrent conflicting writers over few keys: the order of their groups matters.
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let client = client.clone();
            let acked = Arc::clone(&acked);
            s.spawn(move || {
                for i in 0..20u64 {
                    let mode = if (t + i) % 2 == 0 {
                        TxnMode::Pessimistic
                    } else {
                        TxnMode::Optimistic
                    };
                    let Ok(mut txn) = client.begin(mode) else {
                        continue;
                    };
                    let a = key(((t + i) % 4) as u8, &format!("k{}", i % 3));
                    let b = key(((t + i + 1) % 4) as u8, &format!("k{}", (i + t) % 3));
                    let ok = if i % 5 == 4 {
                        txn.delete(&a).is_ok()
                    } else {
                        txn.put(&a, format!("{t}-{i}").as_bytes()).is_ok()
                            && txn.put(&b, format!("{t}-{i}b").as_bytes()).is_ok()
                    };
                    let ts = txn.start_ts();
                    if ok && txn.commit().is_ok() {
                        acked.lock().expect("lock").insert(ts);
                    }
                }
            });
        }
    });
    workload(&client);
    let acked = acked.lock().expect("lock").clone();
    let store = store_table(&client);
    check_binlog(&dir.path().join("binlog"), &acked, &store);
    let files = client.binlog().expect("binlog").file_paths();
    let (status, stderr) = server.replay_binlog(&files);
    assert!(status.success(), "replay: {stderr}\n{}", server.log_tail());
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
    let got: Vec<(String, String)> = server
        .sql("SELECT HEX(k), HEX(v) FROM surgedb.kv ORDER BY k")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    let want: Vec<(String, String)> = store.iter().map(|(k, v)| (hex(k), hex(v))).collect();
    assert_eq!(got.len(), want.len(), "rows");
    assert!(got == want, "MariaDB's table differs from the store");
}
