//! [`KvRequest`]: every node-side command as a value.

use serde::{Deserialize, Serialize};

use surge_raft_lite::NodeId;

use crate::region::{Context, LockMode, RegionInfo};
use crate::{Mutation, PessimisticAction, TxnProps};

/// The version of the request/response format. A peer speaking another version is refused at
/// the handshake (the TCP layer in `surgedb` checks it).
///
/// 1: the first format. 2: `KvRequest::CommitMerge` carries the target's version
/// (`target_version`), and [`crate::RegionError::NodeStopping`] is new (a peer of version 1
/// could decode neither). 3: `KvRequest::ScanWrites` and `KvResponse::Writes` (added as
/// the last variants, so every earlier message encodes as before, but a peer of version 2
/// cannot decode those two), and `TxnError`'s stream variants. 4: `KvRequest::Gc`,
/// `KvResponse::Gc` and `KeyError::TooOld` (again added last). 5: `KvRequest::SetGcHold`,
/// `GcHolds` and `GetHeld`, `KvResponse::GcHolds` (added last), and a meta group state
/// with the GC holds (a meta snapshot of version 4 does not decode). 6: `Context` carries
/// the sender's GC hold (`gc_hold_ts`), so every region request encodes differently;
/// `KvRequest::RaiseGcSafePoint` and `KvResponse::GcTs` (added last, the latter also the
/// reply to `SetGcHold`); a meta group state with the GC safe point.
pub const PROTOCOL_VERSION: u32 = 6;

/// One key of a pessimistic lock request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockKey {
    /// The key.
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// Fail with `AlreadyExist` if the key has a visible value (an INSERT).
    pub should_not_exist: bool,
}

/// A request to a node. Region requests carry a [`Context`]; placement and detector
/// requests go to the meta group's leader.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvRequest {
    /// Snapshot read of one key at `version`.
    Get {
        /// Region and epoch.
        ctx: Context,
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// The read timestamp.
        version: u64,
        /// Start timestamps of transactions whose locks this read may ignore (their
        /// `min_commit_ts` was pushed past `version`).
        bypass_locks: Vec<u64>,
    },
    /// Snapshot read of several keys of one region.
    BatchGet {
        /// Region and epoch.
        ctx: Context,
        /// The keys.
        #[serde(with = "crate::wire_bytes::vec")]
        keys: Vec<Vec<u8>>,
        /// The read timestamp.
        version: u64,
        /// As for `Get`.
        bypass_locks: Vec<u64>,
    },
    /// Snapshot scan of `[start, end)` within one region.
    Scan {
        /// Region and epoch.
        ctx: Context,
        /// First key.
        #[serde(with = "serde_bytes")]
        start: Vec<u8>,
        /// End key (exclusive); `None`: the region's end.
        #[serde(with = "serde_bytes")]
        end: Option<Vec<u8>>,
        /// At most this many pairs.
        limit: usize,
        /// The read timestamp.
        version: u64,
        /// As for `Get`.
        bypass_locks: Vec<u64>,
    },
    /// Lock keys of a pessimistic transaction (before its DML writes them).
    AcquirePessimisticLock {
        /// Region and epoch.
        ctx: Context,
        /// The keys, all in the region.
        keys: Vec<LockKey>,
        /// The transaction's primary key.
        #[serde(with = "serde_bytes")]
        primary: Vec<u8>,
        /// The transaction's start timestamp.
        start_ts: u64,
        /// Lock TTL in milliseconds.
        lock_ttl: u64,
        /// The DML's `for_update_ts`.
        for_update_ts: u64,
        /// Wait at most this long for a conflicting lock (`None`: fail at once with
        /// `KeyIsLocked`).
        wait_timeout_ms: Option<u64>,
        /// Return each key's value at `for_update_ts`.
        need_value: bool,
        /// The transaction's `min_commit_ts`.
        min_commit_ts: u64,
    },
    /// First phase of commit (or the only one, with a one-phase commit kind).
    Prewrite {
        /// Region and epoch.
        ctx: Context,
        /// The keys' mutations with their pessimistic checks.
        mutations: Vec<(Mutation, PessimisticAction)>,
        /// The transaction's properties.
        props: TxnProps,
    },
    /// Second phase: commit keys at `commit_ts`.
    Commit {
        /// Region and epoch.
        ctx: Context,
        /// The keys.
        #[serde(with = "crate::wire_bytes::vec")]
        keys: Vec<Vec<u8>>,
        /// The transaction.
        start_ts: u64,
        /// The commit timestamp.
        commit_ts: u64,
    },
    /// Roll back keys of a transaction.
    BatchRollback {
        /// Region and epoch.
        ctx: Context,
        /// The keys.
        #[serde(with = "crate::wire_bytes::vec")]
        keys: Vec<Vec<u8>>,
        /// The transaction.
        start_ts: u64,
    },
    /// Release pessimistic locks that were never prewritten.
    PessimisticRollback {
        /// Region and epoch.
        ctx: Context,
        /// The keys.
        #[serde(with = "crate::wire_bytes::vec")]
        keys: Vec<Vec<u8>>,
        /// The transaction.
        start_ts: u64,
        /// Release only locks taken at or before this `for_update_ts`.
        for_update_ts: u64,
    },
    /// Find out (and settle) a transaction's fate from its primary key.
    CheckTxnStatus {
        /// Region and epoch of the primary key.
        ctx: Context,
        /// The primary key.
        primary_key: Vec<u8>,
        /// The transaction.
        lock_ts: u64,
        /// The asking transaction's start_ts (to push `min_commit_ts` past it).
        caller_start_ts: u64,
        /// Now, from the timestamp oracle (for TTL expiry).
        current_ts: u64,
        /// Write a rollback record if nothing is found.
        rollback_if_not_exist: bool,
        /// The caller is resolving a pessimistic lock.
        resolving_pessimistic_lock: bool,
    },
    /// Commit (`commit_ts > 0`) or roll back (`0`) a transaction's locks in the region.
    ResolveLock {
        /// Region and epoch.
        ctx: Context,
        /// The transaction.
        start_ts: u64,
        /// Its commit timestamp, or 0 to roll back.
        commit_ts: u64,
        /// The keys; empty: every lock of `start_ts` in the region.
        #[serde(with = "crate::wire_bytes::vec")]
        keys: Vec<Vec<u8>>,
    },
    /// Extend a transaction's TTL.
    TxnHeartBeat {
        /// Region and epoch of the primary key.
        ctx: Context,
        /// The primary key.
        primary_key: Vec<u8>,
        /// The transaction.
        start_ts: u64,
        /// The TTL asked for, in milliseconds.
        advise_ttl: u64,
    },
    /// List locks with `start_ts <= max_ts` in `[start, end)` (memory and replicated).
    ScanLock {
        /// Region and epoch.
        ctx: Context,
        /// Only locks of transactions started at or before this.
        max_ts: u64,
        /// First key.
        start: Vec<u8>,
        /// End key; `None`: the region's end.
        end: Option<Vec<u8>>,
        /// At most this many locks.
        limit: usize,
    },
    /// `count` fresh timestamps from the oracle (meta leader); the reply gives the last.
    GetTimestamp {
        /// How many (at least 1).
        count: u32,
    },
    /// The region that holds `key` (meta leader).
    GetRegion {
        /// The key.
        key: Vec<u8>,
    },
    /// Regions from `start` on, at most `limit` (meta leader).
    ScanRegions {
        /// First key.
        start: Vec<u8>,
        /// At most this many.
        limit: usize,
    },
    /// Deadlock detector (meta leader): `txn` is about to wait for `wait_for_txn` on `key`.
    DetectDeadlock {
        /// The waiting transaction.
        txn: u64,
        /// The lock holder.
        wait_for_txn: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// Deadlock detector: `txn` stopped waiting for `wait_for_txn` on `key`.
    CleanUpWaitFor {
        /// The waiting transaction.
        txn: u64,
        /// The lock holder.
        wait_for_txn: u64,
        /// The key.
        key: Vec<u8>,
    },
    /// Deadlock detector: `txn` finished; drop its edges.
    CleanUpTxn {
        /// The transaction.
        txn: u64,
    },
    /// Admin (to the region's leader): hand leadership of `region_id` to node `to`, after
    /// proposing the leader's in-memory locks through Raft (no lock is lost).
    TransferLeader {
        /// The region.
        region_id: u64,
        /// The node to lead it.
        to: NodeId,
    },
    /// Admin (to the region's leader): split `region_id` at `split_key` (`None`: at the
    /// middle of its data). In-memory locks move to the new region by range.
    SplitRegion {
        /// The region.
        region_id: u64,
        /// Where the new region starts.
        split_key: Option<Vec<u8>>,
    },
    /// Admin (to the source's leader): merge region `source` into the adjacent `target`.
    MergeRegions {
        /// The region that goes away.
        source: u64,
        /// The region that absorbs it.
        target: u64,
    },
    /// Internal (source leader to target leader): absorb `source` with its data.
    CommitMerge {
        /// The absorbing region.
        target: u64,
        /// The source as of its `PrepareMerge`.
        source: RegionInfo,
        /// The source's data (its locks included as lock records).
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        /// The target's version the merge was prepared against: the target absorbs the
        /// source only at this version, so once it moved past it without doing so it never
        /// will.
        target_version: u64,
    },
    /// Placement (meta leader): a fresh region id.
    AllocRegionId,
    /// Placement (meta leader): record region changes.
    ReportRegions {
        /// Regions added or changed.
        put: Vec<RegionInfo>,
        /// Regions gone (merged away).
        remove: Vec<u64>,
    },
    /// Set the cluster's pessimistic lock mode on this node.
    SetLockMode {
        /// The mode.
        mode: LockMode,
    },
    /// This node's regions, roles, lock tables and counters.
    NodeStatus,
    /// Committed puts of `[start, end)` within one region whose `commit_ts` is in
    /// `(after_commit_ts, upto_commit_ts]` (see [`crate::actions::scan_writes`]); locks are
    /// not looked at. The stream reader's scan of stream records.
    ScanWrites {
        /// Region and epoch.
        ctx: Context,
        /// First key.
        #[serde(with = "serde_bytes")]
        start: Vec<u8>,
        /// End key (exclusive); `None`: the region's end.
        #[serde(with = "serde_bytes")]
        end: Option<Vec<u8>>,
        /// Only puts committed after this.
        after_commit_ts: u64,
        /// Only puts committed at or before this.
        upto_commit_ts: u64,
        /// About this many puts at most (cut between keys; 0: no limit).
        limit: usize,
        /// About this many bytes of values at most (cut between keys; 0: no limit).
        limit_bytes: usize,
    },
    /// Placement (meta leader): `count` fresh region ids in a row, in one Raft round (PD
    /// hands out ids from a reserved batch too); the reply's `RegionId` is the first.
    AllocRegionIds {
        /// How many ids (at least one is handed out).
        count: u64,
    },
    /// MVCC garbage collection of one region below `safe_point` (see [`crate::actions::gc`]),
    /// from `start` on: the leader finds up to `limit_keys` keys with garbage and removes it
    /// in one Raft proposal. Refused (`KeyError::TooOld`) unless the node has a
    /// [`gc_life_time`](crate::KvNodeConfig::gc_life_time) and `safe_point` is older than
    /// it: the node must refuse every read below the safe point before it deletes anything.
    /// The caller resolves the locks of transactions started below it first.
    Gc {
        /// Region and epoch.
        ctx: Context,
        /// Collect what no read at or above this timestamp can see.
        safe_point: u64,
        /// First key.
        #[serde(with = "serde_bytes")]
        start: Vec<u8>,
        /// At most this many keys per request (0: no limit).
        limit_keys: usize,
    },
    /// GC holds (meta leader): sets `owner`'s [`GcHold`](crate::GcHold) at `ts` (or at the
    /// GC safe point, if `ts` is below it), expiring `ttl_ms` after now on the leader's
    /// clock; `ts` 0 removes it. Replies `GcTs` with the timestamp set (0: removed).
    SetGcHold {
        /// Whose hold (one per owner).
        owner: u64,
        /// No safe point above this (0: remove the hold).
        ts: u64,
        /// How long it counts without being set again.
        ttl_ms: u64,
    },
    /// GC holds (meta leader): the holds in force (`GcHolds`), after dropping the expired
    /// ones through the meta group's log.
    GcHolds,
    /// A `Get` served below the GC life time: for a caller whose [`GcHold`](crate::GcHold)
    /// has covered `version` since before it was committed, so that no collection removed
    /// what the read sees (a coordinator's binlog recovery rebuilding a transaction it
    /// left in doubt, after being down longer than the life time). Otherwise as `Get`.
    GetHeld {
        /// Region and epoch.
        ctx: Context,
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// The read timestamp.
        version: u64,
        /// As for `Get`.
        bypass_locks: Vec<u64>,
    },
    /// GC (meta leader): raises the cluster's GC safe point towards `safe_point`, but not
    /// above a [`GcHold`](crate::GcHold) in force when the meta group applies it (PD's
    /// `UpdateGCSafePoint`). Replies `GcTs` with the safe point in force: the one to
    /// collect below. No hold is set below it afterwards.
    RaiseGcSafePoint {
        /// The safe point asked for.
        safe_point: u64,
    },
}

impl KvRequest {
    /// The request's name, for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            KvRequest::Get { .. } => "get",
            KvRequest::BatchGet { .. } => "batch_get",
            KvRequest::Scan { .. } => "scan",
            KvRequest::AcquirePessimisticLock { .. } => "acquire_pessimistic_lock",
            KvRequest::Prewrite { .. } => "prewrite",
            KvRequest::Commit { .. } => "commit",
            KvRequest::BatchRollback { .. } => "batch_rollback",
            KvRequest::PessimisticRollback { .. } => "pessimistic_rollback",
            KvRequest::CheckTxnStatus { .. } => "check_txn_status",
            KvRequest::ResolveLock { .. } => "resolve_lock",
            KvRequest::TxnHeartBeat { .. } => "txn_heartbeat",
            KvRequest::ScanLock { .. } => "scan_lock",
            KvRequest::GetTimestamp { .. } => "get_timestamp",
            KvRequest::GetRegion { .. } => "get_region",
            KvRequest::ScanRegions { .. } => "scan_regions",
            KvRequest::DetectDeadlock { .. } => "detect_deadlock",
            KvRequest::CleanUpWaitFor { .. } => "clean_up_wait_for",
            KvRequest::CleanUpTxn { .. } => "clean_up_txn",
            KvRequest::TransferLeader { .. } => "transfer_leader",
            KvRequest::SplitRegion { .. } => "split_region",
            KvRequest::MergeRegions { .. } => "merge_regions",
            KvRequest::CommitMerge { .. } => "commit_merge",
            KvRequest::AllocRegionId => "alloc_region_id",
            KvRequest::ReportRegions { .. } => "report_regions",
            KvRequest::SetLockMode { .. } => "set_lock_mode",
            KvRequest::NodeStatus => "node_status",
            KvRequest::ScanWrites { .. } => "scan_writes",
            KvRequest::AllocRegionIds { .. } => "alloc_region_ids",
            KvRequest::Gc { .. } => "gc",
            KvRequest::SetGcHold { .. } => "set_gc_hold",
            KvRequest::GcHolds => "gc_holds",
            KvRequest::GetHeld { .. } => "get_held",
            KvRequest::RaiseGcSafePoint { .. } => "raise_gc_safe_point",
        }
    }

    /// The region context of a region request (`None` for placement, detector and admin
    /// requests).
    pub fn context(&self) -> Option<&Context> {
        match self {
            KvRequest::Get { ctx, .. }
            | KvRequest::BatchGet { ctx, .. }
            | KvRequest::Scan { ctx, .. }
            | KvRequest::AcquirePessimisticLock { ctx, .. }
            | KvRequest::Prewrite { ctx, .. }
            | KvRequest::Commit { ctx, .. }
            | KvRequest::BatchRollback { ctx, .. }
            | KvRequest::PessimisticRollback { ctx, .. }
            | KvRequest::CheckTxnStatus { ctx, .. }
            | KvRequest::ResolveLock { ctx, .. }
            | KvRequest::TxnHeartBeat { ctx, .. }
            | KvRequest::ScanLock { ctx, .. }
            | KvRequest::ScanWrites { ctx, .. }
            | KvRequest::Gc { ctx, .. }
            | KvRequest::GetHeld { ctx, .. } => Some(ctx),
            _ => None,
        }
    }
}
