//! `surgedb demo`: the three techniques' scenarios, printed section by section, each through
//! `surge-txn` on in-process 3-node clusters: in-memory pessimistic locks, binlog commit by
//! rename, hot-row group commit; then the write-ups' SQL transcripts over the MySQL protocol.

use std::io::Write;
use std::time::Duration;

use surge_txn::LockMode;

use crate::bench::{self, BenchError, BenchTarget, NoProgress};
use crate::scenarios::{self, ScenarioError};

/// Megabytes of the big transaction in the binlog section.
const BIG_TXN_MIB: u64 = 64;
/// Client counts of the hot-row section.
const HOT_ROW_CLIENTS: [usize; 2] = [1, 64];
/// Time per client count and mode of the hot-row section.
const HOT_ROW_TIME: Duration = Duration::from_secs(1);

/// Why the demo stopped.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A scenario could not run to its end.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The scratch directory could not be created.
    #[error("cannot create a scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    /// A benchmark run of the demo failed.
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// Writing the output failed.
    #[error("cannot write the demo's output: {0}")]
    Output(#[source] std::io::Error),
}

impl DemoError {
    /// Whether the error is only that the reader of the output went away
    /// (`surgedb demo | head`), which is no failure of the demo.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, DemoError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Runs every scenario in a scratch directory (deleted at the end) and writes what each shows
/// to `out`, one section per technique.
///
/// # Errors
/// [`DemoError::Scenario`] if a scenario fails, [`DemoError::Scratch`] or
/// [`DemoError::Output`] for the scratch directory and the output.
pub fn run(out: &mut impl Write) -> Result<(), DemoError> {
    let dir = tempfile::tempdir().map_err(DemoError::Scratch)?;
    let mut say = |text: &dyn std::fmt::Display| writeln!(out, "{text}").map_err(DemoError::Output);
    say(
        &"SurgeDB demo: three techniques with real threads, real files and real fdatasync \
          (about 20 s).\n\
          Every section runs through the transactional store (surge-txn: Percolator \
          transactions over 3-replica Raft regions, durable WALs, 3 nodes in one process).\n",
    )?;
    say(
        &"== 1. In-memory pessimistic locks (TiKV 6.0), through surge-txn on a 3-node \
          LocalCluster ==",
    )?;
    let in_memory = scenarios::run_lock_loss(&dir.path().join("in-memory"), LockMode::InMemory)?;
    say(&in_memory)?;
    let sync = scenarios::run_lock_loss(&dir.path().join("sync"), LockMode::Sync)?;
    say(&sync)?;
    let transfer = scenarios::run_lock_transfer(&dir.path().join("transfer"))?;
    say(&transfer)?;
    say(&format!(
        "Shows: an in-memory lock costs no Raft write ({} bytes vs {} for sync) and dies with \
         its leader's node, so T1 aborts with {} instead of a lost update; a sync lock \
         survives and T1 commits first; a voluntary transfer migrates the locks ({} of {} \
         moved, {} lost).",
        in_memory.t1_lock_raft_bytes,
        sync.t1_lock_raft_bytes,
        in_memory.t1.error_name().unwrap_or("no error"),
        transfer.migrated,
        transfer.locks_held,
        transfer.lost
    ))?;
    say(&format!(
        "\n== 2. A {BIG_TXN_MIB} MiB transaction commits beside small ones, with its binlog \
         cache copied into the log, then renamed into the next binlog file (AliSQL / MariaDB \
         11.7), through surge-txn's binlog at commit on a 3-node LocalCluster =="
    ))?;
    say(&scenarios::run_big_txn(dir.path(), BIG_TXN_MIB)?)?;
    say(
        &"\n== 3. Hot-row group commit (AliSQL), one hot row, through surge-txn's hot_update \
          on a 3-node LocalCluster ==",
    )?;
    say(&format!(
        "grouping on = TxnClient::hot_update (a group takes one pessimistic lock and commits \
         in one single-key 1PC); off = each client's own pessimistic transaction; {:.1} s per \
         client count and mode, in slices off, on, on, off",
        HOT_ROW_TIME.as_secs_f64()
    ))?;
    let target = BenchTarget::embedded()?;
    let run = bench::run_hot_txn(
        &target,
        &HOT_ROW_CLIENTS,
        HOT_ROW_TIME.as_secs_f64(),
        &mut NoProgress,
    )?;
    say(&bench::hotspot_table(&run.points).trim_end())?;
    say(&format!("Check: {}.", run.check))?;
    let ratio = |n: usize| {
        run.points
            .iter()
            .find(|p| p.clients == n && p.grouping == "on")
            .and_then(|p| p.on_off.map(|r| (r, p.updates_per_commit)))
    };
    if let (Some((one, _)), Some((many, per_commit))) = (
        ratio(HOT_ROW_CLIENTS[0]),
        ratio(HOT_ROW_CLIENTS[HOT_ROW_CLIENTS.len() - 1]),
    ) {
        say(&format!(
            "Shows: with grouping on, {} clients share each commit ({per_commit:.1} updates per \
             commit), {many:.1}x the updates/s of their own transactions; {} client: {one:.2}x \
             (a lone update is not delayed).",
            HOT_ROW_CLIENTS[HOT_ROW_CLIENTS.len() - 1],
            HOT_ROW_CLIENTS[0]
        ))?;
    }
    say(
        &"\n== 4. The write-ups as their authors typed them: SQL over the MySQL protocol \
          (a MySQL driver on a 3-node LocalCluster's MySQL port) ==",
    )?;
    say(&"-- AliSQL's hot-row transcript (hints through surge-txn's grouped hot update)")?;
    say(&scenarios::run_sql_hot_row(&dir.path().join("sql-hot"))?.trim_end())?;
    for mode in [LockMode::InMemory, LockMode::Sync] {
        let run =
            scenarios::run_sql_lock_loss(&dir.path().join(format!("sql-{}", mode.as_str())), mode)?;
        say(&format!(
            "\n-- TiKV 6.0's lock-loss transcript, {} locks",
            mode.as_str()
        ))?;
        say(&run.transcript.trim_end())?;
    }
    say(
        &"Shows: the same statements as the write-ups, answered as there: the hinted updates \
          and SELECT ... FROM UPDATE give 2, 3, 4; with in-memory locks T2's delete goes \
          through once the leader is gone and T1's commit fails (1213, \
          PessimisticLockNotFound), with sync locks T1 commits and T2 finds no row.",
    )?;
    Ok(())
}
