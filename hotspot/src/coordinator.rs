//! The coordinator: per-key leader/follower grouping over a [`GroupExecutor`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use crate::config::{Settings, check_group_size, check_max_wait};
use crate::group::{GroupReport, MemberResult, run_group};
use crate::key_state::{KeyState, LeaderWait};
use crate::registry::Registry;
use crate::stats::Counters;
use crate::waiter::{BELLS, Waiter, Wake};
use crate::{Config, ConfigError, GroupExecutor, Hints, Stats};

/// A leader starts a timed wait only if at most this many expected followers are missing.
/// Measured on 2 vCPUs: waiting for the rest of a group of 8 doubled the group size and
/// throughput; waiting for hundreds (512 clients) cut throughput by a third, because those
/// followers are still being woken and the wait only idles the disk.
const MAX_AWAITED: usize = 64;

/// A request waiting in a collecting group.
struct Entry<X: GroupExecutor> {
    op: X::Op,
    hints: Hints,
    waiter: Arc<Waiter<MemberResult<X>>>,
    /// Index of the bell the member sleeps on (`KeyState::bells`).
    bell: usize,
}

impl<X: GroupExecutor> std::fmt::Debug for Entry<X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

/// Groups concurrent requests on the same key and runs each group with one durable step.
///
/// For each key the first request becomes the leader of a group; requests arriving while it
/// works join that group, or the next one if it has already started (two slots per key: one
/// collects while the other commits). The leader applies every member in arrival order through
/// the [`GroupExecutor`], makes the group durable once, puts each member's own result in its
/// mailbox and wakes the group with one ring of the bell its members sleep on.
///
/// Unlike AliSQL's group update:
/// - a leader with no other request in flight for its key commits at once, with no timed wait,
///   so one client runs as fast as with the switch off;
/// - a member whose operation fails (a rejected bound check, `target_affect_row` not met) fails
///   alone, and the rest of its group commits;
/// - a leader that had to wait for the previous group's commit does not wait again: that commit
///   was the batching window.
///
/// Invariants: for one key, executor calls never overlap and groups run in the order they were
/// formed; every request gets exactly one result; a request is reported committed only after its
/// group's [`GroupExecutor::commit`] returned `Ok`.
pub struct Coordinator<X: GroupExecutor> {
    exec: X,
    settings: Settings,
    counters: Counters,
    registry: Registry<X::Key, Entry<X>>,
}

impl<X: GroupExecutor> std::fmt::Debug for Coordinator<X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("config", &self.settings.snapshot())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// Drops the request's in-flight count even if something unwinds.
struct InFlight<'a, X: GroupExecutor> {
    registry: &'a Registry<X::Key, Entry<X>>,
    key: &'a X::Key,
    ks: Option<Arc<KeyState<Entry<X>>>>,
}

impl<X: GroupExecutor> Drop for InFlight<'_, X> {
    fn drop(&mut self) {
        if let Some(ks) = self.ks.take() {
            self.registry.release(self.key, ks);
        }
    }
}

impl<X: GroupExecutor> Coordinator<X> {
    /// A coordinator over `executor`.
    ///
    /// # Errors
    /// [`ConfigError`] if a `config` field is out of range.
    pub fn new(executor: X, config: Config) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            exec: executor,
            settings: Settings::new(&config),
            counters: Counters::default(),
            registry: Registry::new(),
        })
    }

    /// Runs `op` on `key` and returns this request's own result once it is durable (or failed).
    ///
    /// With the switch on and `commit_on_success` set (or the automatic mode triggered), the
    /// request joins its key's group; otherwise it runs alone: lock the key, apply, make durable,
    /// unlock.
    ///
    /// # Errors
    /// [`Error`](crate::Error): this member's own failure (`Rejected`, `TargetAffectRow`) or its
    /// group's (`Load`, `Durable`, `ExecutorPanicked`). An error means nothing of this request
    /// was committed.
    pub fn execute(&self, key: &X::Key, op: X::Op, hints: Hints) -> MemberResult<X> {
        let ks = self.registry.acquire(key, &self.counters);
        let guard = InFlight {
            registry: &self.registry,
            key,
            ks: Some(Arc::clone(&ks)),
        };
        let result = self.execute_on(key, &ks, op, hints);
        drop(ks);
        drop(guard);
        result
    }

    fn execute_on(
        &self,
        key: &X::Key,
        ks: &KeyState<Entry<X>>,
        op: X::Op,
        hints: Hints,
    ) -> MemberResult<X> {
        let s = &self.settings;
        let grouped = s.hotspot()
            && (hints.is_commit_on_success() || {
                let t = s.auto_group_threshold();
                t > 0 && ks.in_flight.load(Ordering::Relaxed) >= t
            });
        if !grouped {
            return self.run_alone(key, ks, op, hints);
        }
        let waiter = Arc::new(Waiter::new());
        let (mut leads, bell) = {
            let mut c = ks.collect.lock();
            let bell = c.seq % BELLS;
            c.pending.push(Entry {
                op,
                hints,
                waiter: Arc::clone(&waiter),
                bell,
            });
            let n = c.pending.len();
            if n > 1
                && c.leader_wait.as_ref().is_some_and(|w| n >= w.target)
                && let Some(w) = c.leader_wait.take()
            {
                drop(c);
                w.thread.unpark();
            }
            (n == 1, bell)
        };
        loop {
            if leads && let Some(mine) = self.lead(key, ks, &waiter) {
                return mine;
            }
            match waiter.wait(&ks.bells[bell], self.settings.spin_yields()) {
                Wake::Done(r) => return r,
                Wake::Leader => leads = true,
            }
        }
    }

    /// Leads the collecting group whose first member is `me`. Returns `me`'s result (it is
    /// always in the batch it runs, by the `pending[0]` invariant; `None` only if that were
    /// broken, in which case the caller waits for its result instead of losing it).
    fn lead(
        &self,
        key: &X::Key,
        ks: &KeyState<Entry<X>>,
        me: &Arc<Waiter<MemberResult<X>>>,
    ) -> Option<MemberResult<X>> {
        let t0 = Instant::now();
        let (commit, behind_group) = match ks.commit.try_lock() {
            Some(g) => (g, false),
            None => (ks.commit.lock(), true),
        };
        let max = self.settings.max_group_size();
        if !behind_group {
            self.wait_for_followers(ks, max);
        }
        let mut batch = {
            let mut c = ks.collect.lock();
            c.leader_wait = None;
            // Later arrivals sleep on the next bell, so this group's ring does not wake them.
            c.seq = c.seq.wrapping_add(1);
            if c.pending.len() <= max {
                let spare = std::mem::take(&mut c.spare);
                std::mem::replace(&mut c.pending, spare)
            } else {
                let rest = c.pending.split_off(max);
                let batch = std::mem::replace(&mut c.pending, rest);
                // Keep the invariant: the new first member leads the next group.
                let first = &c.pending[0];
                first.waiter.promote(&ks.bells[first.bell]);
                batch
            }
        };
        let waited = t0.elapsed();
        let mut results = Vec::with_capacity(batch.len());
        let report = run_group(&self.exec, key, &batch, |e| (&e.op, e.hints), &mut results);
        // The next group may start (and flush) while this one's members are being woken.
        drop(commit);
        self.count_group(batch.len(), &report, waited);
        // Deliver every result first, then ring each bell the members sleep on once (one bell
        // unless a `max_group_size` split left members on an earlier group's bell).
        let mut mine = None;
        let mut rung = [false; BELLS];
        for (e, r) in batch.drain(..).zip(results.drain(..)) {
            if Arc::ptr_eq(&e.waiter, me) {
                mine = Some(r);
            } else {
                e.waiter.deliver(r);
                rung[e.bell] = true;
            }
        }
        for (bell, _) in ks.bells.iter().zip(rung).filter(|(_, r)| *r) {
            bell.ring();
        }
        let mut c = ks.collect.lock();
        if c.spare.capacity() == 0 {
            c.spare = batch;
        }
        mine
    }

    /// The timed wait, only for a leader that could commit at once: wait up to `max_wait` while
    /// other requests for the key are in flight but not yet collected. A lone leader returns
    /// immediately (the in-flight count is 1: itself).
    fn wait_for_followers(&self, ks: &KeyState<Entry<X>>, max: usize) {
        let max_wait = self.settings.max_wait();
        if max_wait.is_zero() {
            return;
        }
        let mut deadline: Option<Instant> = None;
        loop {
            let target = ks.in_flight.load(Ordering::Acquire).min(max);
            let now = Instant::now();
            {
                let mut c = ks.collect.lock();
                let dl = deadline.unwrap_or(now + max_wait);
                let missing = target.saturating_sub(c.pending.len());
                // Too many missing (only on the first check): the group is large already or
                // the CPU, not the flush, is the bottleneck; waiting would only idle the disk.
                let hopeless = deadline.is_none() && missing > MAX_AWAITED;
                if missing == 0 || hopeless || now >= dl {
                    c.leader_wait = None;
                    return;
                }
                if deadline.is_none() {
                    deadline = Some(dl);
                    Counters::add(&self.counters.timed_waits, 1);
                }
                c.leader_wait = Some(LeaderWait {
                    thread: thread::current(),
                    target,
                });
            }
            thread::park_timeout(deadline.map_or(Duration::ZERO, |dl| dl - now));
        }
    }

    /// The ordinary path: lock the key, apply, make durable, unlock, alone.
    fn run_alone(
        &self,
        key: &X::Key,
        ks: &KeyState<Entry<X>>,
        op: X::Op,
        hints: Hints,
    ) -> MemberResult<X> {
        let member = [(op, hints)];
        let mut out = Vec::with_capacity(1);
        let report = {
            let _commit = ks.commit.lock();
            run_group(&self.exec, key, &member, |(o, h)| (o, *h), &mut out)
        };
        let c = &self.counters;
        Counters::add(&c.bypass, 1);
        Counters::add(&c.fail, report.failed);
        Counters::add(&c.ignore, report.ignored);
        Counters::add(&c.durable_fail, u64::from(report.group_failed));
        out.pop().expect("run_group returns one result per member")
    }

    fn count_group(&self, size: usize, report: &GroupReport, waited: Duration) {
        let c = &self.counters;
        let size = size as u64;
        Counters::add(&c.leader, 1);
        Counters::add(&c.follower, size.saturating_sub(1));
        Counters::add(&c.fail, report.failed);
        Counters::add(&c.ignore, report.ignored);
        Counters::add(&c.durable_fail, u64::from(report.group_failed));
        Counters::add(
            &c.leader_wait_ns,
            u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX),
        );
        c.max_group.fetch_max(size, Ordering::Relaxed);
    }

    /// The executor.
    pub fn executor(&self) -> &X {
        &self.exec
    }

    /// Turns the `hotspot` switch on or off at run time. Requests already collected in a group
    /// still commit as a group; new ones take the ordinary path while it is off.
    pub fn set_hotspot(&self, on: bool) {
        self.settings.set_hotspot(on);
    }

    /// Whether the `hotspot` switch is on.
    pub fn hotspot(&self) -> bool {
        self.settings.hotspot()
    }

    /// Changes `max_wait` at run time.
    ///
    /// # Errors
    /// [`ConfigError::MaxWait`] above one second.
    pub fn set_max_wait(&self, max_wait: Duration) -> Result<(), ConfigError> {
        check_max_wait(max_wait)?;
        self.settings.set_max_wait(max_wait);
        Ok(())
    }

    /// Changes `max_group_size` at run time.
    ///
    /// # Errors
    /// [`ConfigError::MaxGroupSize`] for zero.
    pub fn set_max_group_size(&self, n: usize) -> Result<(), ConfigError> {
        check_group_size(n)?;
        self.settings.set_max_group_size(n);
        Ok(())
    }

    /// Changes `spin_yields` at run time (0: a waiting member sleeps at once).
    pub fn set_spin_yields(&self, n: u32) {
        self.settings.set_spin_yields(n);
    }

    /// Changes the automatic-mode threshold at run time (0 turns it off).
    pub fn set_auto_group_threshold(&self, n: usize) {
        self.settings.set_auto_group_threshold(n);
    }

    /// The current parameters.
    pub fn config(&self) -> Config {
        self.settings.snapshot()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.counters.snapshot(self.registry.free_count() as u64)
    }

    /// Members collected for `key`'s next group and not yet taken by a leader (what AliSQL's
    /// processlist shows as "hotspot wait for commit"); 0 for an idle key.
    pub fn waiting(&self, key: &X::Key) -> usize {
        self.registry
            .with(key, |ks| ks.collect.lock().pending.len())
            .unwrap_or(0)
    }

    /// Requests in flight for `key`: collected, committing, or being woken; 0 for an idle key.
    pub fn in_flight(&self, key: &X::Key) -> usize {
        self.registry.in_flight(key)
    }
}
