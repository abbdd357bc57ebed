//! 000, in-memory pessimistic locks: sysbench `oltp_write_only` at 1..64 threads, SurgeDB
//! in each transaction mode (switched between slices with the write-up's statements) and
//! MariaDB in the same rotation; for SurgeDB also the Raft bytes per transaction, for locks
//! and in all (its cluster counters before and after each slice).

use super::endpoint::Endpoint;
use super::error::SysbenchError;
use super::tally::{RaftBytes, SysbenchPoint, Tally};
use crate::bench::Progress;

/// SurgeDB's modes in rotation order, each with the statements that switch to it (TiDB's
/// `set config tikv pessimistic-txn.*`, <https://docs.pingcap.com/tidb/stable/pessimistic-transaction>,
/// and `tidb_txn_mode` for the sessions sysbench opens next).
pub const LOCK_MODES: [(&str, &str); 4] = [
    (
        "optimistic",
        "set config tikv pessimistic-txn.in-memory='false'; \
         set config tikv pessimistic-txn.pipelined='false'; set global tidb_txn_mode='optimistic'",
    ),
    (
        "pessimistic",
        "set config tikv pessimistic-txn.in-memory='false'; \
         set config tikv pessimistic-txn.pipelined='false'; set global tidb_txn_mode='pessimistic'",
    ),
    (
        "pipelined",
        "set config tikv pessimistic-txn.pipelined='true'; \
         set config tikv pessimistic-txn.in-memory='false'; set global tidb_txn_mode='pessimistic'",
    ),
    (
        "in-memory",
        "set config tikv pessimistic-txn.pipelined='true'; \
         set config tikv pessimistic-txn.in-memory='true'; set global tidb_txn_mode='pessimistic'",
    ),
];

/// The `sbtest` tables' shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tables {
    pub(crate) tables: usize,
    pub(crate) size: usize,
}

impl Tables {
    fn args(&self) -> [String; 2] {
        [
            format!("--tables={}", self.tables),
            format!("--table-size={}", self.size),
        ]
    }

    /// Creates database `sbtest` afresh on `ep` and loads the tables.
    pub(crate) fn prepare(&self, ep: &Endpoint) -> Result<(), SysbenchError> {
        ep.sql("DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest")?;
        let mut args = self.args().to_vec();
        args.extend(["oltp_write_only".into(), "prepare".into()]);
        ep.sysbench_quiet("sbtest", &args)
    }

    /// `oltp_write_only` deletes and re-inserts the same id, so each table keeps exactly
    /// its prepared rows whatever sysbench acknowledged or retried.
    pub(crate) fn check(&self, ep: &Endpoint) -> Result<(), SysbenchError> {
        for i in 1..=self.tables {
            let n = ep.query_u64(&format!("SELECT COUNT(*) FROM sbtest.sbtest{i}"))?;
            if n != self.size as u64 {
                return Err(SysbenchError::Inconsistent {
                    endpoint: ep.name.clone(),
                    what: format!("rows of sbtest.sbtest{i} after oltp_write_only"),
                    expected: self.size.to_string(),
                    found: n.to_string(),
                });
            }
        }
        Ok(())
    }

    /// One `oltp_write_only` run; `extra` adds options (`--report-interval=1`, ...).
    pub(crate) fn run(
        &self,
        ep: &Endpoint,
        threads: usize,
        seconds: u64,
        extra: &[&str],
    ) -> Result<super::output::SysbenchResult, SysbenchError> {
        self.run_workload(ep, "oltp_write_only", threads, seconds, extra)
    }

    /// One run of sysbench's built-in `workload` (`oltp_point_select`, ...) on these tables.
    pub(crate) fn run_workload(
        &self,
        ep: &Endpoint,
        workload: &str,
        threads: usize,
        seconds: u64,
        extra: &[&str],
    ) -> Result<super::output::SysbenchResult, SysbenchError> {
        let mut args = self.args().to_vec();
        args.push(format!("--threads={threads}"));
        args.push(format!("--time={seconds}"));
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend([workload.to_string(), "run".into()]);
        ep.sysbench("sbtest", &args)
    }
}

/// SurgeDB's cluster Raft counters now (bytes of the entries proposed by the nodes' region
/// leaders, not bytes sent to followers; every node's summed by the node answering), and
/// how many nodes answered.
fn raft_bytes(surgedb: &Endpoint) -> Result<(RaftBytes, u64), SysbenchError> {
    let v = surgedb.status_values(&[
        "Pessimistic_lock_nodes_answered",
        "Pessimistic_lock_raft_bytes",
        "Raft_bytes",
    ])?;
    let bytes = RaftBytes {
        locks: v[1],
        all: v[2],
    };
    Ok((bytes, v[0]))
}

/// Runs the rotation: per round, per thread count, each mode (and MariaDB) one slice.
///
/// # Errors
/// The first [`SysbenchError`]; [`SysbenchError::Inconsistent`] when a table's row count
/// changed.
pub(crate) fn run_write_only(
    surgedb: &Endpoint,
    mariadb: Option<&Endpoint>,
    tables: Tables,
    threads: &[usize],
    seconds: u64,
    rounds: usize,
    progress: &mut dyn Progress,
) -> Result<Vec<SysbenchPoint>, SysbenchError> {
    progress.message("000 locks: sysbench prepare");
    tables.prepare(surgedb)?;
    if let Some(m) = mariadb {
        tables.prepare(m)?;
    }
    let mut tally = Tally::default();
    for _ in 0..rounds {
        for &t in threads {
            for (mode, switch) in LOCK_MODES {
                progress.message(&format!("000 locks: {mode}, {t} threads"));
                surgedb.sql(switch)?;
                let (before, asked) = raft_bytes(surgedb)?;
                let r = tables.run(surgedb, t, seconds, &[])?;
                let (after, answered) = raft_bytes(surgedb)?;
                // The counters are sums over the nodes that answered: with another set of
                // nodes (one stopped, or restarted with its counters at 0) the difference
                // means nothing, and the slice has no figure.
                let cost = (asked == answered).then(|| RaftBytes {
                    locks: after.locks.saturating_sub(before.locks),
                    all: after.all.saturating_sub(before.all),
                });
                tally.add_with_raft(mode, t, &r, cost);
                progress.step();
            }
            if let Some(m) = mariadb {
                progress.message(&format!("000 locks: MariaDB, {t} threads"));
                tally.add("mariadb", t, &tables.run(m, t, seconds, &[])?);
                progress.step();
            }
        }
    }
    surgedb.sql(LOCK_MODES[3].1)?;
    tables.check(surgedb)?;
    if let Some(m) = mariadb {
        tables.check(m)?;
    }
    Ok(tally.into_points())
}
