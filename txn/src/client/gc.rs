//! [`TxnClient::gc`]: MVCC garbage collection of the whole cluster below a safe point, as
//! TiDB's GC worker drives it: resolve the locks of transactions started below the safe
//! point, then ask each region's leader to remove what no read at or above it can see.

use serde::{Deserialize, Serialize};

use super::backoff::Backoff;
use super::error::TxnError;
use super::resolver::Resolution;
use super::txn_client::TxnClient;
use crate::{GcStats, KvRequest, KvResponse};

/// Locks listed per `ScanLock` request of the resolve phase.
const LOCKS_PER_SCAN: usize = 256;

/// Keys collected per `Gc` request (one Raft proposal each).
const KEYS_PER_GC: usize = 256;

/// What [`TxnClient::gc`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcReport {
    /// The safe point collected below.
    pub safe_point: u64,
    /// Regions walked (a region that split during the run counts once per part).
    pub regions: u64,
    /// Locks of transactions started below the safe point that were settled (committed or
    /// rolled back from their primary's status).
    pub locks_resolved: u64,
    /// Such locks whose transaction is still alive (left alone: it cannot read or lock
    /// below the safe point any more, and its commit lands above it).
    pub locks_alive: u64,
    /// Keys that had garbage.
    pub keys: u64,
    /// What was removed.
    pub removed: GcStats,
    /// Write records looked at.
    pub records_seen: u64,
}

impl TxnClient {
    /// A safe point `older_than` behind both a fresh timestamp of the oracle and this
    /// machine's clock (the older of the two; logical part 0), and at or below every
    /// [`GcHold`](crate::GcHold) in force: for [`TxnClient::gc`], pass the nodes' GC life
    /// time plus a margin for clock skew between nodes. The clock counts because the
    /// nodes bound reads by their clocks, and the oracle may run a few seconds ahead of
    /// them (after a meta leader change it starts above its durable window).
    ///
    /// # Errors
    /// As [`TxnClient::current_ts`].
    pub fn safe_point_older_than(&self, older_than: std::time::Duration) -> Result<u64, TxnError> {
        let back = crate::ts::duration_ms(older_than);
        // The holds first. A hold set after this reading needs no look: a coordinator's
        // hold is its clock less the life time and margin (or an open prepare of its, set
        // before), at or above the safe point computed here as long as the clocks agree
        // within the margin.
        let held = self.gc_holds()?.iter().map(|h| h.ts).min();
        let now_ms = crate::physical_ms(self.current_ts()?).min(crate::ts::wall_clock_ms());
        let by_time = crate::ts::ts_behind(now_ms, back);
        Ok(held.map_or(by_time, |h| h.min(by_time)))
    }

    /// Collects the cluster's MVCC garbage below `safe_point` (see
    /// [`actions::gc`](crate::actions::gc) for what goes).
    ///
    /// First every lock of a transaction started below `safe_point` is settled from its
    /// primary's status, in every region: a committed primary's record may itself be
    /// collected (a newer version of the primary key below the safe point makes it
    /// garbage), after which nobody could tell that its remaining locks belong to a
    /// committed transaction. Then each region's leader removes the garbage, a bounded
    /// batch of keys per Raft proposal.
    ///
    /// It does not look at the [`GcHold`](crate::GcHold)s: take `safe_point` from
    /// [`TxnClient::safe_point_older_than`], which does.
    ///
    /// Every node must refuse reads and new locks below `safe_point` before it is called:
    /// a node without a [`gc_life_time`](crate::KvNodeConfig::gc_life_time), or one whose
    /// life time does not yet reach back past `safe_point`, answers
    /// [`KeyError::TooOld`](crate::KeyError::TooOld) and nothing is collected there. A caller picks a safe point
    /// some margin older than the nodes' life time (a minute, for clock skew between
    /// nodes).
    ///
    /// # Errors
    /// [`KeyError::TooOld`](crate::KeyError::TooOld) (as `TxnError::Key`) from a node that refuses the safe point;
    /// region and transport errors once the backoff budget of one step (one region's
    /// answer) is spent.
    pub fn gc(&self, safe_point: u64) -> Result<GcReport, TxnError> {
        // Recorded in the meta group first, which may lower it to a hold set since the
        // caller looked (or keep the higher one of an earlier run): from then on no hold is
        // set, and so no request claims one, below it.
        let safe_point = self.raise_gc_safe_point(safe_point)?;
        let _span = tracing::info_span!("gc", safe_point).entered();
        let mut report = GcReport {
            safe_point,
            ..GcReport::default()
        };
        self.resolve_locks_below(safe_point, &mut report)?;
        self.collect_regions(safe_point, &mut report)?;
        tracing::info!(?report, "gc done");
        Ok(report)
    }

    /// Raises the meta group's GC safe point towards `safe_point` (not above a hold in
    /// force there); returns the safe point in force.
    fn raise_gc_safe_point(&self, safe_point: u64) -> Result<u64, TxnError> {
        let core = self.core();
        let mut bo = Backoff::new(&core.config);
        match core.meta_call(&KvRequest::RaiseGcSafePoint { safe_point }, &mut bo)? {
            KvResponse::GcTs { ts } => Ok(ts),
            KvResponse::KeyError(e) => Err(e.into()),
            other => Err(TxnError::unexpected("raise_gc_safe_point", &other)),
        }
    }

    fn resolve_locks_below(&self, safe_point: u64, report: &mut GcReport) -> Result<(), TxnError> {
        let core = self.core();
        let Some(max_ts) = safe_point.checked_sub(1) else {
            return Ok(());
        };
        self.walk_regions(
            |ctx, start| KvRequest::ScanLock {
                ctx,
                max_ts,
                start,
                end: None,
                limit: LOCKS_PER_SCAN,
            },
            |reply| {
                let KvResponse::Locks { locks } = reply else {
                    return Err(TxnError::unexpected("scan_lock", &reply));
                };
                for lock in &locks {
                    let mut bo = Backoff::new(&core.config);
                    match core.resolve_lock(lock, 0, &mut bo)? {
                        Resolution::Resolved => report.locks_resolved += 1,
                        Resolution::Alive | Resolution::Bypass(_) => report.locks_alive += 1,
                    }
                }
                // Possibly more in this region: go on after the last lock listed.
                Ok(locks
                    .last()
                    .filter(|_| locks.len() >= LOCKS_PER_SCAN)
                    .map(|last| {
                        let mut next = last.key.clone();
                        next.push(0);
                        next
                    }))
            },
        )?;
        Ok(())
    }

    fn collect_regions(&self, safe_point: u64, report: &mut GcReport) -> Result<(), TxnError> {
        let regions = self.walk_regions(
            |ctx, start| KvRequest::Gc {
                ctx,
                safe_point,
                start,
                limit_keys: KEYS_PER_GC,
            },
            |reply| match reply {
                KvResponse::Gc {
                    keys,
                    removed,
                    records_seen,
                    resume_key,
                } => {
                    report.keys += keys;
                    report.removed.add(removed);
                    report.records_seen += records_seen;
                    Ok(resume_key)
                }
                other => Err(TxnError::unexpected("gc", &other)),
            },
        )?;
        report.regions += regions;
        Ok(())
    }

    /// Walks every region from the start of the key space: `request` builds the request
    /// for a region's context and a start key in it, `answer` takes its reply and says
    /// where to go on inside the region (`None`: the region is done). Region errors retry
    /// within one backoff budget per step; a key error ends the walk. Returns the regions
    /// finished. An answer came from the region at the epoch the cache knows (a split
    /// since is a region error and a fresh lookup), so its end is the end of what was
    /// walked.
    fn walk_regions(
        &self,
        mut request: impl FnMut(crate::Context, Vec<u8>) -> KvRequest,
        mut answer: impl FnMut(KvResponse) -> Result<Option<Vec<u8>>, TxnError>,
    ) -> Result<u64, TxnError> {
        let core = self.core();
        let mut key = Vec::new();
        let mut regions = 0;
        // One budget per step: region errors retry within it, an answer starts the next.
        let mut bo = Backoff::new(&core.config);
        loop {
            let region = core.locate(&key, &mut bo)?;
            let req = request(core.context(&region), key.clone());
            let resume = match core.send_region(&region, req, &mut bo)? {
                None => continue,
                Some(KvResponse::KeyError(e)) => return Err(e.into()),
                Some(reply) => answer(reply)?,
            };
            bo = Backoff::new(&core.config);
            match resume {
                Some(next) => key = next,
                None => {
                    regions += 1;
                    match region.info.end_key() {
                        Some(end) => key = end.to_vec(),
                        None => return Ok(regions),
                    }
                }
            }
        }
    }
}
