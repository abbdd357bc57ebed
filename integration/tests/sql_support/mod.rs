//! What the `sql_*` tests share: an in-process cluster with a SQL engine, and helpers that
//! run statements and show results as text.

#![allow(dead_code)] // each test file uses its own subset
#![allow(clippy::unwrap_used)] // test support: a failed step is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, TxnClient};
use surgedb::sql::{
    ConnectionInfo, LocalClusterAdmin, Output, Session, SqlConfig, SqlEngine, SqlError, SqlSession,
    Value,
};

pub struct Db {
    pub cluster: Arc<LocalCluster>,
    pub engine: SqlEngine,
    next_conn: AtomicU32,
    _dir: tempfile::TempDir,
}

impl Db {
    pub fn start() -> Db {
        Db::start_with(ClientConfig::default())
    }

    pub fn start_with(client: ClientConfig) -> Db {
        let dir = tempfile::tempdir().unwrap();
        let cluster =
            Arc::new(LocalCluster::start(ClusterConfig::new(dir.path()).with_regions(2)).unwrap());
        cluster.wait_for_leaders(Duration::from_secs(20)).unwrap();
        let engine = Db::engine_on(&cluster, client, 1);
        Db {
            cluster,
            engine,
            next_conn: AtomicU32::new(1),
            _dir: dir,
        }
    }

    /// Another node's engine (its own client and caches) on the same cluster.
    pub fn engine_on(cluster: &Arc<LocalCluster>, client: ClientConfig, node: u64) -> SqlEngine {
        let client = TxnClient::new(cluster.router(), client);
        SqlEngine::new(
            client,
            SqlConfig::default()
                .with_node_id(node)
                .with_admin(Arc::new(LocalClusterAdmin::new(cluster.clone()))),
        )
    }

    pub fn session(&self) -> Session {
        self.session_of(&self.engine)
    }

    pub fn session_of(&self, engine: &SqlEngine) -> Session {
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        engine
            .session(&ConnectionInfo {
                id,
                user: "root".into(),
                peer: "127.0.0.1:5000".into(),
                database: None,
                interactive: false,
            })
            .unwrap()
    }
}

/// Runs `sql` (one or more statements); panics with the error otherwise. Returns the last
/// statement's output.
pub fn ok(s: &mut Session, sql: &str) -> Output {
    let mut outs = s.query(sql);
    let last = outs.pop().unwrap();
    let short: String = sql.chars().take(200).collect();
    for o in &outs {
        if let Err(e) = o {
            panic!("{short}: {e}");
        }
    }
    last.unwrap_or_else(|e| panic!("{short}: {e}"))
}

/// The error of `sql`'s last statement.
pub fn err(s: &mut Session, sql: &str) -> SqlError {
    match s.query(sql).pop().unwrap() {
        Ok(o) => panic!("{sql}: expected an error, got {o:?}"),
        Err(e) => e,
    }
}

pub fn text(v: &Value) -> String {
    v.to_text().map_or_else(
        || "NULL".to_owned(),
        |t| String::from_utf8_lossy(&t).into_owned(),
    )
}

/// The rows of a result as text.
pub fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match ok(s, sql) {
        Output::Rows { rows, .. } => rows.iter().map(|r| r.iter().map(text).collect()).collect(),
        other => panic!("{sql}: expected rows, got {other:?}"),
    }
}

/// Rows as one string per row, columns joined by `|`.
pub fn lines(s: &mut Session, sql: &str) -> Vec<String> {
    rows(s, sql).into_iter().map(|r| r.join("|")).collect()
}

pub fn affected(s: &mut Session, sql: &str) -> u64 {
    match ok(s, sql) {
        Output::Done { affected_rows, .. } => affected_rows,
        other => panic!("{sql}: expected OK, got {other:?}"),
    }
}
