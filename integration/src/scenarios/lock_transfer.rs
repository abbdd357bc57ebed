//! A voluntary leader transfer with in-memory pessimistic locks held (TiKV RFC 77, "Leader
//! transfer"): the leader proposes its in-memory locks through Raft before handing over, so
//! the new leader has every one and the transaction commits.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use surge_raft_lite::NodeId;
use surge_txn::{ClientConfig, ClusterConfig, LocalCluster, LockMode, TxnClient, TxnMode};

use super::ScenarioError;
use super::lock_loss::TxnOutcome;

/// How many rows the transaction locks, all in one region.
pub const TRANSFER_LOCKS: usize = 100;

/// What the transfer did to the locks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferRun {
    /// The region whose leadership moved.
    pub region: u64,
    /// Its leader before.
    pub from: NodeId,
    /// Its leader after.
    pub to: NodeId,
    /// In-memory locks the transaction held when the transfer began.
    pub locks_held: usize,
    /// Bytes of lock records written to Raft while the locks were taken (0: in memory).
    pub lock_raft_bytes_before: u64,
    /// Locks the cluster counted as migrated by the transfer.
    pub migrated: u64,
    /// Locks the cluster counted as lost with a leadership.
    pub lost: u64,
    /// How long the transfer took, locks proposed included.
    pub transfer_time: Duration,
    /// The transaction's commit after the transfer.
    pub commit: TxnOutcome,
    /// Rows found with the transaction's value afterwards.
    pub rows_written: usize,
}

fn row_key(i: usize) -> Vec<u8> {
    format!("order/{i:04}").into_bytes()
}

/// Locks [`TRANSFER_LOCKS`] rows in memory, moves their region's leadership to another node,
/// then commits, on a fresh three-node cluster under `dir`.
///
/// # Errors
/// [`ScenarioError::Cluster`] if the cluster does not start or the transfer does not finish
/// in 10 s, [`ScenarioError::Txn`] if locking or reading fails.
pub fn run_lock_transfer(dir: &Path) -> Result<TransferRun, ScenarioError> {
    let cluster = LocalCluster::start(ClusterConfig::new(dir).with_lock_mode(LockMode::InMemory))?;
    let client = TxnClient::new(cluster.router(), ClientConfig::default());
    let region = cluster
        .region_of(&row_key(0))
        .ok_or(ScenarioError::Unexpected("the rows have no region"))?
        .id;
    let from = cluster
        .leader_of_group(region)
        .ok_or(ScenarioError::Unexpected("the rows' region has no leader"))?;
    let to = cluster
        .node_ids()
        .iter()
        .copied()
        .find(|n| *n != from)
        .ok_or(ScenarioError::Unexpected("a one-node cluster"))?;

    let before = cluster.counters();
    let mut txn = client.begin(TxnMode::Pessimistic)?;
    for i in 0..TRANSFER_LOCKS {
        txn.put(&row_key(i), b"shipped")?;
    }
    let locked = cluster.counters();
    let t0 = Instant::now();
    cluster.transfer_leader(region, to, Duration::from_secs(10))?;
    let transfer_time = t0.elapsed();
    let after = cluster.counters();
    let commit = TxnOutcome::of(&txn.commit());
    let mut rows_written = 0;
    for i in 0..TRANSFER_LOCKS {
        if client.get(&row_key(i))?.as_deref() == Some(&b"shipped"[..]) {
            rows_written += 1;
        }
    }
    Ok(TransferRun {
        region,
        from,
        to,
        locks_held: usize::try_from(locked.in_memory_success - before.in_memory_success)
            .unwrap_or(usize::MAX),
        lock_raft_bytes_before: locked.lock_raft_bytes - before.lock_raft_bytes,
        migrated: after.locks_migrated_on_transfer - locked.locks_migrated_on_transfer,
        lost: after.locks_lost_on_leader_loss - locked.locks_lost_on_leader_loss,
        transfer_time,
        commit,
        rows_written,
    })
}

impl fmt::Display for TransferRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "[voluntary leader transfer] a pessimistic txn locks {} rows of region {} in memory \
             on node {} ({} bytes of lock records written to Raft)",
            self.locks_held, self.region, self.from, self.lock_raft_bytes_before
        )?;
        writeln!(
            f,
            "  leadership moves to node {} in {:.0} ms: {} locks migrated through Raft, {} lost",
            self.to,
            self.transfer_time.as_secs_f64() * 1e3,
            self.migrated,
            self.lost
        )?;
        writeln!(
            f,
            "  the txn {}; {} of {} rows hold its value",
            self.commit, self.rows_written, self.locks_held
        )
    }
}
