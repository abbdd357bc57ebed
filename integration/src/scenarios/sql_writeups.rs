//! The write-ups' own SQL transcripts against an embedded [`SqlCluster`], over the MySQL
//! protocol: AliSQL's hot-row transcript and TiKV 6.0's lock-loss transcript.

use std::path::Path;
use std::time::{Duration, Instant};

use surge_txn::LockMode;

use super::error::ScenarioError;
use super::sql_cluster::SqlCluster;
use super::sql_transcript::{Mysql, SqlAnswer, render};

/// Runs AliSQL's hot-row transcript (its statements as the write-up types them) and
/// returns the transcript.
///
/// # Errors
/// [`ScenarioError`] when the cluster cannot start or a statement the transcript needs
/// fails.
pub fn run_sql_hot_row(dir: &Path) -> Result<String, ScenarioError> {
    let c = SqlCluster::start(dir, LockMode::InMemory)?;
    let mut s = Mysql::connect(&c.url(), "")?;
    let mut out = String::new();
    for sql in [
        "create database s004",
        "use s004",
        "set global hotspot=ON",
        "set global hotspot_lock_type=ON",
        "create table test (id int primary key, data int)",
        "insert into test values (1, 1)",
        "update /*+ commit_on_success */ test set data = data + 1 where id = 1",
        "select * from test",
        "update /*+ commit_on_success rollback_on_fail target_affect_row(1) */ test set data = data + 1 where id = 1",
        "select * from test",
        "select id, data from update /*+ commit_on_success */ test set data = data + 1 where id = 1",
        "show global status like '%Group_update%'",
    ] {
        if let SqlAnswer::Error { code, message } = s.run(sql, &mut out)? {
            return Err(ScenarioError::Sql {
                statement: sql.to_string(),
                detail: format!("ERROR {code}: {message}"),
            });
        }
    }
    Ok(out)
}

/// What TiKV 6.0's lock-loss transcript showed.
#[derive(Debug, Clone)]
pub struct SqlLockLoss {
    /// The lock mode.
    pub mode: LockMode,
    /// The transcript, both sessions interleaved as they ran.
    pub transcript: String,
    /// T2's `delete from t where id=1`, which waited for T1's lock.
    pub t2_delete: SqlAnswer,
    /// T1's `commit`.
    pub t1_commit: SqlAnswer,
    /// The ids left in `t`.
    pub ids_left: Vec<String>,
    /// The node stopped (the leader of the row's region).
    pub stopped_node: u64,
}

/// Runs TiKV 6.0's transcript: T1 and T2 `begin; delete from t where id=1;`, T2 waits for
/// T1's lock, the row's region leader node stops; then T2 `commit`, T1 `commit`.
///
/// # Errors
/// [`ScenarioError`] when the cluster cannot start or a setup statement fails.
pub fn run_sql_lock_loss(dir: &Path, mode: LockMode) -> Result<SqlLockLoss, ScenarioError> {
    let c = SqlCluster::start(dir, mode)?;
    let mut setup = Mysql::connect(&c.url(), "")?;
    let mut out = String::new();
    let must = |m: &mut Mysql, sql: &str, out: &mut String| -> Result<SqlAnswer, ScenarioError> {
        match m.run(sql, out)? {
            SqlAnswer::Error { code, message } => Err(ScenarioError::Sql {
                statement: sql.to_string(),
                detail: format!("ERROR {code}: {message}"),
            }),
            a => Ok(a),
        }
    };
    for sql in [
        "create database s000",
        "use s000",
        "create table t (id int primary key, v int)",
        "insert into t values (1, 1), (2, 2)",
    ] {
        must(&mut setup, sql, &mut out)?;
    }
    let regions = must(&mut setup, "show table t regions", &mut out)?;
    let leader: u64 = regions
        .first("LEADER_STORE_ID")
        .and_then(|l| l.parse().ok())
        .ok_or(ScenarioError::Unexpected(
            "SHOW TABLE t REGIONS names no leader",
        ))?;
    let mut t1 = Mysql::connect(&format!("{}/s000", c.url()), "T1")?;
    let mut t2 = Mysql::connect(&format!("{}/s000", c.url()), "T2")?;
    must(&mut t1, "begin", &mut out)?;
    must(&mut t2, "begin", &mut out)?;
    must(&mut t1, "delete from t where id=1", &mut out)?;
    out.push_str("T2 mysql> delete from t where id=1\n(waits for T1's lock)\n");
    let waiter = std::thread::spawn(move || {
        let mut quiet = String::new();
        let answer = t2.run("delete from t where id=1", &mut quiet);
        (t2, answer)
    });
    std::thread::sleep(Duration::from_millis(500));
    out.push_str(&format!(
        "-- the row's region leader, node {leader}, stops (its process would be killed)\n"
    ));
    c.cluster().stop_node(leader)?;
    let started = Instant::now();
    let join = |w: std::thread::JoinHandle<(Mysql, Result<SqlAnswer, ScenarioError>)>,
                out: &mut String|
     -> Result<(Mysql, SqlAnswer), ScenarioError> {
        let (t2, answer) = w
            .join()
            .map_err(|_| ScenarioError::Unexpected("T2's thread panicked"))?;
        let answer = answer?;
        out.push_str(&format!(
            "T2: {} ({:.1} s after the stop)\n",
            render(&answer).trim_end(),
            started.elapsed().as_secs_f64()
        ));
        Ok((t2, answer))
    };
    let (t2_delete, t1_commit) = if mode == LockMode::InMemory {
        // T1's lock died with the leader: T2's delete goes through on the new leader.
        let (mut t2, t2_delete) = join(waiter, &mut out)?;
        t2.run("commit", &mut out)?;
        (t2_delete, t1.run("commit", &mut out)?)
    } else {
        // The lock is in the Raft log: the new leader has it and T2 waits on.
        std::thread::sleep(Duration::from_secs(1));
        let t1_commit = t1.run("commit", &mut out)?;
        let (mut t2, t2_delete) = join(waiter, &mut out)?;
        t2.run("commit", &mut out)?;
        (t2_delete, t1_commit)
    };
    let left = setup.run("select id from t order by id", &mut out)?;
    let ids_left = match left {
        SqlAnswer::Rows { rows, .. } => rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect(),
        _ => Vec::new(),
    };
    Ok(SqlLockLoss {
        mode,
        transcript: out,
        t2_delete,
        t1_commit,
        ids_left,
        stopped_node: leader,
    })
}
