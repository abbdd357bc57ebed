//! Region requests: snapshot reads and the Percolator commands, run on the region's leader.

use std::sync::Arc;
use std::time::{Duration, Instant};

use surge_lock_table::{WaitOutcome, WaitRefused};
use surge_raft_lite::Node as RaftNode;

use super::node::{DETECTOR_EDGE_TTL, KvNode};
use super::request::{KvRequest, LockKey};
use super::response::{KeyError, KvResponse};
use crate::region::{
    CmdError, Context, OnePc, RegionError, RegionPeer, raft_error, region_pause_points,
};
use crate::{CommitKind, MvccError, PessimisticLockRequest, TxnProps};

/// How far above the client's hint a one-phase commit carrying a stream record may go
/// (physical milliseconds) before the region prewrites two-phase instead (see
/// `OnePc::ceiling`).
pub(crate) const ONE_PC_MAX_DRIFT_MS: u64 = 1000;

/// Keys of one `ResolveLock` proposal: each becomes a commit record (its short value moved
/// in) or a rollback record, so a batch stays within a few MiB.
pub(crate) const RESOLVE_BATCH_KEYS: usize = 4096;

/// The longest one wait of a lock request lasts before the request announces its wait-for
/// edge to the cluster's detector again: half the edge's lifetime.
const WAIT_SLICE: Duration = Duration::from_millis(1500);
const _: () = assert!(WAIT_SLICE.as_millis() * 2 == DETECTOR_EDGE_TTL.as_millis());

/// About how many write records one `Gc` request looks at (a region of old, clean keys is
/// walked in requests of this size, each a bounded read on the leader).
const GC_SCAN_RECORDS: u64 = 16 * 1024;

/// At most this many records are removed by one `Gc` request (one Raft proposal, each
/// record a delete of its encoded key, plus its long value's key when it has one; the
/// entry's size was not measured): a hot key's thousands of versions go in several.
const GC_RECORDS_PER_PROPOSAL: u64 = 4096;

/// What a handler fails with.
enum Failure {
    Region(RegionError),
    Key(KeyError),
}

impl From<CmdError> for Failure {
    fn from(e: CmdError) -> Self {
        match e {
            CmdError::Region(r) => Failure::Region(r),
            CmdError::Mvcc(m) => Failure::Key(KeyError::Mvcc(m)),
        }
    }
}

impl From<RegionError> for Failure {
    fn from(e: RegionError) -> Self {
        Failure::Region(e)
    }
}

type Handled = Result<KvResponse, Failure>;

impl KvNode {
    pub(super) fn handle_region(&self, req: KvRequest) -> KvResponse {
        let Some(ctx) = req.context().copied() else {
            return KvResponse::RegionError(RegionError::ServerIsBusy {
                region_id: 0,
                reason: format!("{} is not a region request", req.name()),
            });
        };
        if let KvRequest::AcquirePessimisticLock {
            keys,
            primary,
            start_ts,
            lock_ttl,
            for_update_ts,
            wait_timeout_ms,
            need_value,
            min_commit_ts,
            ..
        } = req
        {
            // Not under the raft guard: a lock wait may last a second, and stopping the
            // node must not wait for it.
            let result = self
                .check_age(start_ts, &ctx)
                .and_then(|()| self.peer(ctx.region_id).map_err(Failure::from))
                .and_then(|peer| {
                    self.acquire_pessimistic_lock(
                        &peer,
                        ctx,
                        &keys,
                        &primary,
                        start_ts,
                        lock_ttl,
                        for_update_ts,
                        wait_timeout_ms,
                        need_value,
                        min_commit_ts,
                    )
                });
            return self.answer(result);
        }
        let raft = self.raft.read_recursive();
        let Some(raft) = raft.as_ref() else {
            return KvResponse::RegionError(RegionError::NotLeader {
                region_id: ctx.region_id,
                leader: None,
            });
        };
        let result = self
            .peer(ctx.region_id)
            .map_err(Failure::from)
            .and_then(|peer| self.dispatch(raft, &peer, ctx, req));
        self.answer(result)
    }

    /// The oldest timestamp this node serves reads at and takes new locks for (0: no bound,
    /// see [`KvNodeConfig::gc_life_time`](crate::KvNodeConfig::gc_life_time)).
    pub(super) fn oldest_served(&self) -> u64 {
        self.config.gc_life_time.map_or(0, |life| {
            crate::ts::ts_behind(crate::ts::wall_clock_ms(), crate::ts::duration_ms(life))
        })
    }

    /// Refuses `ts` when it is older than the GC life time allows, unless the request's
    /// sender holds the GC at or below it ([`crate::Context::gc_hold_ts`]): a read there,
    /// or a lock of a transaction started there, could meet versions garbage collection
    /// removed (or a rollback record it removed, which guarded against that very lock).
    ///
    /// Why a hold makes an older `ts` safe: a collection's safe point is at or below every
    /// hold in force ([`crate::TxnClient::safe_point_older_than`]), and a sender claims only
    /// a hold the meta group holds, at or below the start of each transaction it has open;
    /// so nothing at or above the hold was collected, nor will be while it lasts.
    fn check_age(&self, ts: u64, ctx: &Context) -> Result<(), Failure> {
        let by_life = self.oldest_served();
        let oldest = match ctx.gc_hold_ts {
            0 => by_life,
            // Never below what this node already collected: a hold removed by an operator
            // and passed by a collection may still be claimed until its owner sets it
            // again (the meta group then raises it to the safe point).
            held => by_life.min(held).max(
                self.gc_safe_point
                    .load(std::sync::atomic::Ordering::Acquire),
            ),
        };
        if ts < oldest {
            return Err(Failure::Key(KeyError::TooOld { ts, oldest }));
        }
        Ok(())
    }

    /// [`KvNode::check_age`] for a point read of `keys`, except that a read of the replica
    /// stream's reserved keys only is served at any age: each of
    /// those keys is written once and never overwritten, so garbage collection never
    /// removes what such a read sees (a stream follower far behind reads payloads at
    /// their records' commit_ts). The keys are only looked at for a read the age refuses.
    fn check_read_age(&self, ts: u64, ctx: &Context, keys: &[&[u8]]) -> Result<(), Failure> {
        match self.check_age(ts, ctx) {
            Err(_)
                if !keys.is_empty() && keys.iter().all(|k| crate::stream::is_reserved_key(k)) =>
            {
                Ok(())
            }
            checked => checked,
        }
    }

    fn answer(&self, result: Handled) -> KvResponse {
        match result {
            Ok(r) => r,
            Err(Failure::Region(e)) => KvResponse::RegionError(self.with_hint(e)),
            Err(Failure::Key(e)) => KvResponse::KeyError(e),
        }
    }

    /// Confirms leadership with a quorum (ReadIndex) so a deposed leader never serves a
    /// stale snapshot, unless the leader's lease from an earlier round still holds. One
    /// caller in the lease's second half runs a round although it still holds (and fails
    /// with it, retryably), so a busy leader's lease never runs out.
    fn read_ready(
        &self,
        raft: &RaftNode,
        peer: &RegionPeer,
        ctx: &Context,
        keys: &[&[u8]],
    ) -> Result<(), Failure> {
        peer.check(ctx, keys)?;
        peer.lease.confirm(|| {
            raft.read_index(ctx.region_id, self.config.proposal_timeout)
                .map(drop)
                .map_err(|e| raft_error(ctx.region_id, e).into())
        })
    }

    /// The end of a range read (a request's `end` clamped to the region's), taken from the
    /// range of the epoch the request was checked against. A split since (while the read
    /// waited for its read index, say) is refused, as is any other change of the epoch's
    /// version: clamped to the new, shorter range, the answer would cover only a part of
    /// what the client asked, and the client, which resumes at the end of the region it
    /// knows, would skip the rest (a stream reader lost records that way). The read itself
    /// then checks that the range still holds once its snapshot is taken.
    fn range_read_end(
        &self,
        peer: &RegionPeer,
        ctx: &Context,
        end: Option<Vec<u8>>,
    ) -> Result<Option<Vec<u8>>, Failure> {
        self.pause_points()
            .reach(region_pause_points::RANGE_READ_AFTER_READY);
        let info = peer.info();
        if info.epoch.version != ctx.epoch.version {
            return Err(RegionError::EpochNotMatch {
                region_id: info.id,
                current: vec![info],
            }
            .into());
        }
        Ok(clamp_end(end, info.end_key()))
    }

    fn point_get(
        &self,
        raft: &RaftNode,
        peer: &RegionPeer,
        ctx: &Context,
        key: &[u8],
        version: u64,
        bypass_locks: &[u64],
    ) -> Handled {
        self.read_ready(raft, peer, ctx, &[key])?;
        let value = peer.read(version, key, None, true, |r| {
            crate::point_get(r, key, version, bypass_locks)
        })?;
        Ok(KvResponse::Get { value })
    }

    fn timeout(&self) -> Duration {
        self.config.proposal_timeout
    }

    fn dispatch(
        &self,
        raft: &RaftNode,
        peer: &Arc<RegionPeer>,
        ctx: Context,
        req: KvRequest,
    ) -> Handled {
        let t = self.timeout();
        match req {
            KvRequest::Get {
                key,
                version,
                bypass_locks,
                ..
            } => {
                self.check_read_age(version, &ctx, &[&key])?;
                self.point_get(raft, peer, &ctx, &key, version, &bypass_locks)
            }
            // No age check: the caller's GC hold vouches for the versions (see the request).
            KvRequest::GetHeld {
                key,
                version,
                bypass_locks,
                ..
            } => self.point_get(raft, peer, &ctx, &key, version, &bypass_locks),
            KvRequest::BatchGet {
                keys,
                version,
                bypass_locks,
                ..
            } => {
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                self.check_read_age(version, &ctx, &refs)?;
                self.read_ready(raft, peer, &ctx, &refs)?;
                // One snapshot for every key (a point read each for the one-phase guard).
                let pairs = peer.read_points(version, &keys, |r| {
                    crate::batch_get(r, &keys, version, &bypass_locks)
                })?;
                let pairs = pairs
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k, v)))
                    .collect();
                Ok(KvResponse::Pairs { pairs })
            }
            KvRequest::Scan {
                start,
                end,
                limit,
                version,
                bypass_locks,
                ..
            } => {
                self.check_age(version, &ctx)?;
                self.read_ready(raft, peer, &ctx, &[&start])?;
                let end = self.range_read_end(peer, &ctx, end)?;
                let pairs = peer.read(version, &start, end.as_deref(), false, |r| {
                    crate::scan(r, &start, end.as_deref(), limit, version, &bypass_locks)
                })?;
                Ok(KvResponse::Pairs { pairs })
            }
            KvRequest::Prewrite {
                mutations, props, ..
            } => {
                self.check_age(props.start_ts, &ctx)?;
                let keys: Vec<Vec<u8>> = mutations.iter().map(|(m, _)| m.key().to_vec()).collect();
                let one_pc = match props.commit_kind {
                    CommitKind::OnePc { commit_ts } => {
                        if let Some(generation) = peer.concurrency.sync_needed() {
                            let ts = self.fresh_ts().ok_or(RegionError::ServerIsBusy {
                                region_id: ctx.region_id,
                                reason: "cannot reach the timestamp oracle".into(),
                            })?;
                            peer.concurrency.sync(ts, generation);
                        }
                        let floor = commit_ts
                            .max(props.start_ts + 1)
                            .max(props.for_update_ts + 1)
                            .max(props.min_commit_ts);
                        Some(OnePc {
                            floor,
                            // Only a commit carrying a stream record needs the ceiling
                            // (its record key holds the hint as its record_ts).
                            ceiling: if mutations
                                .iter()
                                .any(|(m, _)| crate::stream::is_reserved_key(m.key()))
                            {
                                crate::compose_ts(
                                    crate::physical_ms(commit_ts) + ONE_PC_MAX_DRIFT_MS,
                                    0,
                                )
                            } else {
                                u64::MAX
                            },
                            primary: props.primary.clone(),
                            ttl: props.lock_ttl,
                        })
                    }
                    CommitKind::TwoPc => None,
                };
                let cts = peer.write(
                    raft,
                    &ctx,
                    &keys,
                    props.start_ts,
                    None,
                    one_pc,
                    t,
                    |r, txn, cts| {
                        let props = match cts {
                            Some(c) => TxnProps {
                                commit_kind: CommitKind::OnePc { commit_ts: c },
                                ..props.clone()
                            },
                            // Two-phase: asked so, or the region declined one phase.
                            None => TxnProps {
                                commit_kind: CommitKind::TwoPc,
                                ..props.clone()
                            },
                        };
                        for (m, action) in &mutations {
                            // A check that the key does not exist is a read at start_ts
                            // that leaves no lock, under the key's latches: a one-phase
                            // commit chosen after it lands above it (TiKV's update_max_ts).
                            if m.should_not_exist() {
                                peer.concurrency.update_max_ts(props.start_ts);
                            }
                            crate::prewrite(txn, r, &props, m, *action, None)?;
                        }
                        Ok(cts.unwrap_or(0))
                    },
                )?;
                if cts != 0 {
                    crate::region::Counters::add(&self.counters.one_pc, 1);
                }
                Ok(KvResponse::Prewrite {
                    one_pc_commit_ts: cts,
                })
            }
            KvRequest::Commit {
                keys,
                start_ts,
                commit_ts,
                ..
            } => self.write_each(raft, peer, &ctx, &keys, start_ts, |txn, r, k| {
                crate::commit(txn, r, k, commit_ts)
            }),
            KvRequest::BatchRollback { keys, start_ts, .. } => {
                self.write_each(raft, peer, &ctx, &keys, start_ts, |txn, r, k| {
                    crate::rollback(txn, r, k, false)
                })
            }
            KvRequest::PessimisticRollback {
                keys,
                start_ts,
                for_update_ts,
                ..
            } => self.write_each(raft, peer, &ctx, &keys, start_ts, |txn, r, k| {
                crate::pessimistic_rollback(txn, r, k, for_update_ts)
            }),
            KvRequest::CheckTxnStatus {
                primary_key,
                lock_ts,
                caller_start_ts,
                current_ts,
                rollback_if_not_exist,
                resolving_pessimistic_lock,
                ..
            } => {
                let keys = vec![primary_key.clone()];
                let status =
                    peer.write(raft, &ctx, &keys, lock_ts, None, None, t, |r, txn, _| {
                        crate::check_txn_status(
                            txn,
                            r,
                            &primary_key,
                            caller_start_ts,
                            current_ts,
                            rollback_if_not_exist,
                            resolving_pessimistic_lock,
                        )
                    })?;
                Ok(KvResponse::TxnStatus { status })
            }
            KvRequest::ResolveLock {
                start_ts,
                commit_ts,
                keys,
                ..
            } => {
                // In proposals of at most RESOLVE_BATCH_KEYS keys (TiKV's resolve-lock
                // command also goes batch by batch): a large transaction's region holds
                // hundreds of thousands of its locks, and one proposal of them all passed
                // the Raft entry limit.
                let resolve = |batch: &[Vec<u8>]| {
                    self.write_each(raft, peer, &ctx, batch, start_ts, |txn, r, k| {
                        crate::resolve_lock(txn, r, k, commit_ts)
                    })
                };
                if !keys.is_empty() {
                    for batch in keys.chunks(RESOLVE_BATCH_KEYS) {
                        resolve(batch)?;
                    }
                    return Ok(KvResponse::Done);
                }
                // Every lock of the transaction in the region, a batch at a time, each
                // scan starting after the last batch (whose locks the batch removed).
                let info = peer.info();
                peer.check(&ctx, &[])?;
                let mut from = info.start.clone();
                loop {
                    let batch: Vec<Vec<u8>> = peer
                        .read_locks(|r| {
                            r.scan_locks(&from, info.end_key(), RESOLVE_BATCH_KEYS, |l| {
                                l.start_ts == start_ts
                            })
                        })?
                        .into_iter()
                        .map(|(k, _)| k)
                        .collect();
                    let Some(last) = batch.last() else {
                        return Ok(KvResponse::Done);
                    };
                    from = [last.as_slice(), &[0]].concat();
                    resolve(&batch)?;
                    if batch.len() < RESOLVE_BATCH_KEYS {
                        return Ok(KvResponse::Done);
                    }
                }
            }
            KvRequest::TxnHeartBeat {
                primary_key,
                start_ts,
                advise_ttl,
                ..
            } => {
                let keys = vec![primary_key.clone()];
                let ttl = peer.write(raft, &ctx, &keys, start_ts, None, None, t, |r, txn, _| {
                    crate::txn_heartbeat(txn, r, &primary_key, advise_ttl)
                })?;
                Ok(KvResponse::Ttl { ttl })
            }
            KvRequest::ScanLock {
                max_ts,
                start,
                end,
                limit,
                ..
            } => {
                self.read_ready(raft, peer, &ctx, &[&start])?;
                let end = self.range_read_end(peer, &ctx, end)?;
                // The stream watermark's scan (of the reserved range, at its T0) is a read
                // for one-phase commits; other lock scans (resolvers, tests, "every lock"
                // up to u64::MAX) are not.
                let read_at = crate::stream::is_reserved_key(&start).then_some(max_ts);
                let locks = peer.read_locks_in(read_at, &start, end.as_deref(), |r| {
                    crate::scan_lock(r, max_ts, &start, end.as_deref(), limit)
                })?;
                Ok(KvResponse::Locks { locks })
            }
            KvRequest::ScanWrites {
                start,
                end,
                after_commit_ts,
                upto_commit_ts,
                limit,
                limit_bytes,
                ..
            } => {
                self.read_ready(raft, peer, &ctx, &[&start])?;
                let end = self.range_read_end(peer, &ctx, end)?;
                // A read at `upto_commit_ts`: a one-phase commit in flight in the range that
                // may land at or below it makes the read wait or fail, as for a scan.
                let writes = peer.read(upto_commit_ts, &start, end.as_deref(), false, |r| {
                    crate::scan_writes(
                        r,
                        &start,
                        end.as_deref(),
                        after_commit_ts,
                        upto_commit_ts,
                        limit,
                        limit_bytes,
                    )
                })?;
                Ok(KvResponse::Writes { writes })
            }
            KvRequest::Gc {
                safe_point,
                start,
                limit_keys,
                ..
            } => self.gc(raft, peer, &ctx, safe_point, start, limit_keys),
            other => Ok(KvResponse::RegionError(RegionError::ServerIsBusy {
                region_id: ctx.region_id,
                reason: format!("{} is not a region request", other.name()),
            })),
        }
    }

    /// One step of MVCC garbage collection of `peer`'s region below `safe_point` from
    /// `start`: a bounded scan for keys with garbage on a snapshot, then [`crate::gc`] of
    /// those keys under their latches in one Raft proposal (so every replica removes the
    /// same records).
    fn gc(
        &self,
        raft: &RaftNode,
        peer: &RegionPeer,
        ctx: &Context,
        safe_point: u64,
        start: Vec<u8>,
        limit_keys: usize,
    ) -> Handled {
        // Nothing is deleted below a timestamp this node would still serve.
        let oldest = self.oldest_served();
        if oldest == 0 || safe_point >= oldest {
            return Err(Failure::Key(KeyError::TooOld {
                ts: safe_point,
                oldest,
            }));
        }
        // Before anything goes: a read checked after this cannot claim a hold below it.
        self.gc_safe_point
            .fetch_max(safe_point, std::sync::atomic::Ordering::AcqRel);
        let info = peer.info();
        let start = start.max(info.start.clone());
        self.read_ready(raft, peer, ctx, &[&start])?;
        // A plain snapshot read (checked to still hold the range), not under the lock
        // table's guard: the scan may be long, and lock writes must not wait for it.
        let found = peer.read(safe_point, &start, info.end_key(), false, |r| {
            crate::gc_scan(
                r,
                &start,
                info.end_key(),
                safe_point,
                limit_keys,
                GC_SCAN_RECORDS,
            )
        })?;
        if found.keys.is_empty() {
            return Ok(KvResponse::Gc {
                keys: 0,
                removed: crate::GcStats::default(),
                records_seen: found.records_seen,
                resume_key: found.resume_key,
            });
        }
        let t = self.timeout();
        let (removed, done, cut_at) = peer.write(
            raft,
            ctx,
            &found.keys,
            safe_point,
            None,
            None,
            t,
            |r, txn, _| {
                let mut total = crate::GcStats::default();
                for (i, key) in found.keys.iter().enumerate() {
                    let left = GC_RECORDS_PER_PROPOSAL - total.records;
                    total.add(crate::gc(txn, r, key, safe_point, left)?);
                    if total.records >= GC_RECORDS_PER_PROPOSAL {
                        // This key may have more: the next request starts at it.
                        return Ok((total, i as u64 + 1, Some(key.clone())));
                    }
                }
                Ok((total, found.keys.len() as u64, None))
            },
        )?;
        Ok(KvResponse::Gc {
            keys: done,
            removed,
            records_seen: found.records_seen,
            resume_key: cut_at.or(found.resume_key),
        })
    }

    /// Runs `action` on every key of `keys` in one write (under their latches, one Raft
    /// proposal) and answers `Done`.
    fn write_each(
        &self,
        raft: &RaftNode,
        peer: &RegionPeer,
        ctx: &Context,
        keys: &[Vec<u8>],
        start_ts: u64,
        action: impl Fn(&mut crate::MvccTxn, &crate::MvccReader<'_>, &[u8]) -> Result<(), MvccError>,
    ) -> Handled {
        peer.write(
            raft,
            ctx,
            keys,
            start_ts,
            None,
            None,
            self.timeout(),
            |r, txn, _| keys.iter().try_for_each(|k| action(txn, r, k)),
        )?;
        Ok(KvResponse::Done)
    }

    /// Locks `keys`, waiting (up to `wait_timeout_ms`) for conflicting locks to go: the
    /// cluster's detector is asked before every wait, and a wait follows lock-table's
    /// enqueue / re-check / wait protocol so no release is missed. Once the node is stopping
    /// ([`KvNode::stop_lock_waits`]) a request that waited, or would have to, is answered
    /// [`RegionError::NodeStopping`] and never retries the lock.
    #[allow(clippy::too_many_arguments)] // the request's fields
    fn acquire_pessimistic_lock(
        &self,
        peer: &Arc<RegionPeer>,
        ctx: Context,
        keys: &[LockKey],
        primary: &[u8],
        start_ts: u64,
        lock_ttl: u64,
        for_update_ts: u64,
        wait_timeout_ms: Option<u64>,
        need_value: bool,
        min_commit_ts: u64,
    ) -> Handled {
        let key_list: Vec<Vec<u8>> = keys.iter().map(|k| k.key.clone()).collect();
        let deadline = wait_timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
        // The lock (key, holder) whose wait last ended by running out its slice: waiting
        // again for the same lock continues that wait (it is not counted again).
        let mut continuing: Option<(Vec<u8>, u64)> = None;
        loop {
            let mode = self.lock_mode();
            let guard = self.raft.read_recursive();
            let Some(raft) = guard.as_ref() else {
                return Err(Failure::Region(RegionError::NotLeader {
                    region_id: ctx.region_id,
                    leader: None,
                }));
            };
            let r = peer.write(
                raft,
                &ctx,
                &key_list,
                start_ts,
                Some(mode),
                None,
                self.timeout(),
                |r, txn, _| {
                    keys.iter()
                        .map(|k| {
                            let req = PessimisticLockRequest {
                                key: &k.key,
                                primary,
                                should_not_exist: k.should_not_exist,
                                lock_ttl,
                                for_update_ts,
                                need_value,
                                need_check_existence: false,
                                min_commit_ts,
                            };
                            // A read at for_update_ts, under the key's latches: a one-phase
                            // commit chosen after it lands above it (TiKV's update_max_ts).
                            if let Some(ts) = req.read_ts() {
                                peer.concurrency.update_max_ts(ts);
                            }
                            let locked = crate::acquire_pessimistic_lock(txn, r, &req);
                            if locked.is_ok() {
                                self.pause_points()
                                    .reach(region_pause_points::LOCK_AFTER_READ);
                            }
                            locked
                        })
                        .collect::<Result<Vec<_>, MvccError>>()
                },
            );
            drop(guard);
            let info = match r {
                Ok(results) => return Ok(KvResponse::PessimisticLock { results }),
                Err(CmdError::Mvcc(MvccError::KeyIsLocked(info))) if deadline.is_some() => info,
                Err(e) => return Err(e.into()),
            };
            let now = Instant::now();
            let deadline = deadline.unwrap_or(now);
            if now >= deadline {
                crate::region::Counters::add(&self.counters.lock_wait_timeouts, 1);
                return Err(Failure::Key(KeyError::LockWaitTimeout {
                    key: info.key.clone(),
                    lock_ts: info.lock_ts,
                }));
            }
            let same = continuing
                .as_ref()
                .is_some_and(|(key, ts)| *key == info.key && *ts == info.lock_ts);
            let ran_out = self.wait_for_lock(
                peer,
                start_ts,
                &info.key,
                info.lock_ts,
                deadline - now,
                !same,
            )?;
            continuing = ran_out.then(|| (info.key.clone(), info.lock_ts));
        }
    }

    /// One wait for `lock_ts`'s lock on `key`, of at most `timeout` and at most
    /// [`WAIT_SLICE`]; returns when it is worth retrying, and whether the wait ran out its
    /// time (rather than being woken or finding the lock gone). `count`: a new wait, for
    /// the `lock_waits` counter (not the next slice of a wait for the same lock).
    ///
    /// The cluster's detector forgets an edge [`DETECTOR_EDGE_TTL`] after it was last
    /// announced, and a request may wait far longer (its wait is the client's setting): a
    /// wait is therefore cut in slices of half that TTL, and the caller's retry announces
    /// the edge again before the next slice, so a cycle closed late in a long wait is still
    /// found.
    ///
    /// # Errors
    /// A deadlock; [`RegionError::NodeStopping`] when lock waiting is closed before, during
    /// or right after the wait (checked last thing, so a wait that a release ended just
    /// before the close does not go on to take the lock either).
    fn wait_for_lock(
        &self,
        peer: &RegionPeer,
        start_ts: u64,
        key: &[u8],
        lock_ts: u64,
        timeout: Duration,
        count: bool,
    ) -> Result<bool, Failure> {
        let deadlock = |chain| {
            crate::region::Counters::add(&self.counters.deadlocks, 1);
            Failure::Key(KeyError::Deadlock {
                txn: start_ts,
                wait_for_txn: lock_ts,
                key: key.to_vec(),
                chain,
            })
        };
        let stopping = || {
            Failure::Region(RegionError::NodeStopping {
                region_id: peer.id(),
                node: self.id(),
            })
        };
        if self.waiters.is_closed() {
            return Err(stopping());
        }
        // Without a reachable detector the wait still ends by its timeout.
        if let Ok(KvResponse::Detect {
            deadlock: Some(chain),
        }) = self.call_meta(KvRequest::DetectDeadlock {
            txn: start_ts,
            wait_for_txn: lock_ts,
            key: key.to_vec(),
        }) {
            return Err(deadlock(chain));
        }
        let clean_up = || {
            let _ = self.call_meta(KvRequest::CleanUpWaitFor {
                txn: start_ts,
                wait_for_txn: lock_ts,
                key: key.to_vec(),
            });
        };
        let handle = match self.waiters.enqueue(key, start_ts, lock_ts) {
            Ok(h) => h,
            Err(WaitRefused::Deadlock(d)) => {
                clean_up();
                return Err(deadlock(
                    d.wait_chain
                        .into_iter()
                        .map(|e| super::response::WaitForEdge {
                            txn: e.txn,
                            wait_for_txn: e.wait_for_txn,
                            key: e.key,
                        })
                        .collect(),
                ));
            }
            // Closed (the only other refusal): the node is stopping.
            Err(_) => {
                clean_up();
                return Err(stopping());
            }
        };
        if count {
            crate::region::Counters::add(&self.counters.lock_waits, 1);
        }
        if !peer.is_locked_by(key, lock_ts) || peer.leader_term() == 0 || self.is_stopped() {
            drop(handle);
            clean_up();
            if self.waiters.is_closed() {
                return Err(stopping());
            }
            return Ok(false);
        }
        // Woken or timed out, the caller retries: a timeout shows as the deadline passed.
        // Ended by the close (`WaitOutcome::Closed`), it is refused below.
        let outcome = handle.wait(Some(timeout.min(WAIT_SLICE)));
        clean_up();
        if self.waiters.is_closed() {
            return Err(stopping());
        }
        Ok(matches!(outcome, WaitOutcome::TimedOut))
    }
}

/// The smaller of a request's end key and the region's.
fn clamp_end(end: Option<Vec<u8>>, region_end: Option<&[u8]>) -> Option<Vec<u8>> {
    match (end, region_end) {
        (Some(e), Some(r)) => Some(if e.as_slice() < r { e } else { r.to_vec() }),
        (Some(e), None) => Some(e),
        (None, r) => r.map(<[u8]>::to_vec),
    }
}
