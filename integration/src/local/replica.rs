//! A private MariaDB replica of a local cluster: what `surgedb cluster start --replica`
//! starts. Its files live in `DIR/replica/` (data directory, error log, `replica.json`);
//! `surgedb cluster stop` stops it with the nodes.
//!
//! The replica follows the cluster's replica stream (one GTID domain in commit_ts order,
//! served on every node's MySQL port) with `CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos`
//! (<https://mariadb.com/kb/en/change-master-to/>). The SQL schema reaches it through the
//! stream (DDL is logged as Query events); only the `surgedb`.`kv` table, which the
//! key-value API's rows go to and which no DDL creates, is created here.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use super::manifest::ClusterManifest;
use super::process::{is_alive, signal};

/// The replica's `server_id` (it must differ from the stream's, 1000, and the nodes').
pub const REPLICA_SERVER_ID: u32 = 99;
/// The file recording the running replica, in `DIR/replica/`.
pub const REPLICA_FILE: &str = "replica.json";
/// The `surgedb`.`kv` table as the binlog's row events describe it.
pub const KV_TABLE_DDL: &str = "CREATE TABLE IF NOT EXISTS surgedb.kv \
     (k VARBINARY(3072) NOT NULL PRIMARY KEY, v LONGBLOB) ENGINE=InnoDB";

/// A running replica, as recorded in `DIR/replica/replica.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaInfo {
    /// `mariadbd`'s pid.
    pub pid: u32,
    /// Its loopback port.
    pub port: u16,
    /// The node MySQL address it was pointed at.
    pub master: String,
    /// Its directory.
    pub dir: PathBuf,
}

/// An error starting, querying or stopping the replica.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaError {
    /// A program could not be run (MariaDB not installed?).
    #[error("replica: cannot run {program}: {detail} (install mariadb-server)")]
    Spawn {
        /// The program.
        program: String,
        /// The error.
        detail: String,
    },
    /// A step failed.
    #[error("replica: {what}: {detail}")]
    Failed {
        /// The step.
        what: String,
        /// What went wrong (the end of a log, a server error).
        detail: String,
    },
}

fn failed(what: impl Into<String>, detail: impl ToString) -> ReplicaError {
    ReplicaError::Failed {
        what: what.into(),
        detail: detail.to_string(),
    }
}

/// The replica directory of the cluster in `dir`.
pub fn replica_dir(dir: &Path) -> PathBuf {
    dir.join("replica")
}

/// The running replica of the cluster in `dir`, if any.
pub fn running_replica(dir: &Path) -> Option<ReplicaInfo> {
    let text = std::fs::read(replica_dir(dir).join(REPLICA_FILE)).ok()?;
    let info: ReplicaInfo = serde_json::from_slice(&text).ok()?;
    is_alive(info.pid).then_some(info)
}

/// Starts (or finds running) the replica of the cluster in `dir` and points it at the
/// first node's MySQL port: installs a data directory the first time, starts `mariadbd`
/// (server id [`REPLICA_SERVER_ID`], its own process group, so that it outlives this
/// command), creates `surgedb`.`kv`, and runs `CHANGE MASTER TO ...
/// MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1; START SLAVE` when it is not
/// replicating yet.
///
/// # Errors
/// [`ReplicaError`] naming the step that failed.
pub fn start_replica(dir: &Path, manifest: &ClusterManifest) -> Result<ReplicaInfo, ReplicaError> {
    let master = manifest
        .nodes
        .iter()
        .find_map(|n| n.mysql_addr.clone())
        .ok_or_else(|| failed("start", "no node has a MySQL port"))?;
    let info = match running_replica(dir) {
        Some(i) => i,
        None => spawn(dir, &master)?,
    };
    let mut conn = connect(info.port, Duration::from_secs(60))?;
    conn.query_drop("CREATE DATABASE IF NOT EXISTS surgedb")
        .and_then(|()| conn.query_drop(KV_TABLE_DDL))
        .map_err(|e| failed("create surgedb.kv", e))?;
    let running: Option<(String,)> = conn
        .query_first("SELECT Variable_value FROM information_schema.global_status WHERE Variable_name = 'Slave_running'")
        .map_err(|e| failed("read Slave_running", e))?;
    if running.is_none_or(|(v,)| v != "ON") {
        let (host, port) = master
            .rsplit_once(':')
            .ok_or_else(|| failed("start", format!("bad node MySQL address {master}")))?;
        conn.query_drop("STOP SLAVE")
            .and_then(|()| {
                conn.query_drop(format!(
                    "CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, MASTER_USER='root', \
                     MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1"
                ))
            })
            .and_then(|()| conn.query_drop("START SLAVE"))
            .map_err(|e| failed("CHANGE MASTER / START SLAVE", e))?;
    }
    Ok(info)
}

fn spawn(dir: &Path, master: &str) -> Result<ReplicaInfo, ReplicaError> {
    let rdir = replica_dir(dir);
    let data = rdir.join("data");
    let io = |what: &str, e: std::io::Error| failed(format!("{what} in {}", rdir.display()), e);
    std::fs::create_dir_all(&rdir).map_err(|e| io("create", e))?;
    if !data.join("mysql").exists() {
        std::fs::create_dir_all(&data).map_err(|e| io("create", e))?;
        let out = Command::new("mariadb-install-db")
            .args([
                "--no-defaults",
                "--user=root",
                "--auth-root-authentication-method=normal",
            ])
            .arg("--skip-test-db")
            .arg(format!("--datadir={}", data.display()))
            .output()
            .map_err(|e| ReplicaError::Spawn {
                program: "mariadb-install-db".into(),
                detail: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(failed(
                "mariadb-install-db",
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| io("pick a port", e))?
        .port();
    let log = rdir.join("mariadbd.err");
    let err = std::fs::File::create(&log).map_err(|e| io("create the log", e))?;
    let mut cmd = Command::new("mariadbd");
    cmd.args([
        "--no-defaults",
        "--user=root",
        "--bind-address=127.0.0.1",
        "--skip-name-resolve",
    ])
    .arg(format!("--datadir={}", data.display()))
    .arg(format!("--port={port}"))
    .arg(format!("--socket={}", rdir.join("mariadbd.sock").display()))
    .arg(format!(
        "--pid-file={}",
        rdir.join("mariadbd.pid").display()
    ))
    .arg(format!("--server-id={REPLICA_SERVER_ID}"))
    .arg("--sql-mode=STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION")
    .arg("--innodb-buffer-pool-size=256M")
    .arg("--max-allowed-packet=1G")
    .arg("--slave-max-allowed-packet=1G")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(err);
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a terminal's ^C to `surgedb cluster start` or a test
        // harness's group kill does not take the replica down with it.
        cmd.process_group(0);
    }
    let child = cmd.spawn().map_err(|e| ReplicaError::Spawn {
        program: "mariadbd".into(),
        detail: e.to_string(),
    })?;
    let info = ReplicaInfo {
        pid: child.id(),
        port,
        master: master.to_string(),
        dir: rdir.clone(),
    };
    let json = serde_json::to_vec_pretty(&info).map_err(|e| failed("record", e))?;
    std::fs::write(rdir.join(REPLICA_FILE), json).map_err(|e| io("record", e))?;
    if connect(port, Duration::from_secs(60)).is_err() {
        let tail = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: String = tail.lines().rev().take(8).collect::<Vec<_>>().join("\n");
        return Err(failed("mariadbd did not answer within 60 s", tail));
    }
    Ok(info)
}

/// A connection to the replica on `port`, retried for up to `wait`.
///
/// # Errors
/// [`ReplicaError::Failed`] with the last connection error.
pub fn connect(port: u16, wait: Duration) -> Result<mysql::Conn, ReplicaError> {
    let opts = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(port)
        .user(Some("root"))
        .prefer_socket(false);
    let deadline = Instant::now() + wait;
    loop {
        match mysql::Conn::new(opts.clone()) {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() > deadline => {
                return Err(failed(format!("connect to 127.0.0.1:{port}"), e));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// `SHOW SLAVE STATUS` of the replica on `port`, as (column, value) pairs; empty when it
/// is not a replica.
///
/// # Errors
/// [`ReplicaError::Failed`].
pub fn slave_status(port: u16) -> Result<Vec<(String, String)>, ReplicaError> {
    let mut conn = connect(port, Duration::from_secs(5))?;
    let row: Option<mysql::Row> = conn
        .query_first("SHOW SLAVE STATUS")
        .map_err(|e| failed("SHOW SLAVE STATUS", e))?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let cols: Vec<String> = row
        .columns_ref()
        .iter()
        .map(|c| c.name_str().into_owned())
        .collect();
    Ok(cols
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let v = match row.as_ref(i) {
                Some(mysql::Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(mysql::Value::NULL) | None => "NULL".into(),
                Some(v) => v.as_sql(true),
            };
            (c, v)
        })
        .collect())
}

/// Stops the replica of the cluster in `dir` (SIGTERM, then SIGKILL after `timeout`).
/// Returns whether one was running.
pub fn stop_replica(dir: &Path, timeout: Duration) -> bool {
    let Some(info) = running_replica(dir) else {
        return false;
    };
    let _ = signal(info.pid, "TERM");
    let deadline = Instant::now() + timeout;
    while is_alive(info.pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if is_alive(info.pid) {
        let _ = signal(info.pid, "KILL");
    }
    true
}
