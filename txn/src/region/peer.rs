//! [`RegionPeer`]: one replica of a data region: its engine, epoch, and (while it leads) its
//! in-memory lock table, key latches and pending writes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use surge_lock_table::{
    LockError, LockWaitManager, MemoryBudget, RefuseReason, SharedRegionLockTable,
};
use surge_raft_lite::{Error as RaftError, Node as RaftNode, NodeId};

use super::command::{ENGINE_ERROR, EPOCH_CHANGED, RegionCommand, WriteCommand};
use super::concurrency::{ConcurrencyManager, InFlightCommit, OnePcTxn};
use super::counters::Counters;
use super::host::RegionHost;
use super::latches::{LATCH_SLOTS, LatchGuard, Latches};
use super::pause_points::{PausePoints, region_pause_points};
use super::region_error::RegionError;
use super::region_info::{LockMode, RegionInfo};
use crate::{Engine, Lock, MvccError, MvccReader, MvccTxn, TxnWrites};

/// Why a command run on a region did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CmdError {
    /// Retry elsewhere or later.
    Region(RegionError),
    /// The action refused.
    Mvcc(MvccError),
}

impl From<RegionError> for CmdError {
    fn from(e: RegionError) -> Self {
        CmdError::Region(e)
    }
}

impl From<MvccError> for CmdError {
    fn from(e: MvccError) -> Self {
        CmdError::Mvcc(e)
    }
}

/// A one-phase commit's request to the write path.
#[derive(Debug, Clone)]
pub(crate) struct OnePc {
    /// The smallest commit_ts allowed (the client's hint, above start_ts and for_update_ts).
    pub(crate) floor: u64,
    /// The largest commit_ts the client accepts: a commit_ts the region would choose above
    /// it (its `max_ts` far past the client's hint: the request was delayed) prewrites the
    /// keys two-phase instead, and the client finishes with 2PC. A stream record relies on
    /// this: its one-phase commit_ts stays within a second of the record_ts in its key.
    pub(crate) ceiling: u64,
    /// The transaction's primary key and lock TTL, for the lock a read that meets the
    /// commit's guards is told of.
    pub(crate) primary: Vec<u8>,
    pub(crate) ttl: u64,
}

/// What a write waiting in the Raft log still holds: its latches and one-phase guards.
#[derive(Debug)]
struct Pending {
    _latches: LatchGuard,
    one_pc_keys: Vec<Vec<u8>>,
    start_ts: u64,
    /// The Raft proposal, once made. Done but still here means it will not apply here: a
    /// write that applies, or that apply refuses (its region's version moved), leaves
    /// `pending` in its apply, before raft-lite marks the proposal done; one refused by Raft
    /// after its proposer stopped waiting, or whose apply failed ("engine error"), stays
    /// until pruned.
    proposal: Option<surge_raft_lite::Proposal>,
}

/// One replica of a data region.
///
/// # Invariants
/// - `leader_term` is non-zero exactly while this replica leads, between `on_leader` (which
///   runs when the new term's no-op applies, after every older entry) and `on_follower`.
/// - The lock table is writable only while `leader_term` is non-zero and equal to its term.
/// - A command holds its key latches from before it reads until its write applies (or until
///   it knows the write will not apply), so two commands on one key never interleave.
pub(crate) struct RegionPeer {
    pub(super) node_id: NodeId,
    info: RwLock<RegionInfo>,
    engine: Arc<dyn Engine>,
    lock_table: SharedRegionLockTable<Lock>,
    leader_term: AtomicU64,
    latches: Arc<Latches>,
    pending: Mutex<HashMap<(u64, u64), Pending>>,
    next_cmd: AtomicU64,
    pub(crate) concurrency: ConcurrencyManager,
    waiters: LockWaitManager,
    counters: Arc<Counters>,
    pub(super) budget: MemoryBudget,
    pub(super) host: Arc<dyn RegionHost>,
    /// The node's test pause points (inert unless a test arms one).
    pub(super) pause: Arc<PausePoints>,
    /// Where the region is in a merge (as source).
    pub(super) merge: Mutex<MergeState>,
    /// The merge being prepared as its `PrepareMergeAt` applied here: (the region's version
    /// it gave, the target's version its `CommitMerge` must carry). Memory only: after a
    /// restart a merging region's target version is not known here, and no one resumes it.
    pub(super) merge_prepared: Mutex<Option<(u64, u64)>>,
    /// Set while the leader waits for its pending writes to apply before a merge: new
    /// commands are refused (TiKV's prepare-merge fence).
    pub(super) fenced: AtomicBool,
    /// The leader's read lease.
    pub(crate) lease: super::lease::Lease,
    /// Set once an apply's engine write failed: the engine lacks that entry (and every later
    /// one, see `EngineError::Stopped`), so this replica must not serve reads or writes
    /// until a restart replays the log.
    engine_failed: AtomicBool,
}

/// A region's part in a merge, as the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum MergeState {
    /// Not merging.
    None,
    /// `PrepareMerge` applied: the region refuses commands until the merge commits or rolls
    /// back.
    Merging {
        /// The region it merges into.
        target: u64,
    },
    /// The merge committed: the region is gone (its range belongs to `target`).
    Merged {
        /// The region it merged into.
        target: u64,
    },
}

impl std::fmt::Debug for RegionPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionPeer")
            .field("node", &self.node_id)
            .field("region", &self.info.read().id)
            .field("leader_term", &self.leader_term.load(Ordering::Relaxed))
            .finish()
    }
}

impl RegionPeer {
    #[allow(clippy::too_many_arguments)] // the node-wide parts a replica shares, each kept
    pub(crate) fn new(
        node_id: NodeId,
        info: RegionInfo,
        engine: Arc<dyn Engine>,
        budget: &MemoryBudget,
        waiters: LockWaitManager,
        counters: Arc<Counters>,
        host: Arc<dyn RegionHost>,
        pause: Arc<PausePoints>,
        lease: Duration,
    ) -> Arc<RegionPeer> {
        Arc::new(RegionPeer {
            node_id,
            info: RwLock::new(info),
            engine,
            lock_table: SharedRegionLockTable::new(budget),
            leader_term: AtomicU64::new(0),
            latches: Latches::new(LATCH_SLOTS),
            pending: Mutex::new(HashMap::new()),
            next_cmd: AtomicU64::new(1),
            concurrency: ConcurrencyManager::default(),
            waiters,
            counters,
            budget: budget.clone(),
            host,
            pause,
            merge: Mutex::new(MergeState::None),
            merge_prepared: Mutex::new(None),
            fenced: AtomicBool::new(false),
            lease: super::lease::Lease::new(lease),
            engine_failed: AtomicBool::new(false),
        })
    }

    /// A new replica on the same node, sharing this one's budget, waiters, counters and host
    /// (a split's child).
    pub(super) fn sibling(&self, info: RegionInfo, engine: Arc<dyn Engine>) -> Arc<RegionPeer> {
        RegionPeer::new(
            self.node_id,
            info,
            engine,
            &self.budget,
            self.waiters.clone(),
            self.counters.clone(),
            self.host.clone(),
            self.pause.clone(),
            self.lease.duration(),
        )
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    pub(crate) fn merge_state(&self) -> MergeState {
        *self.merge.lock()
    }

    pub(crate) fn id(&self) -> u64 {
        self.info.read().id
    }

    pub(crate) fn info(&self) -> RegionInfo {
        self.info.read().clone()
    }

    /// The term this replica leads in (0: not leader).
    pub(crate) fn leader_term(&self) -> u64 {
        self.leader_term.load(Ordering::SeqCst)
    }

    /// Checks that this replica leads, that the request's epoch is the region's and that
    /// every key is inside it; returns the term and region version to run under.
    pub(crate) fn check(
        &self,
        ctx: &crate::region::Context,
        keys: &[&[u8]],
    ) -> Result<(u64, u64), RegionError> {
        let info = self.info.read();
        self.engine_ok()?;
        let term = self.leader_term();
        if term == 0 {
            return Err(RegionError::NotLeader {
                region_id: info.id,
                leader: None,
            });
        }
        match *self.merge.lock() {
            MergeState::None => {}
            MergeState::Merging { .. } => {
                return Err(RegionError::ServerIsBusy {
                    region_id: info.id,
                    reason: "region is merging".into(),
                });
            }
            MergeState::Merged { .. } => {
                return Err(RegionError::RegionNotFound { region_id: info.id });
            }
        }
        if ctx.region_id != info.id || ctx.epoch != info.epoch {
            return Err(RegionError::EpochNotMatch {
                region_id: info.id,
                current: vec![info.clone()],
            });
        }
        if self.fenced.load(Ordering::SeqCst) {
            return Err(RegionError::ServerIsBusy {
                region_id: info.id,
                reason: "pending merge: waiting for earlier writes to apply".into(),
            });
        }
        if let Some(k) = keys.iter().find(|k| !info.contains(k)) {
            return Err(RegionError::KeyNotInRegion {
                key: k.to_vec(),
                region_id: info.id,
            });
        }
        Ok((term, info.epoch.version))
    }

    /// Refuses everything once an engine write failed (see `engine_failed`).
    fn engine_ok(&self) -> Result<(), RegionError> {
        if self.engine_failed.load(Ordering::SeqCst) {
            return Err(RegionError::ServerIsBusy {
                region_id: self.info.read().id,
                reason: "engine write failed on this replica; it serves nothing until restarted"
                    .into(),
            });
        }
        Ok(())
    }

    fn term_version_error(&self, e: LockError) -> RegionError {
        let info = self.info.read();
        match e {
            LockError::EpochNotMatch { .. } => RegionError::EpochNotMatch {
                region_id: info.id,
                current: vec![info.clone()],
            },
            _ => RegionError::StaleCommand { region_id: info.id },
        }
    }

    /// Runs a snapshot read: registers `ts` with the concurrency manager (so a later
    /// one-phase commit lands above it), refuses if a one-phase commit is in flight in the
    /// range, then calls `f` on a reader of the engine.
    pub(crate) fn read<T>(
        &self,
        ts: u64,
        start: &[u8],
        end: Option<&[u8]>,
        point: bool,
        f: impl FnOnce(&MvccReader<'_>) -> Result<T, MvccError>,
    ) -> Result<T, CmdError> {
        let term = self.leader_term();
        self.concurrency
            .read(ts, start, end, point)
            .map_err(in_flight_commit)?;
        let snap = self.engine.snapshot();
        // A split may have moved the range's data away between the request's checks and
        // this snapshot; the range shrinks before the data moves, so checking it again now
        // tells whether the snapshot still holds everything the read may need.
        self.still_holds(start, end, point, None)?;
        self.engine_ok()?;
        self.still_leads(term)?;
        let reader = MvccReader::new(&*snap, None);
        Ok(f(&reader)?)
    }

    /// The read that began in `term` may be served: this replica still leads in it. A
    /// leadership lost meanwhile cleared the one-phase guards (`on_follower` zeroes the term
    /// first, then clears them), so the read may have passed a one-phase commit that
    /// another leader will apply at or below its timestamp: it is refused instead.
    fn still_leads(&self, term: u64) -> Result<(), CmdError> {
        if term == 0 || self.leader_term() != term {
            return Err(RegionError::NotLeader {
                region_id: self.id(),
                leader: None,
            }
            .into());
        }
        Ok(())
    }

    /// As [`RegionPeer::read`] for several point reads on one snapshot.
    pub(crate) fn read_points<T>(
        &self,
        ts: u64,
        keys: &[Vec<u8>],
        f: impl FnOnce(&MvccReader<'_>) -> Result<T, MvccError>,
    ) -> Result<T, CmdError> {
        let term = self.leader_term();
        for k in keys {
            self.concurrency
                .read(ts, k, None, true)
                .map_err(in_flight_commit)?;
        }
        let snap = self.engine.snapshot();
        for k in keys {
            self.still_holds(k, None, true, None)?;
        }
        self.engine_ok()?;
        self.still_leads(term)?;
        let reader = MvccReader::new(&*snap, None);
        Ok(f(&reader)?)
    }

    /// Whether the region still holds the key `start` (`point`), or the range `[start, end)`
    /// (no end: to the end of the key space), and, if given, is still at `version`.
    fn still_holds(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        point: bool,
        version: Option<u64>,
    ) -> Result<(), RegionError> {
        let info = self.info.read();
        let end_ok = point
            || match end {
                Some(e) => info.end.is_empty() || e <= info.end.as_slice(),
                None => info.end.is_empty(),
            };
        if info.contains(start) && end_ok && version.is_none_or(|v| v == info.epoch.version) {
            Ok(())
        } else {
            Err(RegionError::EpochNotMatch {
                region_id: info.id,
                current: vec![info.clone()],
            })
        }
    }

    /// Runs a read that must see the in-memory locks too (lock scans, lock re-checks).
    pub(crate) fn read_locks<T>(
        &self,
        f: impl FnOnce(&MvccReader<'_>) -> Result<T, MvccError>,
    ) -> Result<T, CmdError> {
        let table = self.lock_table.read();
        let snap = self.engine.snapshot();
        let reader = MvccReader::new(&*snap, Some(&table));
        Ok(f(&reader)?)
    }

    /// [`RegionPeer::read_locks`] over `[start, end)` for a lock scan whose answer must be
    /// complete (the stream watermark's): the snapshot is checked, after it is taken, to
    /// still hold the whole range on a replica that still leads, as
    /// [`RegionPeer::read`] does, so a split or leader change that raced the request is
    /// refused instead of answered with a part of the locks.
    ///
    /// With `read_at`, it is also a read at that timestamp for one-phase commits (as
    /// [`RegionPeer::read`]): `max_ts` is raised to it, so a one-phase commit that lands
    /// after the scan takes a commit_ts above it, and one in flight in the range at or
    /// below it makes the scan fail (the caller scans again). That is what lets the stream
    /// watermark's lock scan cover one-phase commits, which leave no lock to see. (Only a
    /// real oracle timestamp may be given: a lock scan "up to `u64::MAX`" must not raise
    /// `max_ts` there.)
    pub(crate) fn read_locks_in<T>(
        &self,
        read_at: Option<u64>,
        start: &[u8],
        end: Option<&[u8]>,
        f: impl FnOnce(&MvccReader<'_>) -> Result<T, MvccError>,
    ) -> Result<T, CmdError> {
        let term = self.leader_term();
        if let Some(ts) = read_at {
            self.concurrency
                .read(ts, start, end, false)
                .map_err(in_flight_commit)?;
        }
        let answer = {
            let table = self.lock_table.read();
            let snap = self.engine.snapshot();
            let reader = MvccReader::new(&*snap, Some(&table));
            f(&reader)
        };
        // Checked after the read, with the lock table released (the region's info is taken
        // here; a split takes it before the table): the range shrinks before its data and
        // locks move, so a range still whole now was whole when the snapshot was taken.
        self.still_holds(start, end, false, None)?;
        self.engine_ok()?;
        self.still_leads(term)?;
        Ok(answer?)
    }

    /// Takes the latches of `keys`, pruning (every 50 ms while it waits) the pending writes
    /// that will never apply, whose latches would otherwise be held for good.
    pub(super) fn latch_keys(&self, keys: &[Vec<u8>]) -> LatchGuard {
        self.latches
            .acquire_while(keys, Duration::from_millis(50), || self.prune_pending(None))
    }

    /// As [`RegionPeer::latch_keys`], giving up at `deadline` (`None`, nothing taken).
    pub(super) fn latch_keys_until(
        &self,
        keys: &[Vec<u8>],
        deadline: std::time::Instant,
    ) -> Option<LatchGuard> {
        self.latches
            .acquire_until(keys, deadline, Duration::from_millis(50), || {
                self.prune_pending(None)
            })
    }

    /// Runs an action under the latches of `keys` and makes its writes durable.
    ///
    /// - `lock_mode`: `Some` for a pessimistic lock request: `InMemory` tries the lock table
    ///   first and falls back to `Pipelined`; `Pipelined` replies once the leader accepted
    ///   the proposal (latches held until apply); `Sync` and `None` reply after apply.
    /// - `one_pc`: choose a one-phase commit_ts under the latches and pass it to `f`.
    #[allow(clippy::too_many_arguments)] // the write path's inputs, each used once
    pub(crate) fn write<T>(
        &self,
        raft: &RaftNode,
        ctx: &crate::region::Context,
        keys: &[Vec<u8>],
        start_ts: u64,
        lock_mode: Option<LockMode>,
        one_pc: Option<OnePc>,
        timeout: Duration,
        f: impl FnOnce(&MvccReader<'_>, &mut MvccTxn, Option<u64>) -> Result<T, MvccError>,
    ) -> Result<T, CmdError> {
        let key_refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let (term, version) = self.check(ctx, &key_refs)?;
        // Flow control before the latches: a stalled request holds none.
        self.engine.throttle_writes();
        let latch = self.latch_keys(keys);
        // Leadership may have moved while we waited for the latches.
        let (term2, _) = self.check(ctx, &key_refs)?;
        if term2 != term {
            return Err(RegionError::StaleCommand {
                region_id: ctx.region_id,
            }
            .into());
        }
        let mut is_one_pc = one_pc.is_some();
        let commit_ts = match one_pc {
            None => None,
            Some(o) => {
                let txn = OnePcTxn {
                    start_ts,
                    primary: o.primary,
                    ttl: o.ttl,
                };
                match self.concurrency.begin_one_pc(keys, txn, o.floor) {
                    Some(ts) if ts <= o.ceiling => Some(ts),
                    Some(_) => {
                        // Past the client's ceiling: two-phase locks instead.
                        self.concurrency.end_one_pc(keys, start_ts);
                        is_one_pc = false;
                        None
                    }
                    // Unsynced since the handler's sync (leadership or range changed while
                    // it fetched the timestamp): retryable; the retry syncs again.
                    None => {
                        return Err(RegionError::ServerIsBusy {
                            region_id: ctx.region_id,
                            reason: "max_ts changed owner during a one-phase commit; retry".into(),
                        }
                        .into());
                    }
                }
            }
        };
        let end_one_pc = || {
            if is_one_pc {
                self.concurrency.end_one_pc(keys, start_ts);
            }
        };
        let (value, writes) = {
            let table = self.lock_table.read();
            if let Err(e) = table.check_term_version(term, version) {
                end_one_pc();
                return Err(self.term_version_error(e).into());
            }
            let snap = self.engine.snapshot();
            // As in `read`: the keys' data must still be in this snapshot.
            if let Some(e) = keys
                .iter()
                .find_map(|k| self.still_holds(k, None, true, Some(version)).err())
            {
                end_one_pc();
                return Err(e.into());
            }
            let reader = MvccReader::new(&*snap, Some(&table));
            let mut txn = MvccTxn::new(start_ts);
            match f(&reader, &mut txn, commit_ts) {
                Ok(v) => (v, txn.into_writes()),
                Err(e) => {
                    end_one_pc();
                    return Err(e.into());
                }
            }
        };
        if writes.is_empty() {
            end_one_pc();
            return Ok(value);
        }
        let mut writes = writes;
        let mut reply_on_accept = matches!(lock_mode, Some(LockMode::Pipelined));
        let lock_only = writes.modifies.is_empty() && !writes.pessimistic_locks.is_empty();
        if lock_mode == Some(LockMode::InMemory) && lock_only {
            let locks = std::mem::take(&mut writes.pessimistic_locks);
            match self.lock_table.try_insert(locks, term, version) {
                Ok(_) => {
                    Counters::add(&self.counters.in_memory_success, 1);
                    return Ok(value);
                }
                Err(refused) => {
                    let c = match refused.reason {
                        RefuseReason::RegionBudgetFull { .. }
                        | RefuseReason::NodeBudgetFull { .. } => &self.counters.in_memory_full,
                        RefuseReason::NotWritable { .. } => &self.counters.in_memory_not_writable,
                        _ => &self.counters.in_memory_stale,
                    };
                    Counters::add(c, 1);
                    // The term or the region's version moved under us (a leader change, a
                    // split or merge): the Raft path would be refused at apply, after a
                    // pipelined reply, and the lock silently lost. Answer the region error
                    // now, as TiKV's raftstore does (StaleCommand / EpochNotMatch).
                    match refused.reason {
                        RefuseReason::TermMismatch { .. } => {
                            return Err(RegionError::StaleCommand {
                                region_id: ctx.region_id,
                            }
                            .into());
                        }
                        RefuseReason::VersionMismatch { .. } => {
                            let info = self.info();
                            return Err(RegionError::EpochNotMatch {
                                region_id: info.id,
                                current: vec![info],
                            }
                            .into());
                        }
                        _ => {}
                    }
                    writes.pessimistic_locks = refused.into_batch();
                    reply_on_accept = true;
                }
            }
        }
        self.propose(
            raft,
            term,
            version,
            latch,
            writes,
            lock_only,
            reply_on_accept,
            commit_ts.map(|_| (keys.to_vec(), start_ts)),
            timeout,
        )?;
        Ok(value)
    }

    #[allow(clippy::too_many_arguments)] // internal: the pieces of one proposal
    fn propose(
        &self,
        raft: &RaftNode,
        term: u64,
        version: u64,
        latch: LatchGuard,
        writes: TxnWrites,
        lock_only: bool,
        reply_on_accept: bool,
        one_pc: Option<(Vec<Vec<u8>>, u64)>,
        timeout: Duration,
    ) -> Result<(), CmdError> {
        let region_id = self.id();
        self.pause.reach(region_pause_points::WRITE_BEFORE_PROPOSE);
        // Every memory lock this write replaces or removes is marked deleted now and removed
        // when the write applies (TiKV); a pessimistic lock falling back to Raft marks the
        // old memory entry too, so it cannot shadow the replicated one (tikv#19864).
        let mut touched: Vec<Vec<u8>> = writes.lock_cf_keys.clone();
        touched.extend(writes.pessimistic_locks.iter().map(|(k, _)| k.clone()));
        if !touched.is_empty() {
            self.lock_table.mark_deleted_batch(&touched);
        }
        let released = writes.released.clone();
        let cmd_id = self.next_cmd.fetch_add(1, Ordering::Relaxed);
        let (one_pc_keys, start_ts) = one_pc.unwrap_or_default();
        let cmd = RegionCommand::Write(WriteCommand {
            proposer: self.node_id,
            term,
            cmd_id,
            version,
            batch: writes.into_batch(),
            lock_cf_keys: touched,
            released,
            lock_only,
        });
        let bytes = cmd.encode();
        Counters::add(&self.counters.proposals, 1);
        Counters::add(&self.counters.raft_bytes, bytes.len() as u64);
        if lock_only {
            Counters::add(&self.counters.lock_raft_bytes, bytes.len() as u64);
        }
        self.pending.lock().insert(
            (term, cmd_id),
            Pending {
                _latches: latch,
                one_pc_keys,
                start_ts,
                proposal: None,
            },
        );
        let p = raft.propose(region_id, bytes::Bytes::from(bytes));
        if let Some(entry) = self.pending.lock().get_mut(&(term, cmd_id)) {
            entry.proposal = Some(p.clone());
        }
        let r = if reply_on_accept {
            p.wait_accepted(timeout).map(|_| ())
        } else {
            p.wait_applied(timeout).and_then(|result| {
                if result.as_ref() == EPOCH_CHANGED {
                    Err(surge_raft_lite::Error::ProposalDropped)
                } else if result.is_empty() {
                    Ok(())
                } else {
                    // Committed but not applied here ("bad command", "engine error"): not
                    // a success; what the other replicas did is unknown.
                    Err(surge_raft_lite::Error::OutcomeUnknown)
                }
            })
        };
        match r {
            Ok(()) => Ok(()),
            Err(surge_raft_lite::Error::ProposalDropped) if !reply_on_accept => {
                // Refused at apply (the apply released it already) or overwritten: it will
                // not apply, and nothing of it may stay behind.
                self.finish_pending(term, cmd_id);
                let info = self.info();
                Err(RegionError::EpochNotMatch {
                    region_id: info.id,
                    current: vec![info],
                }
                .into())
            }
            // Perhaps in the log and not known to be committed (a quorum lost for longer than
            // the timeout, say): it may still apply. Its latches and one-phase guards stay
            // until it applies (the apply releases them), is refused (`prune_pending`), or
            // this node stops leading (`on_follower` clears them): released now, a read at or
            // above its commit_ts could be served before it applies and miss it (TiKV holds
            // the key guards until the proposal's callback).
            Err(e @ (surge_raft_lite::Error::Timeout | surge_raft_lite::Error::OutcomeUnknown)) => {
                Err(raft_error(region_id, e).into())
            }
            Err(e) => {
                // Refused, so it will not apply here: its latches and guards go now.
                self.finish_pending(term, cmd_id);
                Err(raft_error(region_id, e).into())
            }
        }
    }

    /// The pending write `(term, cmd_id)` applied or will never apply: its latches go and
    /// its one-phase guards end. Every way a pending write leaves `pending` but `on_follower`
    /// (which drops every guard at once) goes through here or `prune_pending`.
    fn finish_pending(&self, term: u64, cmd_id: u64) {
        let finished = self.pending.lock().remove(&(term, cmd_id));
        if let Some(p) = finished {
            self.concurrency.end_one_pc(&p.one_pc_keys, p.start_ts);
        }
    }

    /// Whether this replica was merged away (this node's target replica absorbed it), in
    /// which case the log entry or snapshot (`what`, at `index`) it still receives before
    /// its group is removed is not applied (logged): on a disk engine shared by the node's
    /// regions it would write under keys the target owns now, and a snapshot would also
    /// reset the merge state that guards them.
    pub(crate) fn merged_away(&self, index: u64, what: &'static str) -> bool {
        let MergeState::Merged { target } = *self.merge.lock() else {
            return false;
        };
        tracing::info!(
            region = self.id(),
            index,
            target,
            "{what} of a region merged away not applied"
        );
        true
    }

    /// Applies a committed entry (the driver thread).
    pub(crate) fn apply(&self, index: u64, data: &[u8]) -> bytes::Bytes {
        let cmd = match RegionCommand::decode(data) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(region = self.id(), index, error = %e, "undecodable region command skipped");
                return bytes::Bytes::from_static(b"bad command");
            }
        };
        // This node's target replica absorbed the region: its range is the target's now.
        // A replica that lagged may still apply entries of its own log before its group is
        // removed (`region_merged` removes it without waiting), and on a disk engine shared
        // by the node's regions they would write stale records (a lock whose commit the
        // target already applied, say) under the target's keys.
        if self.merged_away(index, "entry") {
            return bytes::Bytes::from_static(EPOCH_CHANGED);
        }
        match cmd {
            RegionCommand::Write(mut w) => {
                if w.version != self.info.read().epoch.version {
                    // Raced a split or merge: refused as TiKV does at apply; the proposer
                    // answers EpochNotMatch. It will never be written anywhere, so its
                    // latches and one-phase guards go now (a guard left would refuse every
                    // read of its keys at or above its commit_ts until a leader change).
                    if w.proposer == self.node_id {
                        self.finish_pending(w.term, w.cmd_id);
                    }
                    return bytes::Bytes::from_static(EPOCH_CHANGED);
                }
                if let Err(answer) = self.write_applied(index, &mut w.batch) {
                    return answer;
                }
                if !w.lock_cf_keys.is_empty() {
                    let mut table = self.lock_table.write();
                    for k in &w.lock_cf_keys {
                        if table.get(k).is_some_and(|e| e.is_deleted()) {
                            table.remove_applied(k, w.term, w.version);
                        }
                    }
                }
                for (k, lock_ts) in &w.released {
                    self.waiters.wake_up(k, *lock_ts);
                }
                if w.proposer == self.node_id {
                    self.finish_pending(w.term, w.cmd_id);
                }
                bytes::Bytes::new()
            }
            RegionCommand::MigrateLocks { version, locks } => {
                self.apply_migrated_locks(index, version, &locks)
            }
            RegionCommand::TransferLeader { .. } => bytes::Bytes::new(),
            RegionCommand::Split {
                split_key,
                new_region_id,
                new_version,
            } => {
                self.apply_split(index, &split_key, new_region_id, new_version);
                bytes::Bytes::new()
            }
            RegionCommand::PrepareMerge {
                target,
                new_version,
            } => {
                self.apply_prepare_merge(index, target, new_version);
                bytes::Bytes::new()
            }
            RegionCommand::PrepareMergeAt {
                target,
                new_version,
                target_version,
            } => {
                self.apply_prepare_merge(index, target, new_version);
                *self.merge_prepared.lock() = Some((new_version, target_version));
                bytes::Bytes::new()
            }
            RegionCommand::RollbackMerge { new_version } => {
                self.apply_rollback_merge(index, new_version);
                bytes::Bytes::new()
            }
            RegionCommand::CommitMerge {
                source,
                data,
                target_version,
            } => {
                if self.apply_commit_merge(index, &source, &data, target_version) {
                    bytes::Bytes::new()
                } else {
                    bytes::Bytes::from_static(EPOCH_CHANGED)
                }
            }
        }
    }

    /// Writes the batch of the entry at `index` (stamped with it). A refusal of the engine
    /// is logged and given as the entry's answer ([`ENGINE_ERROR`]).
    pub(super) fn write_applied(
        &self,
        index: u64,
        batch: &mut crate::WriteBatch,
    ) -> Result<(), bytes::Bytes> {
        batch.applied_index = index;
        self.engine.write(batch).map_err(|e| {
            self.engine_failed.store(true, Ordering::SeqCst);
            tracing::error!(region = self.id(), index, error = %e, "engine write failed");
            bytes::Bytes::from_static(ENGINE_ERROR)
        })
    }

    /// Wakes every waiter on a key of this region's memory or replicated locks (used when
    /// leadership is lost, so waiters retry and learn the new leader instead of sleeping).
    fn wake_all_waiters(&self, keys: Vec<Vec<u8>>) {
        for k in keys {
            self.waiters.wake_up(&k, 0);
        }
    }

    /// Drops the pending writes whose proposals ended without applying here (refused by the
    /// Raft thread after their proposer stopped waiting: a transfer in progress, a proposal
    /// too large) or, with `term`, that belong to another term: they will never apply, and
    /// their latches would block their keys for good.
    fn prune_pending(&self, term: Option<u64>) {
        let mut ended = Vec::new();
        self.pending.lock().retain(|(t, _), p| {
            let refused = p
                .proposal
                .as_ref()
                .is_some_and(surge_raft_lite::Proposal::is_done);
            let keep = !refused && term.is_none_or(|term| *t == term);
            if !keep {
                ended.push((std::mem::take(&mut p.one_pc_keys), p.start_ts));
            }
            keep
        });
        for (keys, start_ts) in ended {
            self.concurrency.end_one_pc(&keys, start_ts);
        }
    }

    pub(crate) fn on_leader(&self, term: u64) {
        self.lease.invalidate();
        self.prune_pending(Some(term));
        let version = self.info.read().epoch.version;
        self.concurrency.unsync();
        self.lock_table.become_leader(term, version);
        self.leader_term.store(term, Ordering::SeqCst);
    }

    pub(crate) fn on_follower(&self) {
        self.leader_term.store(0, Ordering::SeqCst);
        // A transfer away from this node is over: a later term may grant leases again.
        self.lease.resume();
        let keys: Vec<Vec<u8>> = self
            .lock_table
            .read()
            .iter()
            .map(|(k, _)| k.to_vec())
            .collect();
        // Locks of a voluntary transfer or merge were proposed through Raft before: dropping
        // them here loses nothing. Any other loss of leadership loses them.
        let migrated = matches!(
            self.lock_table.status(),
            surge_lock_table::LockStatus::TransferringLeader
                | surge_lock_table::LockStatus::MergingRegion
        );
        let lost = self.lock_table.become_follower();
        if !migrated {
            Counters::add(&self.counters.locks_lost_on_leader_loss, lost.locks as u64);
        }
        self.concurrency.unsync();
        self.pending.lock().clear();
        self.wake_all_waiters(keys);
    }

    /// Serializes the region (its range, epoch, merge state and data) for a Raft snapshot.
    pub(crate) fn snapshot(&self) -> bytes::Bytes {
        encode_snapshot(self.info(), self.merge_state(), self.engine.export())
    }

    /// The Raft snapshot a split child's group starts from. On a disk engine (one that
    /// keeps the region's record) the data is already under the child's range in the
    /// node's engine: the seed carries the region's range and state and a marker instead
    /// of the data, so a split costs the same whatever the region's size. The seed is only
    /// ever restored on this node (every replica seeds its own child when it applies the
    /// split, and a leader never sends a snapshot at the seed's index, where every
    /// replica's log starts). On a `MemEngine` it is a whole snapshot.
    pub(crate) fn split_seed(&self) -> bytes::Bytes {
        if self.engine.is_durable() {
            encode_snapshot(self.info(), self.merge_state(), SHARED_ENGINE_SEED.to_vec())
        } else {
            self.snapshot()
        }
    }

    /// Whether the engine keeps the region across a restart (a disk engine).
    pub(crate) fn is_durable(&self) -> bool {
        self.engine.is_durable()
    }

    /// The marker that compacts a disk engine's log (see `StateMachine::compaction_marker`
    /// in `raft-lite`): the split seed's encoding (range, epoch and merge state, no data)
    /// of now, returned by a closure that first writes the engine's checkpoint of now
    /// ([`Engine::checkpoint`]) and makes the engine durable. Restored at a
    /// restart like a split seed: the engine holds the marker's index or later.
    pub(crate) fn compaction_marker(
        &self,
    ) -> Box<dyn FnOnce() -> Result<bytes::Bytes, String> + Send> {
        let marker = self.split_seed();
        let engine = self.engine.clone();
        let id = self.id();
        // A replica merged away writes nothing more: its range is the target's.
        let merged = matches!(*self.merge.lock(), MergeState::Merged { .. });
        let checkpoint = (!merged).then(|| self.engine.checkpoint());
        Box::new(move || {
            if let Some(checkpoint) = checkpoint {
                checkpoint().map_err(|e| {
                    tracing::error!(region = id, error = %e, "engine checkpoint failed; log not compacted");
                    format!("region {id}: engine checkpoint failed: {e}")
                })?;
            }
            engine.persist().map_err(|e| {
                tracing::error!(region = id, error = %e, "engine persist failed; log not compacted");
                format!("region {id}: engine persist failed: {e}")
            })?;
            Ok(marker)
        })
    }

    /// The region as of now (its range, epoch, merge state and a view of its data),
    /// serialized when called, into exactly the bytes [`RegionPeer::snapshot`] gives now.
    /// Called on the node's Raft thread between two applied entries, so the three parts
    /// are of the same applied index; the closure runs on the snapshot writer thread and
    /// reaches nothing of the peer.
    pub(crate) fn snapshot_deferred(&self) -> Box<dyn FnOnce() -> bytes::Bytes + Send> {
        let (info, merge) = (self.info(), self.merge_state());
        let view = self.engine.export_view();
        Box::new(move || encode_snapshot(info, merge, view()))
    }

    /// Replaces the region by a snapshot, unless the engine already holds the region as of
    /// the snapshot's index or later (a disk engine at a restart: the log after the
    /// engine's index replays, from [`RegionPeer::durable_applied`]'s state).
    pub(crate) fn restore(&self, index: u64, data: &[u8]) {
        if self.merged_away(index, "snapshot") {
            return;
        }
        if let Some((applied, _)) = self.engine.durable_region()
            && applied >= index
        {
            tracing::debug!(
                region = self.id(),
                index,
                applied,
                "snapshot not applied: the engine holds a later state"
            );
            return;
        }
        let snap: PeerSnapshot = match postcard::from_bytes(data) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(region = self.id(), index, error = %e, "region snapshot refused");
                return;
            }
        };
        let record = region_record(&snap.info, snap.merge);
        let applied = if snap.engine == SHARED_ENGINE_SEED {
            if !self.engine.is_durable() {
                tracing::error!(
                    region = self.id(),
                    index,
                    "a disk engine's split seed refused by a memory engine"
                );
                return;
            }
            // A split seed on a disk engine: the data is in the engine already (the
            // parent's log replays what the engine lacks of it after a power loss).
            self.engine.set_region(&record, index)
        } else {
            self.engine.import_region(&snap.engine, index, &record)
        };
        if let Err(e) = applied {
            tracing::error!(region = self.id(), index, error = %e, "region snapshot refused");
            return;
        }
        *self.info.write() = snap.info;
        *self.merge.lock() = snap.merge;
    }

    /// The applied index the engine holds durably (0: none, the log replays from its
    /// start or snapshot), with the region's range, epoch and merge state taken from the
    /// engine's record of that index.
    pub(crate) fn durable_applied(&self) -> u64 {
        let Some((applied, record)) = self.engine.durable_region() else {
            return 0;
        };
        if !record.state.is_empty() {
            match postcard::from_bytes::<(RegionInfo, MergeState)>(&record.state) {
                Ok((info, merge)) => {
                    *self.info.write() = info;
                    *self.merge.lock() = merge;
                }
                Err(e) => {
                    // Without the state the engine's data cannot be trusted to match the
                    // region: replay everything (the log or snapshot rebuilds it).
                    tracing::error!(region = self.id(), error = %e, "region record undecodable; replaying the log");
                    return 0;
                }
            }
        }
        applied
    }

    /// Records the region's current range and state in the engine at `index`.
    pub(super) fn record_region(&self, index: u64) {
        let record = region_record(&self.info(), self.merge_state());
        if let Err(e) = self.engine.set_region(&record, index) {
            tracing::error!(region = self.id(), index, error = %e, "region record not written");
        }
    }

    /// The engine (for splits and merges).
    pub(super) fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    /// The lock table handle (for splits and merges).
    pub(super) fn table(&self) -> &SharedRegionLockTable<Lock> {
        &self.lock_table
    }

    /// The region's range and epoch (for splits and merges to change).
    pub(super) fn info_mut(&self) -> parking_lot::RwLockWriteGuard<'_, RegionInfo> {
        self.info.write()
    }

    /// Waits (up to `timeout`) until every write this leader proposed has applied.
    pub(super) fn wait_no_pending(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            self.prune_pending(None);
            if self.pending.lock().is_empty() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// In-memory locks and their charged bytes.
    pub(crate) fn memory_locks(&self) -> (usize, usize, String) {
        let t = self.lock_table.read();
        (t.len(), t.memory_size(), t.status().as_str().to_string())
    }

    /// Whether `key` is still locked by the transaction `lock_ts` (memory or replicated).
    pub(crate) fn is_locked_by(&self, key: &[u8], lock_ts: u64) -> bool {
        let table = self.lock_table.read();
        let snap = self.engine.snapshot();
        let reader = MvccReader::new(&*snap, Some(&table));
        matches!(reader.load_lock(key), Ok(Some(l)) if l.start_ts == lock_ts)
    }
}

/// A read that met a one-phase commit in flight, as the lock it stands for: the commit's
/// primary and TTL, its chosen commit_ts as `min_commit_ts`. A reader resolves it as any lock
/// of the transaction: its `CheckTxnStatus` goes to the primary, waits there for the commit's
/// latches (the primary is one of the commit's keys), then finds its commit record; or, if
/// the commit did not apply, finds what the transaction left (waiting while its TTL lasts).
fn in_flight_commit(c: InFlightCommit) -> CmdError {
    CmdError::Mvcc(MvccError::KeyIsLocked(Box::new(crate::LockInfo {
        key: c.key,
        primary: c.txn.primary,
        lock_ts: c.txn.start_ts,
        ttl: c.txn.ttl,
        lock_type: crate::LockType::Put,
        for_update_ts: 0,
        min_commit_ts: c.commit_ts,
        txn_size: 1,
    })))
}

/// The [`PeerSnapshot`] encoding of `info`, `merge` and the engine export `export`, built
/// in the export's own buffer: encoding the export a second time, one serializer call per
/// byte, into a second buffer cost most of a snapshot's time (a region of 16 MiB took
/// 190-350 ms, timed by hand with temporary instrumentation; each 16 MiB buffer filled
/// costs tens of milliseconds of page faults on a loaded machine).
fn encode_snapshot(info: RegionInfo, merge: MergeState, export: Vec<u8>) -> bytes::Bytes {
    /// What precedes the export in `PeerSnapshot`'s encoding: postcard writes a struct as
    /// its fields in order and a byte vector as its length (a varint, as it writes a
    /// `u64`) followed by the bytes.
    #[derive(serde::Serialize)]
    struct Head {
        info: RegionInfo,
        merge: MergeState,
        engine_len: u64,
    }
    let mut out = export;
    let head = Head {
        info,
        merge,
        engine_len: out.len() as u64,
    };
    // Serializing plain fields into a Vec cannot fail.
    let head = postcard::to_allocvec(&head).unwrap_or_default();
    // Shift the export right and put the head in front, within the export's spare
    // capacity when there is enough (the export reserves some), instead of copying the
    // data to a new buffer.
    let len = out.len();
    out.resize(len + head.len(), 0);
    out.copy_within(..len, head.len());
    out[..head.len()].copy_from_slice(&head);
    bytes::Bytes::from(out)
}

/// A split seed's data part on a disk engine: "the data is in the node's engine" (see
/// [`RegionPeer::split_seed`]); never an engine export, which starts with another magic.
const SHARED_ENGINE_SEED: &[u8] = b"SGTXNSHR";

/// The engine's record of a region: its range and its `(info, merge)` encoded.
pub(super) fn region_record(info: &RegionInfo, merge: MergeState) -> crate::RegionRecord {
    crate::RegionRecord {
        start: info.start.clone(),
        end: info.end.clone(),
        // Serializing plain fields into a Vec cannot fail.
        state: postcard::to_allocvec(&(info, merge)).unwrap_or_default(),
    }
}

/// What a data region's Raft snapshot holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct PeerSnapshot {
    info: RegionInfo,
    merge: MergeState,
    engine: Vec<u8>,
}

/// A Raft error as a region error.
pub(crate) fn raft_error(region_id: u64, e: RaftError) -> RegionError {
    match e {
        RaftError::NotLeader { leader, .. } => RegionError::NotLeader { region_id, leader },
        RaftError::Timeout | RaftError::OutcomeUnknown => RegionError::ProposalFailed {
            region_id,
            detail: e.to_string(),
            outcome_unknown: true,
        },
        other => RegionError::ProposalFailed {
            region_id,
            detail: other.to_string(),
            outcome_unknown: false,
        },
    }
}
