//! Region changes on a replica: split, merge and voluntary leader transfer, with TiKV's
//! in-memory lock protocol (locks proposed before a transfer or merge, moved by range on a
//! split).

use std::time::{Duration, Instant};

use bytes::Bytes;
use surge_lock_table::{KeyRange, LockStatus, RegionLockTable};
use surge_raft_lite::{Node as RaftNode, NodeId, Proposal};

use super::command::{EPOCH_CHANGED, RegionCommand};
use super::counters::Counters;
use super::lock_migration::migrated_lock_puts;
use super::pause_points::region_pause_points;
use super::peer::{MergeState, RegionPeer, raft_error, region_record};
use super::region_error::RegionError;
use super::region_info::{RegionEpoch, RegionInfo};
use crate::{Lock, MvccReader, WriteBatch, encode_key};

/// Raft index and term a split child's group starts at (TiKV's `RAFT_INIT_LOG_INDEX`).
pub(crate) const SPLIT_CHILD_INIT_INDEX: u64 = 5;

fn range_of(start: &[u8], end: &[u8]) -> KeyRange {
    if end.is_empty() {
        KeyRange::from_start(start.to_vec())
    } else {
        KeyRange::new(start.to_vec(), end.to_vec())
    }
}

/// A transfer's or merge's `MigrateLocks` entry, proposed.
#[derive(Debug)]
struct ProposedLocks {
    /// How many locks it carries.
    count: usize,
    /// The entry's proposal; `None` when there was nothing to propose.
    proposal: Option<Proposal>,
}

fn busy(region_id: u64, reason: impl Into<String>) -> RegionError {
    RegionError::ServerIsBusy {
        region_id,
        reason: reason.into(),
    }
}

impl RegionPeer {
    // ---- apply side (every replica, driver thread) ----

    pub(super) fn apply_split(
        &self,
        index: u64,
        split_key: &[u8],
        new_region_id: u64,
        new_version: u64,
    ) {
        let (parent, child) = {
            let mut info = self.info_mut();
            if info.epoch.version >= new_version {
                // Restored from a snapshot taken after this split: nothing left to do.
                return;
            }
            if !info.contains(split_key) || split_key == info.start.as_slice() {
                tracing::error!(
                    region = info.id,
                    index,
                    "split key outside the region; split skipped"
                );
                return;
            }
            let child = RegionInfo {
                id: new_region_id,
                start: split_key.to_vec(),
                end: info.end.clone(),
                epoch: RegionEpoch {
                    version: new_version,
                    conf_ver: info.epoch.conf_ver,
                },
                peers: info.peers.clone(),
            };
            info.end = split_key.to_vec();
            info.epoch.version = new_version;
            (info.clone(), child)
        };
        // A restart replaying the split finds the child hosted: it recovered its own
        // state, and the parent only gives up the range.
        let hosted = self.host.hosts(new_region_id);
        let at = encode_key(split_key);
        let child_engine = if hosted {
            drop(self.engine().split_off(&at));
            None
        } else {
            // A disk engine changes the two regions' records only; a memory engine moves
            // the upper half into a new engine.
            match self.engine().split_region(
                &at,
                &region_record(&parent, MergeState::None),
                index,
                new_region_id,
                &region_record(&child, MergeState::None),
                SPLIT_CHILD_INIT_INDEX,
            ) {
                Ok(e) => {
                    // The split's records durable before the child's seed (which says
                    // "the data is in the engine") reaches the log: a power loss must not
                    // leave a seed whose data range the engine never assigned.
                    if let Err(e) = self.engine().persist() {
                        tracing::error!(region = parent.id, error = %e, "engine persist after a split failed");
                    }
                    Some(e)
                }
                Err(e) => {
                    tracing::error!(region = new_region_id, error = %e, "split child data refused");
                    return;
                }
            }
        };
        if hosted {
            self.record_region(index);
        }
        // The split moves the in-memory locks by range, deleted-marked ones too (their
        // pending deletes carry the old version and are refused at apply).
        let child_locks: Option<RegionLockTable<Lock>> = {
            let mut t = self.table().write();
            if t.status() == LockStatus::NotLeader {
                None
            } else {
                match t.split(
                    new_version,
                    &range_of(&parent.start, &parent.end),
                    &[range_of(&child.start, &child.end)],
                ) {
                    Ok(mut v) => v.pop(),
                    Err(e) => {
                        tracing::error!(region = parent.id, error = %e, "lock table split failed");
                        None
                    }
                }
            }
        };
        let Some(engine) = child_engine else {
            return;
        };
        let child_peer = self.sibling(child, engine);
        if let Some(mut locks) = child_locks {
            let moved = child_peer.table().write().absorb(&mut locks);
            if let Err(e) = moved {
                tracing::error!(region = new_region_id, error = %e, "split child locks refused");
            }
        }
        let seed = child_peer.split_seed();
        self.host.spawn_split_child(child_peer, seed);
    }

    pub(super) fn apply_prepare_merge(&self, index: u64, target: u64, new_version: u64) {
        self.info_mut().epoch.version = new_version;
        *self.merge.lock() = MergeState::Merging { target };
        self.record_region(index);
    }

    /// Applies a transfer's or merge's migrated locks: each becomes a lock-CF record unless
    /// the log applied something newer for its key since the copy was taken (see
    /// `lock_migration`). Refused like a write when the region's version moved.
    pub(super) fn apply_migrated_locks(
        &self,
        index: u64,
        version: u64,
        locks: &[(Vec<u8>, Lock)],
    ) -> Bytes {
        if version != self.info().epoch.version {
            return Bytes::from_static(EPOCH_CHANGED);
        }
        let modifies = {
            let snap = self.engine().snapshot();
            let reader = MvccReader::new(&*snap, None);
            migrated_lock_puts(&reader, self.id(), locks)
        };
        if modifies.len() < locks.len() {
            tracing::info!(
                region = self.id(),
                index,
                skipped = locks.len() - modifies.len(),
                "migrated locks older than their keys' state were skipped"
            );
        }
        let mut batch = WriteBatch {
            modifies,
            applied_index: index,
        };
        match self.write_applied(index, &mut batch) {
            Ok(()) => {
                // The only apply that reads the engine to decide what it writes: a disk
                // engine's log replay is exact only over blind writes, so this entry is a
                // checkpoint (a record change), never replayed over data written after it.
                if self.engine().is_durable() {
                    self.record_region(index);
                }
                Bytes::new()
            }
            Err(answer) => answer,
        }
    }

    pub(super) fn apply_rollback_merge(&self, index: u64, new_version: u64) {
        {
            let mut info = self.info_mut();
            // A rollback names the merge it ends (the version `PrepareMerge` gave): one
            // proposed for an earlier merge must not end a later one.
            if !matches!(*self.merge.lock(), MergeState::Merging { .. })
                || info.epoch.version + 1 != new_version
            {
                tracing::info!(region = info.id, index, "rollback of another merge skipped");
                return;
            }
            info.epoch.version = new_version;
        }
        *self.merge.lock() = MergeState::None;
        self.record_region(index);
        let term = self.leader_term();
        if term != 0 {
            // Back to Normal, writable again at the new version; the locks stay.
            self.table().become_leader(term, new_version);
        }
    }

    /// Absorbs `source` unless the target moved since the command was proposed (see
    /// `RegionCommand::CommitMerge`); returns whether it did.
    pub(super) fn apply_commit_merge(
        &self,
        index: u64,
        source: &RegionInfo,
        data: &[u8],
        target_version: u64,
    ) -> bool {
        {
            let info = self.info();
            if info.epoch.version != target_version
                || !info.borders(source)
                || self.merge_state() != MergeState::None
            {
                tracing::info!(
                    region = info.id,
                    index,
                    source = source.id,
                    "merge skipped: the target changed since it was proposed"
                );
                return false;
            }
        }
        // The source's leader served reads of these keys that this region's `max_ts` never
        // saw: a one-phase commit on them must not choose a commit_ts below those reads (a
        // snapshot that read one side of a transfer at the source and the other here saw
        // the total change), so `max_ts` is synced from a fresh timestamp first. Before the
        // range widens: no request for a source key may pass the range check while this
        // region still counts as synced.
        self.concurrency.absorbed_foreign_reads();
        // The data first, the range after: a read admitted by the widened range must find
        // the source's data (the other order let a read of a source key see nothing).
        //
        // The source's range becomes exactly its leader's export, not the export added to
        // what is there: on a disk engine this node's replica of the source wrote under the
        // same keys, and a replica that lagged (partitioned until the merge) stopped short
        // of the source's last entries. Its leftovers, such as a transaction's lock whose
        // commit it never applied, would otherwise stand beside the commit record the
        // export brings, and a reader resolving that lock found the transaction committed
        // on the very key it was locked on, for good.
        let start = encode_key(&source.start);
        let end = (!source.end.is_empty()).then(|| encode_key(&source.end));
        if let Err(e) = self.engine().ingest(data, &start, end.as_deref()) {
            tracing::error!(region = self.id(), index, error = %e, "merge data refused");
        }
        // The source is marked merged here before this region's version moves: a merge's
        // coordinator that sees the version past the one it prepared against, and then the
        // source not merged, knows this merge did not apply and never will.
        self.host.region_merged(source.id, self.id());
        let version = {
            let mut info = self.info_mut();
            if source.start.as_slice() < info.start.as_slice() {
                info.start = source.start.clone();
            }
            if info.end.is_empty() || source.end.is_empty() {
                info.end = Vec::new();
            } else if source.end > info.end {
                info.end = source.end.clone();
            }
            info.epoch.version = info.epoch.version.max(source.epoch.version) + 1;
            info.epoch.version
        };
        self.record_region(index);
        let term = self.leader_term();
        if term != 0 {
            // The target's own memory locks stay; the source's arrived as lock-CF records.
            self.table().become_leader(term, version);
        }
        true
    }

    /// The source replica on this node after the target absorbed it: it refuses everything.
    pub(crate) fn mark_merged(&self, target: u64) {
        *self.merge.lock() = MergeState::Merged { target };
        self.record_region(self.engine().applied_index());
        self.table().become_follower();
    }

    /// A split child replica that did not become leader here drops the locks the split moved
    /// into it (they are lost, counted as lost on leader loss).
    pub(crate) fn drop_locks_not_leader(&self) {
        if self.leader_term() == 0 {
            let lost = self.table().become_follower();
            Counters::add(
                &self.counters().locks_lost_on_leader_loss,
                lost.locks as u64,
            );
        }
    }

    /// Bytes of data the region holds.
    pub(crate) fn data_size(&self) -> u64 {
        self.engine().size_bytes()
    }

    /// A key splitting the region's data in two halves, if any, moved to keep a table's
    /// rows beside its newest stream records (`split_key.rs`).
    pub(crate) fn middle_key(&self) -> Option<Vec<u8>> {
        let middle = self.engine().middle_key()?;
        Some(super::split_key::split_key(
            self.engine().as_ref(),
            &self.info(),
            middle,
        ))
    }

    // ---- leader side (a request thread) ----

    fn propose_admin(
        &self,
        raft: &RaftNode,
        cmd: &RegionCommand,
        timeout: Duration,
    ) -> Result<(), RegionError> {
        self.propose_admin_for(raft, cmd, timeout).map(|_| ())
    }

    /// As `propose_admin`, with what the apply answered.
    fn propose_admin_for(
        &self,
        raft: &RaftNode,
        cmd: &RegionCommand,
        timeout: Duration,
    ) -> Result<Bytes, RegionError> {
        raft.propose(self.id(), Bytes::from(cmd.encode()))
            .wait_applied(timeout)
            .map_err(|e| raft_error(self.id(), e))
    }

    /// Proposes the locks a transfer or merge took from the table (`taken`) as one
    /// `MigrateLocks` entry, without releasing them from memory.
    ///
    /// The copy is made again under the latches of the taken keys, and proposed before the
    /// latches go: a write of one of those keys then either was proposed before (its entry is
    /// marked deleted or gone, and a transfer skips it) or is proposed after this entry, so a
    /// stale copy never follows a newer write of its key in the log (TiKV does both steps on
    /// the peer's one thread). The table's status already refuses new memory locks, so no
    /// other key can gain one meanwhile. A merge (`deleted_too`) migrates deleted-marked
    /// locks as well; it first waits, under the latches, for the writes still pending, so
    /// that a deleted-marked lock left is one whose write will not apply.
    ///
    /// The latches and (for a merge) the pending writes are waited for until `timeout` at
    /// most: then a retryable error, on which the caller aborts the transfer or merge.
    ///
    /// The entry is stamped with the region's version, and apply refuses it if the version
    /// moved meanwhile (a split applied between the stamp and the entry): its locks are then
    /// nowhere but in memory, and the transfer or merge must not go on. A merge waits here
    /// for the apply and gets that refusal as a retryable error; a transfer only waits for
    /// the entry to be in the log (its `TransferLeader` command follows it there) and checks
    /// the apply with [`RegionPeer::locks_applied`] once that command applied.
    fn propose_locks(
        &self,
        raft: &RaftNode,
        taken: Vec<(Vec<u8>, Lock)>,
        deleted_too: bool,
        timeout: Duration,
    ) -> Result<ProposedLocks, RegionError> {
        let nothing = ProposedLocks {
            count: 0,
            proposal: None,
        };
        if taken.is_empty() {
            return Ok(nothing);
        }
        let keys: Vec<Vec<u8>> = taken.into_iter().map(|(k, _)| k).collect();
        // Every key's slots at once: writes of any of them (their owners re-locking through
        // Raft meanwhile, say) could hold one off for good, so the wait has a deadline and
        // the transfer or merge gives up (its caller aborts it, the table back to Normal).
        let deadline = Instant::now() + timeout;
        let Some(_latches) = self.latch_keys_until(&keys, deadline) else {
            return Err(busy(
                self.id(),
                "the migrated keys' latches were not free in time",
            ));
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if deleted_too && !self.wait_no_pending(left) {
            return Err(busy(self.id(), "pending writes did not apply in time"));
        }
        let locks: Vec<(Vec<u8>, Lock)> = {
            let table = self.table().read();
            keys.into_iter()
                .filter_map(|k| {
                    let lock = table
                        .get(&k)
                        .filter(|e| deleted_too || !e.is_deleted())
                        .map(|e| e.lock().clone())?;
                    Some((k, lock))
                })
                .collect()
        };
        if locks.is_empty() {
            return Ok(nothing);
        }
        let count = locks.len();
        let cmd = RegionCommand::MigrateLocks {
            version: self.info().epoch.version,
            locks,
        };
        self.pause
            .reach(region_pause_points::MIGRATION_BEFORE_PROPOSE);
        let bytes = cmd.encode();
        Counters::add(&self.counters().proposals, 1);
        Counters::add(&self.counters().raft_bytes, bytes.len() as u64);
        let p = raft.propose(self.id(), Bytes::from(bytes));
        // A transfer needs the entry in the log before its TransferLeader command (which
        // applies after it); a merge needs it applied before its data is exported.
        if deleted_too {
            self.locks_applied(&p, timeout)?;
            Counters::add(&self.counters().locks_migrated_on_merge, count as u64);
        } else {
            p.wait_accepted(timeout)
                .map_err(|e| raft_error(self.id(), e))?;
        }
        Ok(ProposedLocks {
            count,
            proposal: Some(p),
        })
    }

    /// Waits until the `MigrateLocks` entry `p` applied here and checks that it was
    /// written: an entry refused at apply (the region's version moved since it was
    /// stamped) or not written (an engine error) is a retryable error, its locks in memory
    /// only.
    fn locks_applied(&self, p: &Proposal, timeout: Duration) -> Result<(), RegionError> {
        let answer = p
            .wait_applied(timeout)
            .map_err(|e| raft_error(self.id(), e))?;
        if answer.is_empty() {
            return Ok(());
        }
        let why = if answer.as_ref() == EPOCH_CHANGED {
            "the region changed while its locks were proposed".to_string()
        } else {
            format!(
                "its locks were not written ({})",
                String::from_utf8_lossy(&answer)
            )
        };
        Err(busy(self.id(), format!("{why}; ask again")))
    }

    /// A voluntary leader transfer to `to` with TiKV's protocol: the table goes
    /// `TransferringLeader` (new locks take the Raft path), its non-deleted locks are proposed
    /// (copied again under their keys' latches, see [`RegionPeer::propose_locks`]), then a
    /// transfer command; the Raft transfer starts once that applied, so the transferee
    /// has every lock. If leadership did not move within `wait` the table returns to
    /// `Normal` (the lease stays suspended for `transfer_timeout` either way: the
    /// transferee may still campaign). Returns how many locks were proposed.
    pub(crate) fn transfer_leader(
        &self,
        raft: &RaftNode,
        to: NodeId,
        timeout: Duration,
        transfer_timeout: Duration,
        wait: Duration,
    ) -> Result<usize, RegionError> {
        let region_id = self.id();
        if self.leader_term() == 0 {
            return Err(RegionError::NotLeader {
                region_id,
                leader: None,
            });
        }
        let locks = self
            .table()
            .start_transfer()
            .map_err(|_| RegionError::NotLeader {
                region_id,
                leader: None,
            })?;
        self.pause.reach(region_pause_points::MIGRATION_LOCKS_TAKEN);
        let result = (|| {
            let proposed = self.propose_locks(raft, locks, false, timeout)?;
            self.propose_admin(raft, &RegionCommand::TransferLeader { to }, timeout)?;
            // The locks' entry precedes the transfer command in the log, so it applied too:
            // refused there, the transferee would not have them, and this node would drop
            // them as migrated.
            if let Some(p) = &proposed.proposal {
                self.locks_applied(p, timeout)?;
                Counters::add(
                    &self.counters().locks_migrated_on_transfer,
                    proposed.count as u64,
                );
            }
            // The transferee campaigns at once, without an election timeout: no lease until
            // the transfer is over or given up.
            self.lease
                .around_transfer(transfer_timeout, || raft.transfer_leader(region_id, to))
                .map_err(|e| raft_error(region_id, e))?;
            let deadline = Instant::now() + wait.min(transfer_timeout);
            while self.leader_term() != 0 {
                if Instant::now() >= deadline {
                    return Err(busy(
                        region_id,
                        format!("leader transfer to node {to} did not happen"),
                    ));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(proposed.count)
        })();
        if result.is_err() {
            // A wait shorter than Raft's own give-up (one election timeout) leaves the Raft
            // transfer pending, and Raft refuses proposals until it ends: cancel it (a
            // transfer to oneself), then make the table writable again (TiKV's reactivate
            // tick). Already over: Raft says so, and nothing changes.
            let _ = raft.transfer_leader(region_id, self.node_id);
            self.table().abort_transfer();
        }
        result
    }

    /// Splits the region at `split_key` into itself and region `new_region_id`.
    pub(crate) fn split(
        &self,
        raft: &RaftNode,
        split_key: &[u8],
        new_region_id: u64,
        timeout: Duration,
    ) -> Result<(RegionInfo, RegionInfo), RegionError> {
        let info = self.info();
        if self.leader_term() == 0 {
            return Err(RegionError::NotLeader {
                region_id: info.id,
                leader: None,
            });
        }
        if !info.contains(split_key) || split_key == info.start.as_slice() {
            return Err(RegionError::KeyNotInRegion {
                key: split_key.to_vec(),
                region_id: info.id,
            });
        }
        let new_version = info.epoch.version + 1;
        self.propose_admin(
            raft,
            &RegionCommand::Split {
                split_key: split_key.to_vec(),
                new_region_id,
                new_version,
            },
            timeout,
        )?;
        let parent = self.info();
        let child = RegionInfo {
            id: new_region_id,
            start: split_key.to_vec(),
            end: info.end.clone(),
            epoch: RegionEpoch {
                version: new_version,
                conf_ver: info.epoch.conf_ver,
            },
            peers: info.peers.clone(),
        };
        Ok((parent, child))
    }

    /// The source side of a merge into `target`: fence new commands until every pending
    /// write applied, propose the in-memory locks (all of them, deleted-marked ones too,
    /// copied again under their keys' latches) into this region's log, then `PrepareMerge`.
    /// Returns the region, its data (locks included as lock-CF records) for the target to
    /// absorb, and how many locks were migrated.
    ///
    /// Refused, with the table back to `Normal`, when the locks take more than
    /// `max_lock_bytes` (they would not fit one Raft entry).
    pub(crate) fn prepare_merge(
        &self,
        raft: &RaftNode,
        target: u64,
        target_version: u64,
        max_lock_bytes: usize,
        timeout: Duration,
    ) -> Result<(RegionInfo, Vec<u8>, usize), RegionError> {
        let region_id = self.id();
        if self.leader_term() == 0 {
            return Err(RegionError::NotLeader {
                region_id,
                leader: None,
            });
        }
        if self.merge_state() != MergeState::None {
            return Err(busy(
                region_id,
                "a merge of this region is already in progress",
            ));
        }
        self.fenced.store(true, std::sync::atomic::Ordering::SeqCst);
        let result = (|| {
            if !self.wait_no_pending(timeout) {
                return Err(busy(region_id, "pending writes did not apply in time"));
            }
            let locks = self
                .table()
                .start_merge(max_lock_bytes)
                .map_err(|e| busy(region_id, format!("merge refused: {e}")))?;
            self.pause.reach(region_pause_points::MIGRATION_LOCKS_TAKEN);
            let proposed = match self.propose_locks(raft, locks, true, timeout) {
                Ok(p) => p,
                Err(e) => {
                    self.table().abort_merge();
                    return Err(e);
                }
            };
            let new_version = self.info().epoch.version + 1;
            if let Err(e) = self.propose_admin(
                raft,
                &RegionCommand::PrepareMergeAt {
                    target,
                    new_version,
                    target_version,
                },
                timeout,
            ) {
                self.table().abort_merge();
                return Err(e);
            }
            Ok((self.info(), self.engine().export(), proposed.count))
        })();
        self.fenced
            .store(false, std::sync::atomic::Ordering::SeqCst);
        result
    }

    /// The region and its data as a merge's `CommitMerge` carries them: what
    /// [`RegionPeer::prepare_merge`] returns, taken again by a node that resumes a merge
    /// nobody drives (the region refuses commands while merging, so its data is the same).
    pub(crate) fn merge_export(&self) -> (RegionInfo, Vec<u8>) {
        (self.info(), self.engine().export())
    }

    /// The target's version the current merge was prepared against, if this replica
    /// applied its `PrepareMergeAt` since it started (see `merge_prepared`).
    pub(crate) fn merge_target_version(&self) -> Option<u64> {
        let version = self.info().epoch.version;
        self.merge_prepared
            .lock()
            .filter(|(prepared, _)| *prepared == version)
            .map(|(_, target_version)| target_version)
    }

    /// The target will never apply the merge that `PrepareMerge` at `prepared_version`
    /// began: the source goes back to normal. Call it only once that is known (this node's
    /// replica of the target moved past the merge's target version without it; TiKV rolls
    /// back on the same evidence, the target's epoch): a rollback of a merge that then
    /// applies loses the source's later writes. Applies to that merge only (a copy proposed
    /// again, or one for an earlier merge, is skipped).
    pub(crate) fn rollback_merge(
        &self,
        raft: &RaftNode,
        prepared_version: u64,
        timeout: Duration,
    ) -> Result<(), RegionError> {
        let new_version = prepared_version + 1;
        self.propose_admin(raft, &RegionCommand::RollbackMerge { new_version }, timeout)
    }

    /// The target side of a merge: absorb `source` and its data, if this region is still at
    /// `target_version`, the version the merge was prepared against (TiKV's `CommitMerge`
    /// carries the target's expected epoch the same way). Asked again after a lost answer,
    /// it answers alike:
    ///
    /// - the region already covers the source: the merge applied; returns the region;
    /// - it is at `target_version` (bordering the source): proposes `CommitMerge` stamped
    ///   with it and returns the region once applied; a copy skipped at apply (the region
    ///   moved meanwhile) is a retryable error;
    /// - it moved on without covering the source: `EpochNotMatch` with the region. Not by
    ///   itself a refusal (the region may have absorbed the source and split since): the
    ///   source's leader decides from its own replica of this region (the service's merge
    ///   driver).
    pub(crate) fn commit_merge(
        &self,
        raft: &RaftNode,
        source: RegionInfo,
        data: Vec<u8>,
        target_version: u64,
        timeout: Duration,
    ) -> Result<RegionInfo, RegionError> {
        let info = self.info();
        if self.leader_term() == 0 {
            return Err(RegionError::NotLeader {
                region_id: info.id,
                leader: None,
            });
        }
        if info.covers(&source) {
            return Ok(info);
        }
        if info.epoch.version != target_version || !info.borders(&source) {
            return Err(RegionError::EpochNotMatch {
                region_id: info.id,
                current: vec![info],
            });
        }
        if self.merge_state() != MergeState::None {
            return Err(busy(info.id, "the target is itself merging"));
        }
        let cmd = RegionCommand::CommitMerge {
            source,
            data,
            target_version,
        };
        let applied = self.propose_admin_for(raft, &cmd, timeout)?;
        if applied.is_empty() {
            Ok(self.info())
        } else {
            Err(busy(
                info.id,
                "the target changed while the merge was proposed; ask again",
            ))
        }
    }
}
