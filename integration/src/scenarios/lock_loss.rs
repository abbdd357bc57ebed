//! The lock-loss transcript of TiKV 6.0's in-memory pessimistic locks (TiKV RFC 77,
//! "Correctness"), run through `surge-txn` on a three-node [`LocalCluster`]:
//!
//! 1. T1 (pessimistic) locks a row;
//! 2. T2 (pessimistic) asks for the same row and waits on the row's region leader;
//! 3. that leader's node is stopped ([`LocalCluster::stop_node`], a crash: its memory is gone).
//!
//! With in-memory locks T1's lock dies with the node: T2 takes the row on the next leader and
//! commits, and T1's commit fails with `PessimisticLockNotFound` (an abort, never a lost
//! update). With sync locks T1's lock went through Raft, the next leader has it, T2 keeps
//! waiting, and T1 commits first.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use surge_raft_lite::NodeId;
use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, LockMode, TxnClient, TxnError, TxnMode,
};

use super::ScenarioError;
use super::key_text;

/// The row both transactions write.
pub const ROW: &[u8] = b"stock/42";

/// How long a lock request may wait on a node: longer than any step of the transcript, so
/// T2 is still waiting when the leader stops and again on the next leader while T1 holds the
/// row. Short, because stopping a node returns only once the requests it is serving let go
/// of it, and a lock wait holds on until it times out.
const LOCK_WAIT: Duration = Duration::from_secs(3);

/// How long T2 is left waiting before the leader's node is stopped.
const T2_WAIT: Duration = Duration::from_millis(200);

/// How long, after the crash, the sync run checks that T2 is still waiting.
const SYNC_HOLD: Duration = Duration::from_millis(500);

/// How a transaction of the transcript ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOutcome {
    /// Committed at this commit timestamp.
    Committed(u64),
    /// Failed: the error's variant name (`PessimisticLockNotFound`, ...) and its message.
    Failed {
        /// The `TxnError` variant's name.
        name: String,
        /// The error's message.
        message: String,
    },
}

impl TxnOutcome {
    pub(crate) fn of(r: &Result<u64, TxnError>) -> TxnOutcome {
        match r {
            Ok(ts) => TxnOutcome::Committed(*ts),
            Err(e) => TxnOutcome::Failed {
                name: error_name(e),
                message: e.to_string(),
            },
        }
    }

    /// The commit timestamp, if it committed.
    pub fn commit_ts(&self) -> Option<u64> {
        match self {
            TxnOutcome::Committed(ts) => Some(*ts),
            TxnOutcome::Failed { .. } => None,
        }
    }

    /// The error's variant name, if it failed.
    pub fn error_name(&self) -> Option<&str> {
        match self {
            TxnOutcome::Committed(_) => None,
            TxnOutcome::Failed { name, .. } => Some(name),
        }
    }
}

impl fmt::Display for TxnOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnOutcome::Committed(ts) => write!(f, "committed at ts {ts}"),
            TxnOutcome::Failed { name, message } => write!(f, "failed with {name}: {message}"),
        }
    }
}

/// The name of a [`TxnError`] variant, as written in the source (`PessimisticLockNotFound`).
pub(crate) fn error_name(e: &TxnError) -> String {
    let debug = format!("{e:?}");
    debug
        .split([' ', '(', '{'])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// One run of the transcript in one lock mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockLossRun {
    /// The lock mode of every node.
    pub mode: LockMode,
    /// The row's region.
    pub region: u64,
    /// The node that led the row's region and was stopped.
    pub stopped: NodeId,
    /// Bytes of lock records T1's lock wrote to Raft (0 for an in-memory lock).
    pub t1_lock_raft_bytes: u64,
    /// How long T2 had been running (waiting on the leader for T1's lock) when the leader's
    /// node was stopped.
    pub t2_waited_before_stop: Duration,
    /// Whether T2 had finished before T1 tried to commit.
    pub t2_done_before_t1_commit: bool,
    /// T1's commit.
    pub t1: TxnOutcome,
    /// T2's commit.
    pub t2: TxnOutcome,
    /// The row's value read afterwards.
    pub final_value: Option<Vec<u8>>,
    /// Wall time of the whole run, cluster start included.
    pub elapsed: Duration,
}

/// Runs the transcript in `mode` on a fresh three-node cluster under `dir`.
///
/// # Errors
/// [`ScenarioError::Cluster`] if the cluster does not start or the node cannot be stopped,
/// [`ScenarioError::Txn`] if a step that must succeed fails (seeding the row, T1's lock),
/// [`ScenarioError::Unexpected`] if T2 never waits.
pub fn run_lock_loss(dir: &Path, mode: LockMode) -> Result<LockLossRun, ScenarioError> {
    let begun = Instant::now();
    let cluster = LocalCluster::start(ClusterConfig::new(dir).with_lock_mode(mode))?;
    let client = || {
        TxnClient::new(
            cluster.router(),
            ClientConfig::default()
                .with_wait_for_lock_timeout(Some(LOCK_WAIT))
                .with_heartbeat_interval(Duration::from_millis(100)),
        )
    };
    let (c1, c2) = (client(), client());
    let mut t0 = c1.begin(TxnMode::Optimistic)?;
    t0.put(ROW, b"t0")?;
    t0.commit()?;

    let region = cluster
        .region_of(ROW)
        .ok_or(ScenarioError::Unexpected("the row has no region"))?
        .id;
    let stopped = cluster
        .leader_of_group(region)
        .ok_or(ScenarioError::Unexpected("the row's region has no leader"))?;
    let before = cluster.counters();
    let mut t1 = c1.begin(TxnMode::Pessimistic)?;
    t1.put(ROW, b"t1")?;
    let t1_lock_raft_bytes = cluster.counters().lock_raft_bytes - before.lock_raft_bytes;

    let started = AtomicBool::new(false);
    let (t1_result, t2_result, t2_waited_before_stop, t2_done_before_t1_commit) =
        std::thread::scope(|s| -> Result<_, ScenarioError> {
            let t2 = s.spawn(|| -> Result<u64, TxnError> {
                let mut t2 = c2.begin(TxnMode::Pessimistic)?;
                started.store(true, Ordering::Release);
                t2.put(ROW, b"t2")?;
                t2.commit()
            });
            let t2_begun = Instant::now();
            wait_for_waiter(&cluster, before.lock_waits)?;
            std::thread::sleep(T2_WAIT);
            if t2.is_finished() {
                return Err(ScenarioError::Unexpected("T2 got past T1's lock"));
            }
            let t2_waited = t2_begun.elapsed();
            cluster.stop_node(stopped)?;
            if mode == LockMode::InMemory {
                // T2 finds the next leader, where T1's lock is not: it goes on alone.
                let deadline = Instant::now() + LOCK_WAIT;
                while !t2.is_finished() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
            } else {
                // T2 finds the next leader, where T1's replicated lock is: it waits again.
                cluster.wait_for_leaders(Duration::from_secs(30))?;
                std::thread::sleep(SYNC_HOLD);
            }
            let t2_done = t2.is_finished();
            let t1 = t1.commit();
            let t2 = t2
                .join()
                .map_err(|_| ScenarioError::Unexpected("T2's thread panicked"))?;
            Ok((t1, t2, t2_waited, t2_done))
        })?;
    let final_value = c1.get(ROW)?;
    Ok(LockLossRun {
        mode,
        region,
        stopped,
        t1_lock_raft_bytes,
        t2_waited_before_stop,
        t2_done_before_t1_commit,
        t1: TxnOutcome::of(&t1_result),
        t2: TxnOutcome::of(&t2_result),
        final_value,
        elapsed: begun.elapsed(),
    })
}

/// Waits (up to 5 s) until some node counts a lock wait beyond `before`: T2 is queued behind
/// T1.
fn wait_for_waiter(cluster: &LocalCluster, before: u64) -> Result<(), ScenarioError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while cluster.counters().lock_waits <= before {
        if Instant::now() > deadline {
            return Err(ScenarioError::Unexpected("T2 never waited for T1's lock"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn value_text(v: &Option<Vec<u8>>) -> String {
    v.as_deref().map_or_else(|| "(none)".into(), key_text)
}

impl fmt::Display for LockLossRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = key_text(ROW);
        writeln!(
            f,
            "[{} locks] 3 nodes, row {row} in region {} led by node {}",
            self.mode, self.region, self.stopped
        )?;
        writeln!(
            f,
            "  T1 locks {row}: {} bytes of lock records written to Raft",
            self.t1_lock_raft_bytes
        )?;
        writeln!(f, "  T2 asks for {row} and waits on node {}", self.stopped)?;
        writeln!(
            f,
            "  node {} is stopped (its memory lost) after T2 waited {:.0} ms",
            self.stopped,
            self.t2_waited_before_stop.as_secs_f64() * 1e3
        )?;
        let t2_state = if self.t2_done_before_t1_commit {
            "T2 finished before T1 committed"
        } else {
            "T2 was still waiting when T1 committed"
        };
        writeln!(f, "  {t2_state}")?;
        writeln!(f, "  T1: {}", self.t1)?;
        writeln!(f, "  T2: {}", self.t2)?;
        writeln!(
            f,
            "  {row} = {} afterwards ({:.2} s for this run, cluster start included)",
            value_text(&self.final_value),
            self.elapsed.as_secs_f64()
        )
    }
}
