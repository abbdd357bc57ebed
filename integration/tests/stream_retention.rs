//! Stream record collection in a cluster of `surgedb node` processes: once every node's
//! copy of the replica stream has a record (and it is older than the retention), the
//! smallest live node deletes it from the store; a node that is down holds the records it
//! needs until it is back; a node whose copy was lost stops its stream with an error that
//! says why rather than write a stream with a hole, and gets it back from another node's
//! copy. `surgedb stream positions` shows the positions. Stream files and a node's own
//! binlog files expire on a timer.

#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use std::time::Duration;

use common::{ProcCluster, poll, stream_file_bytes, surgedb, wait_until};
use surge_txn::StreamPosition;

/// Fast garbage collection, and stream records kept one second once every node has them.
const ARGS: &[&str] = &[
    "--gc-life-time-secs=2",
    "--gc-interval-secs=1",
    "--gc-margin-secs=5",
    "--stream-retention-secs=1",
    "--stream-collect-interval-secs=1",
];

fn conn(c: &ProcCluster, node: u64) -> mysql::Conn {
    let addr = c.manifest.node(node).unwrap().mysql_addr.clone().unwrap();
    let (host, port) = addr.rsplit_once(':').unwrap();
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some(host))
        .tcp_port(port.parse().unwrap())
        .user(Some("root"))
        .read_timeout(Some(Duration::from_secs(30)))
        .prefer_socket(false);
    // A node just restarted may not take connections on its MySQL port yet (a loaded
    // machine once refused the first one).
    poll(Duration::from_secs(30), || {
        mysql::Conn::new(opts.clone()).map_err(|e| format!("node {node}'s MySQL port {addr}: {e}"))
    })
}

/// Inserts rows `from..to` into `r.t`, one transaction each, alternating nodes `via`.
fn insert(c: &ProcCluster, via: &[u64], from: u32, to: u32) {
    use mysql::prelude::Queryable;
    let mut conns: Vec<mysql::Conn> = via.iter().map(|&n| conn(c, n)).collect();
    for i in from..to {
        let k = conns.len();
        conns[i as usize % k]
            .query_drop(format!("INSERT INTO r.t VALUES ({i}, 'row {i}')"))
            .unwrap();
    }
}

fn positions(c: &ProcCluster) -> Vec<StreamPosition> {
    c.client().txn().stream_positions().unwrap()
}

fn position(c: &ProcCluster, owner: u64) -> Option<StreamPosition> {
    positions(c).into_iter().find(|p| p.owner == owner)
}

fn mark(c: &ProcCluster) -> u64 {
    c.client().txn().stream_collected_below().unwrap()
}

fn stream_dir(c: &ProcCluster, node: u64) -> std::path::PathBuf {
    c.manifest.node(node).unwrap().data.join("stream")
}

/// Waits until node 1's stream files hold `gtids` GTIDs and every node's in `nodes` are
/// the same bytes.
fn converged(c: &ProcCluster, nodes: &[u64], want: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let files = stream_file_bytes(&stream_dir(c, 1));
        let same = nodes
            .iter()
            .all(|&n| stream_file_bytes(&stream_dir(c, n)) == files);
        let last = (gtids(&files), same);
        if last == (want, true) {
            return;
        }
        assert!(
            last.0 <= want && std::time::Instant::now() < deadline,
            "node 1 has {} GTIDs (want {want}); nodes {nodes:?} the same bytes: {}",
            last.0,
            last.1
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// GTID events in the files (event type 0xA2 at offset 4 of each event header): counted by
/// walking the events.
fn gtids(files: &[(String, Vec<u8>)]) -> usize {
    let mut n = 0;
    for (_, bytes) in files {
        let mut at = 4; // the magic
        while at + 19 <= bytes.len() {
            if bytes[at + 4] == 0xA2 {
                n += 1;
            }
            let len = u32::from_le_bytes(bytes[at + 9..at + 13].try_into().unwrap()) as usize;
            if len < 19 {
                break;
            }
            at += len;
        }
    }
    n
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn records_every_node_has_are_collected_and_a_down_node_holds_what_it_needs() {
    use mysql::prelude::Queryable;
    let c = ProcCluster::start_with_args(3, "in-memory", ARGS);
    let mut sql = conn(&c, 1);
    sql.query_drop("CREATE DATABASE r").unwrap();
    sql.query_drop("CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(32))")
        .unwrap();
    insert(&c, &[1, 2], 0, 40);
    let written = c.client().txn().current_ts().unwrap();

    // Every node publishes its position; once all three are past the writes (a copy
    // needs records from about the skew bound, 5 s, before its watermark), the records
    // below go.
    wait_until(Duration::from_secs(60), || {
        let p = positions(&c);
        p.len() == 3 && mark(&c) > written
    });
    // The 2 DDL statements and 40 inserts, each once, in every copy.
    converged(&c, &[2, 3], 42);
    let (ok, out, err) = surgedb(&["stream", "positions", "--cluster-dir", c.dir_str()]);
    assert!(ok, "{out}{err}");
    assert!(out.starts_with("collected_below\t"), "{out}");
    let owners: Vec<&str> = out
        .lines()
        .skip(2)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(owners, ["1", "2", "3"], "{out}");

    // Node 3 down: it is still counted, so nothing it needs goes while it is away.
    c.kill9(3);
    let needs = position(&c, 3).unwrap().lower_record_ts;
    insert(&c, &[1, 2], 40, 80);
    std::thread::sleep(Duration::from_secs(8));
    assert!(
        mark(&c) <= needs,
        "collected to {} past node 3's position {needs}",
        mark(&c)
    );
    c.restart(3);
    converged(&c, &[2, 3], 82);
    let log3 = c.log(3);
    assert!(!log3.contains("were collected"), "{log3}");
    // Back and counted again, it lets the collection pass the second batch.
    let written = c.client().txn().current_ts().unwrap();
    wait_until(Duration::from_secs(60), || mark(&c) > written);

    // A node whose copy was lost (its stream directory removed) cannot rebuild it from the
    // cluster any more: its stream stops with an error naming why, and the other nodes go
    // on.
    c.stop_node(3);
    std::fs::remove_dir_all(stream_dir(&c, 3)).unwrap();
    c.restart(3);
    wait_until(Duration::from_secs(60), || {
        c.log(3)
            .contains("were collected while this node was not counted")
    });
    // Its position is gone with it, so the collection goes on without it.
    assert!(position(&c, 3).is_none(), "{:?}", positions(&c));
    insert(&c, &[1, 2, 3], 80, 90);
    converged(&c, &[2], 92);
    let written = c.client().txn().current_ts().unwrap();
    wait_until(Duration::from_secs(60), || mark(&c) > written);

    // Its copy comes back from a stopped node's (files and cursor together: the copies
    // are the same bytes, so the cursor holds there too).
    let errors_before = c.log(3).matches("were collected").count();
    c.stop_node(3);
    c.stop_node(2);
    std::fs::remove_dir_all(stream_dir(&c, 3)).unwrap();
    copy_dir(&stream_dir(&c, 2), &stream_dir(&c, 3));
    c.restart(2);
    c.restart(3);
    insert(&c, &[1, 3], 90, 95);
    converged(&c, &[2, 3], 97);
    assert_eq!(c.log(3).matches("were collected").count(), errors_before);

    // `surgedb stream remove-position` lets the collection pass a node gone for good.
    c.stop_node(3);
    let (ok, out, err) = surgedb(&[
        "stream",
        "remove-position",
        "--cluster-dir",
        c.dir_str(),
        "--owner",
        "3",
    ]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "removed the stream position of owner 3");
    assert!(position(&c, 3).is_none());
}

/// The files of rows `SHOW BINARY LOGS` lists on node `n`.
fn binary_logs(c: &ProcCluster, n: u64) -> Vec<String> {
    use mysql::prelude::Queryable;
    conn(c, n)
        .query_map("SHOW BINARY LOGS", |(name, _size): (String, u64)| name)
        .unwrap()
}

/// `PURGE BINARY LOGS TO` / `BEFORE` on a node's MySQL port removes its old stream files
/// (never the last one); a replica asking for a removed file gets MariaDB's error, and
/// the node goes on streaming. `--stream-expire-logs-secs` does the same on a timer.
#[test]
fn purge_binary_logs_removes_a_nodes_old_stream_files() {
    use mysql::prelude::Queryable;
    let c = ProcCluster::start_with_args(
        3,
        "in-memory",
        &["--stream-file-size=65536", "--stream-expire-logs-secs=0"],
    );
    let mut sql = conn(&c, 1);
    sql.query_drop("CREATE DATABASE p").unwrap();
    sql.query_drop("CREATE TABLE p.t (id INT PRIMARY KEY, v TEXT)")
        .unwrap();
    let pad = "x".repeat(2000);
    for i in 0..200 {
        sql.query_drop(format!("INSERT INTO p.t VALUES ({i}, '{pad}')"))
            .unwrap();
    }
    let mut logs = Vec::new();
    wait_until(Duration::from_secs(60), || {
        logs = binary_logs(&c, 1);
        logs.len() >= 5
    });
    let err = sql
        .query_drop("PURGE BINARY LOGS BEFORE 'not a date'")
        .unwrap_err()
        .to_string();
    assert!(err.contains("1064"), "{err}");
    // A file the stream does not list: MariaDB's 1373, nothing removed.
    let err = sql
        .query_drop("PURGE BINARY LOGS TO 'surge-stream-bin.999999'")
        .unwrap_err()
        .to_string();
    assert!(err.contains("1373"), "{err}");
    // Nothing was modified before 2000.
    sql.query_drop("PURGE BINARY LOGS BEFORE '2000-01-01 00:00:00'")
        .unwrap();
    assert_eq!(binary_logs(&c, 1)[0], logs[0]);
    sql.query_drop(format!("PURGE BINARY LOGS TO '{}'", logs[2]))
        .unwrap();
    let now = binary_logs(&c, 1);
    assert_eq!(now[0], logs[2], "{now:?}");
    let dir = stream_dir(&c, 1);
    assert!(!dir.join(&logs[0]).exists() && !dir.join(&logs[1]).exists());
    // The other nodes keep their own copies.
    assert_eq!(binary_logs(&c, 2)[0], logs[0]);

    // A replica asking node 1 for a removed file is told so.
    let addr = c.manifest.node(1).unwrap().mysql_addr.clone().unwrap();
    let (host, port) = addr.rsplit_once(':').unwrap();
    match std::process::Command::new("mariadb-binlog")
        .args([
            "--read-from-remote-server",
            &format!("--host={host}"),
            &format!("--port={port}"),
            "--user=root",
            &logs[0],
        ])
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{text}");
            assert!(
                text.contains("Could not find first log file name"),
                "{text}"
            );
        }
        Err(e) => {
            assert!(
                std::env::var_os("SURGE_REQUIRE_MARIADB_BINLOG").is_none(),
                "mariadb-binlog is required (SURGE_REQUIRE_MARIADB_BINLOG): {e}"
            );
            eprintln!("SKIPPED: the mariadb-binlog part (apt-get install mariadb-client)");
        }
    }

    // Before a time to come: all but the last file; the node goes on streaming.
    sql.query_drop("PURGE MASTER LOGS BEFORE '2999-01-01 00:00:00'")
        .unwrap();
    assert_eq!(binary_logs(&c, 1).len(), 1);
    for i in 200..260 {
        sql.query_drop(format!("INSERT INTO p.t VALUES ({i}, '{pad}')"))
            .unwrap();
    }
    wait_until(Duration::from_secs(60), || binary_logs(&c, 1).len() >= 2);
}

/// `--stream-expire-logs-secs`: files last modified longer ago than that go on their own,
/// all but the last.
#[test]
fn expired_stream_files_are_removed_on_their_own() {
    use mysql::prelude::Queryable;
    let c = ProcCluster::start_with_args(
        3,
        "in-memory",
        &["--stream-file-size=65536", "--stream-expire-logs-secs=2"],
    );
    let mut sql = conn(&c, 1);
    sql.query_drop("CREATE DATABASE e").unwrap();
    sql.query_drop("CREATE TABLE e.t (id INT PRIMARY KEY, v TEXT)")
        .unwrap();
    let pad = "x".repeat(2000);
    for i in 0..120 {
        sql.query_drop(format!("INSERT INTO e.t VALUES ({i}, '{pad}')"))
            .unwrap();
    }
    // Written within a second or two: several files at some moment, one in the end.
    let mut most = 0;
    wait_until(Duration::from_secs(60), || {
        let n = binary_logs(&c, 2).len();
        most = most.max(n);
        most >= 2 && n == 1
    });
    assert!(c.log(2).contains("expired"), "{}", c.log(2));
}

/// The numbered files of node `n`'s own binlog (`DATA/binlog`).
fn node_binlog_files(c: &ProcCluster, n: u64) -> Vec<String> {
    let dir = std::path::Path::new(c.dir_str()).join(format!("node-{n}/binlog"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.rsplit_once('.')
                .is_some_and(|(_, ext)| !ext.is_empty() && ext.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    names.sort();
    names
}

/// `--binlog-expire-logs-secs`: a node's own binlog files last written longer ago than
/// that go on their own, all but the current one; what stays still reads back.
#[test]
fn expired_node_binlog_files_are_removed_on_their_own() {
    use mysql::prelude::Queryable;
    let c = ProcCluster::start_with_args(
        3,
        "in-memory",
        &[
            "--binlog-expire-logs-secs=5",
            "--binlog-large-commit-threshold=1048576",
        ],
    );
    let mut sql = conn(&c, 1);
    sql.query_drop("CREATE DATABASE b").unwrap();
    sql.query_drop("CREATE TABLE b.t (id INT PRIMARY KEY, v TEXT)")
        .unwrap();
    // A transaction past the rename threshold: its cache file becomes the next binlog
    // file.
    let pad = "y".repeat(40_000);
    sql.query_drop("BEGIN").unwrap();
    for i in 0..40 {
        sql.query_drop(format!("INSERT INTO b.t VALUES ({i}, '{pad}')"))
            .unwrap();
    }
    sql.query_drop("COMMIT").unwrap();
    let after_big = node_binlog_files(&c, 1);
    assert!(after_big.len() >= 2, "{after_big:?}");
    // The log line comes after the files are gone: wait for both (a loaded CI machine
    // once showed the files gone and the line not yet written).
    poll(Duration::from_secs(30), || {
        let (files, log) = (node_binlog_files(&c, 1), c.log(1));
        if files.len() == 1 && log.contains("binlog files expired") {
            Ok(())
        } else {
            Err(format!(
                "node 1 has the binlog files {files:?}; its log:\n{log}"
            ))
        }
    });
    // The node goes on logging into its current file.
    sql.query_drop("INSERT INTO b.t VALUES (100, 'after')")
        .unwrap();
    let left = node_binlog_files(&c, 1);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0], after_big[after_big.len() - 1]);
    let n: i64 = sql
        .query_first("SELECT COUNT(*) FROM b.t")
        .unwrap()
        .unwrap();
    assert_eq!(n, 41);
}
