//! A real MariaDB 10.11 replica follows a 3-node cluster through its replica stream while
//! nodes are `kill -9`ed and restarted, the one serving the replica included: at the end
//! the replica's tables equal the store's row by row, it reports no error, and every
//! node's copy of the stream is byte-identical.
//!
//! Needs mariadb-server (`mariadbd`, `mariadb-install-db`): skipped when missing, a
//! failure when `SURGE_REQUIRE_MARIADB_SERVER` is set.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use surgedb::local::{ClusterManifest, StartOptions};

use common::{exe, stream_file_bytes, wait_gone};

const LARGE_GROUP: &str = "1048576";

fn opts() -> StartOptions {
    StartOptions::new(exe())
        .with_node_args(
            [
                "--lock-mode",
                "in-memory",
                "--stream-large-group",
                LARGE_GROUP,
                "--stream-file-size",
                "2097152",
            ]
            .map(String::from)
            .to_vec(),
        )
        .with_ready_timeout(Duration::from_secs(120))
}

fn mysql_available() -> bool {
    let ok = ["mariadbd", "mariadb-install-db"].iter().all(|p| {
        std::process::Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !ok {
        assert!(
            std::env::var_os("SURGE_REQUIRE_MARIADB_SERVER").is_none(),
            "mariadb-server is required (SURGE_REQUIRE_MARIADB_SERVER) but mariadbd is missing"
        );
        eprintln!("skipped: needs mariadb-server (mariadbd, mariadb-install-db)");
    }
    ok
}

fn conn_to(addr: &str) -> Option<mysql::Conn> {
    let (host, port) = addr.rsplit_once(':')?;
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some(host))
        .tcp_port(port.parse().ok()?)
        .user(Some("root"))
        .read_timeout(Some(Duration::from_secs(30)))
        .write_timeout(Some(Duration::from_secs(30)))
        .prefer_socket(false);
    mysql::Conn::new(opts).ok()
}

fn mysql_addr(dir: &Path, node: u64) -> String {
    ClusterManifest::load(dir)
        .unwrap()
        .node(node)
        .unwrap()
        .mysql_addr
        .clone()
        .unwrap()
}

fn kill9(dir: &Path, node: u64) {
    let pid = ClusterManifest::load(dir).unwrap().node(node).unwrap().pid;
    assert!(surgedb::local::signal(pid, "KILL"));
    wait_gone(pid);
}

/// Rows of `table` ordered by primary key, as text.
fn rows(c: &mut mysql::Conn, table: &str) -> Vec<String> {
    c.query_map(
        format!("SELECT * FROM {table} ORDER BY 1"),
        |r: mysql::Row| {
            (0..r.len())
                .map(|i| match r.as_ref(i) {
                    Some(mysql::Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                    Some(v) => v.as_sql(true),
                    None => "?".into(),
                })
                .collect::<Vec<_>>()
                .join("|")
        },
    )
    .unwrap()
}

/// One worker: a node's MySQL port, a mix of writes on shared rows; errors of a node
/// being killed (or of lock conflicts) cost the statement, and the worker reconnects.
fn worker(dir: &Path, node: u64, stop: &AtomicBool, done: &AtomicU64) {
    let mut conn: Option<mysql::Conn> = None;
    let mut i: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        let Some(c) = conn.as_mut() else {
            conn = conn_to(&mysql_addr(dir, node));
            if conn.is_none() {
                std::thread::sleep(Duration::from_millis(200));
            }
            continue;
        };
        let id = (i * 7 + node * 13) % 60 + 1;
        let stmt = match i % 6 {
            0 => format!("INSERT IGNORE INTO r.t VALUES ({id}, {i}, 'n{node}')"),
            1 | 2 => format!("UPDATE r.t SET v = v + {node}, note = 'u{node}-{i}' WHERE id = {id}"),
            3 => format!("DELETE FROM r.t WHERE id = {id} AND v % 3 = 0"),
            4 => "UPDATE /*+ COMMIT_ON_SUCCESS ROLLBACK_ON_FAIL TARGET_AFFECT_ROW(1) */ r.hot \
                  SET c = c + 1 WHERE id = 1"
                .to_string(),
            _ => format!("REPLACE INTO r.t VALUES ({id}, {}, 'r{node}')", i * 2),
        };
        match c.query_drop(&stmt) {
            Ok(()) => {
                done.fetch_add(1, Ordering::SeqCst);
            }
            Err(mysql::Error::MySqlError(_)) => {}
            Err(_) => conn = None,
        }
    }
}

fn replica_error(port: u16) -> Option<String> {
    let status = surgedb::local::slave_status(port).ok()?;
    let errs: Vec<String> = status
        .iter()
        .filter(|(k, v)| (k == "Last_IO_Error" || k == "Last_SQL_Error") && !v.is_empty())
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    (!errs.is_empty()).then(|| errs.join("; "))
}

fn point_replica_at(port: u16, addr: &str) {
    let mut c = surgedb::local::connect_replica(port, Duration::from_secs(10)).unwrap();
    let (host, p) = addr.rsplit_once(':').unwrap();
    c.query_drop("STOP SLAVE").unwrap();
    c.query_drop(format!(
        "CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={p}, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1"
    ))
    .unwrap();
    c.query_drop("START SLAVE").unwrap();
}

#[test]
fn replica_follows_the_cluster_through_kills() {
    if !mysql_available() {
        return;
    }
    // SURGE_KEEP_TEST_DIR keeps the cluster's directory (data, logs, stream copies and the
    // replica's relay logs) for a post-mortem.
    let tmp = common::kept_tempdir();
    let dir = tmp.path().join("cluster");
    let (manifest, _) = surgedb::local::start(&dir, 3, &opts()).unwrap();
    let _stop = scopeguard(&dir);
    let replica = surgedb::local::start_replica(&dir, &manifest).unwrap();

    let mut c1 = conn_to(&mysql_addr(&dir, 1)).unwrap();
    c1.query_drop(
        "CREATE DATABASE r; \
         CREATE TABLE r.t (id INT PRIMARY KEY, v INT, note VARCHAR(20), KEY v_idx (v)); \
         CREATE TABLE r.hot (id INT PRIMARY KEY, c INT); \
         CREATE TABLE r.big (id INT PRIMARY KEY, pad VARCHAR(600)); \
         INSERT INTO r.hot VALUES (1, 0)",
    )
    .unwrap();
    drop(c1);

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (1..=3u64)
        .map(|n| {
            let (dir, stop, done) = (dir.clone(), stop.clone(), done.clone());
            std::thread::spawn(move || worker(&dir, n, &stop, &done))
        })
        .collect();

    // A big transaction (more than the large-group threshold of binlog bytes) from node 3.
    let mut c3 = conn_to(&mysql_addr(&dir, 3)).unwrap();
    c3.query_drop("BEGIN").unwrap();
    for chunk in 0..30 {
        let values: Vec<String> = (0..100)
            .map(|j| format!("({}, '{}')", chunk * 100 + j, "x".repeat(500)))
            .collect();
        c3.query_drop(format!("INSERT INTO r.big VALUES {}", values.join(",")))
            .unwrap();
    }
    c3.query_drop("COMMIT").unwrap();
    drop(c3);

    std::thread::sleep(Duration::from_secs(2));
    // A node that does not serve the replica.
    kill9(&dir, 2);
    std::thread::sleep(Duration::from_secs(2));
    surgedb::local::restart_node(&dir, 2, &opts()).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // The node serving the replica: the replica moves to node 3 and resumes from its
    // GTID position.
    kill9(&dir, 1);
    point_replica_at(replica.port, &mysql_addr(&dir, 3));
    std::thread::sleep(Duration::from_secs(3));
    surgedb::local::restart_node(&dir, 1, &opts()).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    let n = done.load(Ordering::SeqCst);
    assert!(n > 50, "only {n} statements succeeded");

    // The store's tables, read through node 2, against the replica's.
    let mut store = conn_to(&mysql_addr(&dir, 2)).unwrap();
    let mut rep = surgedb::local::connect_replica(replica.port, Duration::from_secs(10)).unwrap();
    let tables = ["r.t", "r.hot", "r.big"];
    let want: Vec<Vec<String>> = tables.iter().map(|t| rows(&mut store, t)).collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(e) = replica_error(replica.port) {
            panic!("replica error: {e}\n{}", first_difference(&dir));
        }
        let got: Vec<Vec<String>> = tables.iter().map(|t| rows(&mut rep, t)).collect();
        if got == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not catch up in 120 s: {:?} rows vs the store's {:?}",
            got.iter().map(Vec::len).collect::<Vec<_>>(),
            want.iter().map(Vec::len).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(want[2].len(), 3000);
    assert_eq!(replica_error(replica.port), None);
    eprintln!(
        "replica equal to the store after {n} statements: {} rows in r.t, hot c = {:?}",
        want[0].len(),
        want[1]
    );

    // Every node's copy of the stream is the same bytes.
    let copies: Vec<Vec<(String, Vec<u8>)>> = (1..=3)
        .map(|node| stream_file_bytes(&dir.join(format!("node-{node}")).join("stream")))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut copies = copies;
    while copies.windows(2).any(|w| w[0] != w[1]) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        copies = (1..=3)
            .map(|node| stream_file_bytes(&dir.join(format!("node-{node}")).join("stream")))
            .collect();
    }
    for (i, c) in copies.iter().enumerate().skip(1) {
        assert_eq!(
            c.iter().map(|(n, b)| (n, b.len())).collect::<Vec<_>>(),
            copies[0]
                .iter()
                .map(|(n, b)| (n, b.len()))
                .collect::<Vec<_>>(),
            "node {} against node 1",
            i + 1
        );
        assert!(
            c == &copies[0],
            "node {} has other bytes than node 1",
            i + 1
        );
    }
    // The big transaction is the only group of its file (its size passes the threshold).
    let big_alone = copies[0].iter().any(|(_, bytes)| {
        bytes.len() > 1 << 20 && count(bytes, b"surge-stream-bin") >= 2 && gtids(bytes) == 1
    });
    assert!(
        big_alone,
        "expected the big transaction in a file of its own"
    );
}

/// Where node 2's and node 3's copies of the stream first differ from node 1's: the first
/// file (by name) whose bytes differ, and at which byte, or a file one copy lacks (a
/// replica moved between nodes whose copies differ gets other transactions under the same
/// GTIDs).
fn first_difference(dir: &Path) -> String {
    let dirs: Vec<_> = (1..=3)
        .map(|node| dir.join(format!("node-{node}")).join("stream"))
        .collect();
    if let Some(missing) = dirs.iter().find(|d| !d.is_dir()) {
        return format!("no stream directory {}", missing.display());
    }
    let copies: Vec<std::collections::BTreeMap<String, Vec<u8>>> = dirs
        .iter()
        .map(|d| stream_file_bytes(d).into_iter().collect())
        .collect();
    let mut out = Vec::new();
    for (i, copy) in copies.iter().enumerate().skip(1) {
        let names: std::collections::BTreeSet<&String> =
            copy.keys().chain(copies[0].keys()).collect();
        let diff = names
            .into_iter()
            .find_map(|name| match (copies[0].get(name), copy.get(name)) {
                (Some(a), Some(b)) if a == b => None,
                (Some(a), Some(b)) => {
                    let at = a.iter().zip(b).position(|(x, y)| x != y);
                    Some(match at {
                        Some(at) => format!("{name} differs at byte {at}"),
                        None => format!("{name}: {} bytes against {}", b.len(), a.len()),
                    })
                }
                (None, _) => Some(format!("{name} is not in node 1's copy")),
                (_, None) => Some(format!("{name} is missing")),
            });
        out.push(format!(
            "node {} against node 1: {}",
            i + 1,
            diff.unwrap_or_else(|| "the same".into())
        ));
    }
    out.join("; ")
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// GTID events of a stream file.
fn gtids(bytes: &[u8]) -> usize {
    let mut n = 0;
    let mut at = 4;
    while at + 19 <= bytes.len() {
        let size = u32::from_le_bytes(bytes[at + 9..at + 13].try_into().unwrap()) as usize;
        if bytes[at + 4] == 162 {
            n += 1;
        }
        if size == 0 {
            break;
        }
        at += size;
    }
    n
}

/// Stops the cluster and its replica when the test ends, passed or not.
fn scopeguard(dir: &Path) -> impl Drop {
    struct Stop(std::path::PathBuf);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = surgedb::local::stop(&self.0, Duration::from_secs(20));
            surgedb::local::stop_replica(&self.0, Duration::from_secs(20));
        }
    }
    Stop(dir.to_path_buf())
}
