//! GC holds (PD's service safe points): a floor under the cluster's GC safe point, in the
//! meta group, that [`TxnClient::safe_point_older_than`] respects. A coordinator with a
//! binlog keeps one ([`GcHoldOptions`]) so that a crash followed by a downtime longer than
//! the GC life time does not cost it the fate of the transactions it left in doubt.
//!
//! Why the coordinator's hold covers them: every transaction it prepares after setting
//! the hold at `now - behind` started at most the life time before (a node refuses older
//! locks, `KeyError::TooOld`) and so at or above the hold, with `behind - life time` as
//! the margin for clock skew; the ones prepared before are still open in the journal, and
//! the hold is never above the oldest of those. So while the hold is set, no collection
//! removes the primary's commit record or a value the recovery reads back.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::backoff::Backoff;
use super::core::ClientCore;
use super::error::TxnError;
use super::txn_client::TxnClient;
use crate::{GcHold, KvRequest, KvResponse};

/// The GC hold a coordinator keeps ([`ClientConfig::gc_hold`](crate::ClientConfig::gc_hold)):
/// set when [`TxnClient::open`] has settled the binlog, then again every `refresh` on the
/// client's heartbeat thread, at `behind` before the client's clock (never above the
/// oldest transaction its journal holds open).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcHoldOptions {
    /// The hold's owner (one hold per owner: give each coordinator its own, say its node
    /// id).
    pub owner: u64,
    /// How far behind the clock the hold is: the nodes' GC life time plus the clock-skew
    /// margin the GC worker uses.
    pub behind: Duration,
    /// How long the hold lasts if the client stops refreshing it (crashed, or gone for
    /// good). A coordinator down longer than this can no longer count on its in-doubt
    /// transactions' records. Default 24 hours (TiCDC's `gc-ttl`).
    pub ttl: Duration,
    /// How often it is set again. Default 30 s.
    pub refresh: Duration,
}

impl GcHoldOptions {
    /// A hold for `owner`, `behind` the clock, with the default TTL and refresh.
    pub fn new(owner: u64, behind: Duration) -> GcHoldOptions {
        GcHoldOptions {
            owner,
            behind,
            ttl: Duration::from_secs(24 * 3600),
            refresh: Duration::from_secs(30),
        }
    }

    /// Sets [`GcHoldOptions::ttl`].
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets [`GcHoldOptions::refresh`].
    #[must_use]
    pub fn with_refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh;
        self
    }
}

/// Where a client's own hold stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HoldState {
    /// Not set by this client yet.
    #[default]
    Unset,
    /// Last set at this instant.
    SetAt(Instant),
    /// Removed at a clean stop ([`TxnClient::release_gc_hold`]): never set again.
    Released,
}

impl TxnClient {
    /// Sets `owner`'s GC hold at `ts` (replacing the one it had), lasting `ttl` on the meta
    /// leader's clock unless set again. `ts` must be at or below what the owner needs kept:
    /// versions already collected above a hold set late do not come back.
    ///
    /// # Errors
    /// [`TxnError::Protocol`] for a `ts` of 0; as [`TxnClient::current_ts`] otherwise.
    pub fn set_gc_hold(&self, owner: u64, ts: u64, ttl: Duration) -> Result<(), TxnError> {
        if ts == 0 {
            return Err(TxnError::Protocol {
                detail: format!("GC hold of owner {owner} at timestamp 0"),
            });
        }
        let mut bo = Backoff::new(&self.core().config);
        self.core()
            .send_gc_hold(owner, ts, crate::ts::duration_ms(ttl), &mut bo)
            .map(|_| ())
    }

    /// Removes `owner`'s GC hold (nothing if it has none).
    ///
    /// # Errors
    /// As [`TxnClient::current_ts`].
    pub fn remove_gc_hold(&self, owner: u64) -> Result<(), TxnError> {
        let mut bo = Backoff::new(&self.core().config);
        self.core().send_gc_hold(owner, 0, 0, &mut bo).map(|_| ())
    }

    /// At a clean stop: removes this client's own hold
    /// ([`ClientConfig::gc_hold`](crate::ClientConfig::gc_hold)) if its journal holds no
    /// open prepare (nothing in doubt, so nothing for the hold to keep), and never sets it
    /// again; with an open prepare the hold stays, for the next start's recovery. Returns
    /// whether it was removed (`false` also without a hold configured).
    ///
    /// Call it once no commit can prepare any more (the binlog shut down,
    /// [`surge_binlog::Binlog::shutdown`]): a prepare made while it runs could be left
    /// without a hold.
    ///
    /// # Errors
    /// As [`TxnClient::remove_gc_hold`]; the hold then stays until its TTL.
    pub fn release_gc_hold(&self) -> Result<bool, TxnError> {
        let core = self.core();
        let Some(opts) = core.config.gc_hold else {
            return Ok(false);
        };
        let _round = core.gc_hold_round.lock();
        if core.oldest_open_prepare()?.is_some() {
            return Ok(false);
        }
        *core.gc_hold_state.lock() = HoldState::Released;
        core.gc_hold_floor.store(0, Ordering::Release);
        // Within half a heartbeat interval: a whole cluster stopping at once must not wait
        // for a meta group that is gone (the hold then lapses after its TTL).
        let mut bo = Backoff::with_budget(&core.config, core.config.heartbeat_interval / 2);
        core.send_gc_hold(opts.owner, 0, 0, &mut bo)?;
        Ok(true)
    }

    /// The GC holds in force, by owner; expired ones are dropped on the way.
    ///
    /// # Errors
    /// As [`TxnClient::current_ts`].
    pub fn gc_holds(&self) -> Result<Vec<GcHold>, TxnError> {
        self.core().gc_holds()
    }
}

impl ClientCore {
    /// Sets (or, with `ts` 0, removes) `owner`'s hold; returns the timestamp the meta group
    /// set, which is `ts` unless that was below the GC safe point (then the safe point).
    fn send_gc_hold(
        &self,
        owner: u64,
        ts: u64,
        ttl_ms: u64,
        bo: &mut Backoff,
    ) -> Result<u64, TxnError> {
        let req = KvRequest::SetGcHold { owner, ts, ttl_ms };
        match self.meta_call(&req, bo)? {
            KvResponse::GcTs { ts } => Ok(ts),
            KvResponse::KeyError(e) => Err(e.into()),
            other => Err(TxnError::unexpected("set_gc_hold", &other)),
        }
    }

    /// The GC hold this client may claim in its requests now (0: none): the one the meta
    /// group set, while it has not gone half its TTL without a refresh.
    pub(crate) fn claimed_gc_hold(&self) -> u64 {
        let ts = self.gc_hold_floor.load(Ordering::Acquire);
        if ts == 0 || crate::ts::wall_clock_ms() >= self.gc_hold_claim_until.load(Ordering::Acquire)
        {
            return 0;
        }
        ts
    }

    pub(crate) fn gc_holds(&self) -> Result<Vec<GcHold>, TxnError> {
        let mut bo = Backoff::new(&self.config);
        match self.meta_call(&KvRequest::GcHolds, &mut bo)? {
            KvResponse::GcHolds { holds } => Ok(holds),
            KvResponse::KeyError(e) => Err(e.into()),
            other => Err(TxnError::unexpected("gc_holds", &other)),
        }
    }

    /// The start_ts of the oldest prepare the journal holds open (`None`: none, or no
    /// binlog).
    ///
    /// # Errors
    /// [`TxnError::Binlog`] when the binlog is configured but did not open: its journal may
    /// hold open prepares nobody can see, so no hold may be set or removed on its account.
    fn oldest_open_prepare(&self) -> Result<Option<u64>, TxnError> {
        Ok(self.binlog.get()?.and_then(|b| b.journal.oldest_open()))
    }

    /// Sets this client's GC hold now, if it keeps one and has not released it; returns
    /// the timestamp set. `bo` bounds the meta round.
    ///
    /// # Errors
    /// As [`TxnClient::set_gc_hold`]; [`TxnError::Binlog`] when the binlog did not open.
    pub(crate) fn publish_gc_hold(&self, bo: &mut Backoff) -> Result<Option<u64>, TxnError> {
        let Some(opts) = self.config.gc_hold else {
            return Ok(None);
        };
        // Held across the round, so that a release cannot slip between the reading of
        // the journal and the write, and no two publications cross.
        let _round = self.gc_hold_round.lock();
        if *self.gc_hold_state.lock() == HoldState::Released {
            return Ok(None);
        }
        let now_ms = crate::ts::wall_clock_ms();
        let by_clock = crate::ts::ts_behind(now_ms, crate::ts::duration_ms(opts.behind));
        let oldest_open = self.oldest_open_prepare()?;
        if oldest_open.is_some_and(|o| o < by_clock) {
            // A prepare open longer than the life time: a stopped binlog whose
            // transaction waits for the next start's recovery, say. The hold stays at it,
            // so the cluster's GC cannot pass it while this client runs.
            tracing::warn!(
                owner = opts.owner,
                start_ts = oldest_open,
                "the GC hold stays at an old open prepare"
            );
        }
        // And at the oldest running transaction: it started at or above the hold in force
        // then (the clock less `behind`, or an older transaction's start), so the hold
        // never rises above a transaction that is still open.
        let ts = [oldest_open, self.oldest_open_txn(now_ms)]
            .into_iter()
            .flatten()
            .fold(by_clock, u64::min)
            .max(1);
        // A TTL shorter than two refreshes would let a live client's hold lapse.
        let ttl = opts.ttl.max(opts.refresh * 2);
        // A higher hold is claimed from now on (claiming more than the meta group holds
        // only refuses more); a lower one only once the meta group has set it.
        self.gc_hold_floor.fetch_max(ts, Ordering::AcqRel);
        let set = self.send_gc_hold(opts.owner, ts, crate::ts::duration_ms(ttl), bo)?;
        *self.gc_hold_state.lock() = HoldState::SetAt(Instant::now());
        // What the meta group set: never below its GC safe point, so a claim never reaches
        // below what a collection may have removed. Claimed for half the TTL: a hold whose
        // refreshes keep failing is not claimed past it.
        self.gc_hold_floor.store(set, Ordering::Release);
        self.gc_hold_claim_until.store(
            crate::ts::wall_clock_ms().saturating_add(crate::ts::duration_ms(ttl / 2)),
            Ordering::Release,
        );
        Ok(Some(set))
    }

    /// On the heartbeat thread: sets the hold again once `refresh` has passed since the
    /// last time (at once if it was never set), within half a heartbeat interval so that
    /// an unreachable meta group does not hold up the lock heartbeats; a failure is tried
    /// again next tick.
    pub(crate) fn gc_hold_tick(&self) {
        let Some(opts) = self.config.gc_hold else {
            return;
        };
        let due = match *self.gc_hold_state.lock() {
            HoldState::Unset => true,
            HoldState::SetAt(at) => at.elapsed() >= opts.refresh,
            HoldState::Released => false,
        };
        if !due {
            return;
        }
        let mut bo = Backoff::with_budget(&self.config, self.config.heartbeat_interval / 2);
        if let Err(e) = self.publish_gc_hold(&mut bo) {
            tracing::warn!(owner = opts.owner, error = %e, "GC hold not refreshed; retrying next tick");
        }
    }
}
