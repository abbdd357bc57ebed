//! [`KvResponse`]: every node-side reply as a value.

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;

use crate::region::{LockMode, NodeCounters, RegionError, RegionInfo};
use crate::{LockInfo, MvccError, PessimisticLockOutcome, TxnStatus};

/// One edge of a deadlock's wait chain: `txn` waits for `wait_for_txn` on `key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitForEdge {
    /// The waiting transaction.
    pub txn: u64,
    /// The transaction it waits for.
    pub wait_for_txn: u64,
    /// The key.
    pub key: Vec<u8>,
}

impl std::fmt::Display for WaitForEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "txn {} waits for txn {} on key {:?}",
            self.txn,
            self.wait_for_txn,
            String::from_utf8_lossy(&self.key)
        )
    }
}

/// Why a transactional command failed on a key (not a region problem).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum KeyError {
    /// An MVCC action refused.
    #[error(transparent)]
    Mvcc(#[from] MvccError),
    /// Waiting for the lock would close a cycle: this transaction is the victim.
    #[error("deadlock: txn {txn} waiting for txn {wait_for_txn} closes a cycle")]
    Deadlock {
        /// The victim.
        txn: u64,
        /// The holder it wanted to wait for.
        wait_for_txn: u64,
        /// The key.
        key: Vec<u8>,
        /// The cycle, starting with the victim's own wait.
        chain: Vec<WaitForEdge>,
    },
    /// The lock was not released within the wait timeout.
    #[error(
        "lock wait timeout on key {:?} held by txn {lock_ts}",
        String::from_utf8_lossy(key)
    )]
    LockWaitTimeout {
        /// The key.
        key: Vec<u8>,
        /// The holder.
        lock_ts: u64,
    },
    /// A read at, or a lock of a transaction started at, `ts`, older than the node's GC
    /// life time allows (`oldest` is the oldest timestamp it serves): garbage collection may
    /// have removed versions that read needs. Also the answer to a `Gc` request whose
    /// safe point is not older than that bound. TiDB's "GC life time is shorter than
    /// transaction duration".
    #[error("timestamp {ts} is older than the GC life time allows (the oldest served is {oldest})")]
    TooOld {
        /// The timestamp refused.
        ts: u64,
        /// The oldest timestamp served (0: the node serves no GC, see `KvNodeConfig::gc_life_time`).
        oldest: u64,
    },
}

/// A region as the node sees it (for status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionStatus {
    /// The region.
    pub region: RegionInfo,
    /// Whether this node leads it.
    pub is_leader: bool,
    /// The known leader.
    pub leader: Option<NodeId>,
    /// Raft term.
    pub term: u64,
    /// Applied index.
    pub applied: u64,
    /// In-memory locks held (leader only).
    pub memory_locks: usize,
    /// Bytes charged for them.
    pub memory_lock_bytes: usize,
    /// The lock table's status name.
    pub lock_status: String,
}

/// A node's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatusReport {
    /// The node.
    pub node: NodeId,
    /// The lock mode in force.
    pub lock_mode: LockMode,
    /// Its regions.
    pub regions: Vec<RegionStatus>,
    /// Counters.
    pub counters: NodeCounters,
    /// Bytes of in-memory locks on the node.
    pub memory_lock_bytes: usize,
}

/// A reply from a node.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvResponse {
    /// Reply to `Get`.
    Get {
        /// The value, if any.
        #[serde(with = "serde_bytes")]
        value: Option<Vec<u8>>,
    },
    /// Reply to `BatchGet` and `Scan`: key-value pairs in key order.
    Pairs {
        /// The pairs (`BatchGet` omits absent keys).
        #[serde(with = "crate::wire_bytes::pairs")]
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// Reply to `AcquirePessimisticLock`: one outcome per key, in request order.
    PessimisticLock {
        /// The outcomes.
        results: Vec<PessimisticLockOutcome>,
    },
    /// Reply to `Prewrite`.
    Prewrite {
        /// With a one-phase commit: the commit timestamp used (0 otherwise).
        one_pc_commit_ts: u64,
    },
    /// Reply to `CheckTxnStatus`.
    TxnStatus {
        /// The status.
        status: TxnStatus,
    },
    /// Reply to `TxnHeartBeat`: the TTL now in force.
    Ttl {
        /// Milliseconds.
        ttl: u64,
    },
    /// Reply to `ScanLock`.
    Locks {
        /// The locks in key order.
        locks: Vec<LockInfo>,
    },
    /// Reply to `GetTimestamp`: the last of the `count` timestamps.
    Timestamp {
        /// The timestamp.
        ts: u64,
    },
    /// Reply to `GetRegion` / `ScanRegions`, with each region's known leader.
    Regions {
        /// The regions.
        regions: Vec<(RegionInfo, Option<NodeId>)>,
    },
    /// Reply to `DetectDeadlock`: `Some(chain)` when waiting would close a cycle.
    Detect {
        /// The cycle, if any.
        deadlock: Option<Vec<WaitForEdge>>,
    },
    /// Reply to an admin request that changed regions: the regions as they are now, and how
    /// many in-memory locks were migrated (proposed or moved).
    RegionsChanged {
        /// The changed regions.
        regions: Vec<RegionInfo>,
        /// Locks migrated.
        locks: usize,
    },
    /// Reply to `AllocRegionId` and `AllocRegionIds`.
    RegionId {
        /// The id (the first of a batch).
        id: u64,
    },
    /// Reply to `NodeStatus`.
    Status(Box<NodeStatusReport>),
    /// The command succeeded and returns nothing (commit, rollback, resolve, admin).
    Done,
    /// The command was not run: retry elsewhere or later.
    RegionError(RegionError),
    /// The command failed on a key.
    KeyError(KeyError),
    /// Reply to `ScanWrites`.
    Writes {
        /// The puts found and where to resume.
        writes: crate::ScannedWrites,
    },
    /// Reply to `Gc`.
    Gc {
        /// Keys whose garbage was removed.
        keys: u64,
        /// What was removed.
        removed: crate::GcStats,
        /// Write records looked at.
        records_seen: u64,
        /// Where to continue (`None`: the region is done).
        #[serde(with = "serde_bytes")]
        resume_key: Option<Vec<u8>>,
    },
    /// Reply to `GcHolds`: the holds in force, by owner.
    GcHolds {
        /// The holds.
        holds: Vec<crate::GcHold>,
    },
    /// Reply to `SetGcHold` (the hold's timestamp as set, 0 when removed) and
    /// `RaiseGcSafePoint` (the safe point in force).
    GcTs {
        /// The timestamp.
        ts: u64,
    },
}
