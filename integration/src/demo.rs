//! `surgedb demo`: each technique's scenario on its own crate, printed section by section.

use std::io::Write;
use std::time::Duration;

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
        &"SurgeDB demo: each technique runs on its own crate, with real threads, real files and \
          real fdatasync (about 10 s).\n\
          The transactional store that assembles these crates (surge-txn) is being built; this \
          demo does not go through it.\n",
    )?;
    say(&"== 1. In-memory pessimistic locks (TiKV 6.0), on the lock table (surge-lock-table) ==")?;
    say(&scenarios::run_locks()?)?;
    say(
        &"\n== 2. The same locks on a three-node Raft group (surge-raft-lite + surge-lock-table) ==",
    )?;
    say(&scenarios::run_cluster(dir.path())?)?;
    say(&format!(
        "\n== 3. A {BIG_TXN_MIB} MiB transaction commits to the binlog by copy, then by rename \
         (AliSQL / MariaDB 11.7) (surge-binlog) =="
    ))?;
    say(&scenarios::run_big_txn(dir.path(), BIG_TXN_MIB)?)?;
    say(
        &"\n== 4. Hot-row group commit (AliSQL), one counter row, every update fdatasynced \
          (surge-hotspot) ==",
    )?;
    say(&scenarios::run_hot_row(
        dir.path(),
        &HOT_ROW_CLIENTS,
        HOT_ROW_TIME,
    )?)?;
    Ok(())
}
