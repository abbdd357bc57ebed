//! [`Proposal`]: a handle to wait on one proposal's progress.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::{EntryId, Error, Result};

#[derive(Debug, Default)]
struct Stage {
    accepted: Option<EntryId>,
    committed: bool,
    applied: Option<Bytes>,
    failed: Option<Error>,
    /// The stages blocked waiters wait for, one bit each (`1 << stage`; 1 accepted,
    /// 2 committed, 3 applied): only a change someone waits for wakes them, so a waiter
    /// for `applied` is not woken (one futex round trip each) at `accepted`. A notify
    /// clears the bit; every woken waiter that must wait on sets its bit again. (A single
    /// "highest stage" value lost a second waiter for an earlier stage: a clone blocked in
    /// `wait_accepted` slept through `accepted` while another waited for `applied`.)
    waiting_for: u8,
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    stage: Mutex<Stage>,
    cv: Condvar,
}

/// A proposal in flight. Wait for the stage you need:
/// [`Proposal::wait_accepted`] (the leader appended it: what pipelined locking answers on),
/// [`Proposal::wait_committed`], or [`Proposal::wait_applied`] (with the state machine's
/// result).
#[derive(Debug, Clone)]
pub struct Proposal {
    pub(crate) shared: Arc<Shared>,
}

impl Proposal {
    pub(crate) fn new() -> Proposal {
        Proposal {
            shared: Arc::new(Shared::default()),
        }
    }

    pub(crate) fn accept(&self, id: EntryId) {
        let mut s = self.shared.stage.lock();
        s.accepted = Some(id);
        if s.waiting_for & (1 << 1) != 0 {
            s.waiting_for &= !(1 << 1);
            self.shared.cv.notify_all();
        }
    }

    pub(crate) fn commit(&self) {
        let mut s = self.shared.stage.lock();
        s.committed = true;
        if s.waiting_for & (1 << 2) != 0 {
            s.waiting_for &= !(1 << 2);
            self.shared.cv.notify_all();
        }
    }

    pub(crate) fn apply(&self, result: Bytes) {
        let mut s = self.shared.stage.lock();
        s.committed = true;
        s.applied = Some(result);
        self.shared.cv.notify_all();
    }

    pub(crate) fn fail(&self, e: Error) {
        let mut s = self.shared.stage.lock();
        if s.applied.is_none() && s.failed.is_none() {
            s.failed = Some(e);
        }
        self.shared.cv.notify_all();
    }

    fn wait_for<T>(
        &self,
        timeout: Duration,
        stage: u8,
        mut ready: impl FnMut(&Stage) -> Option<T>,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        let mut s = self.shared.stage.lock();
        loop {
            if let Some(v) = ready(&s) {
                return Ok(v);
            }
            if let Some(e) = &s.failed {
                return Err(e.duplicate());
            }
            s.waiting_for |= 1 << stage;
            if self.shared.cv.wait_until(&mut s, deadline).timed_out() {
                return ready(&s).ok_or(Error::Timeout);
            }
        }
    }

    /// Waits until the leader appended the entry; returns its position.
    ///
    /// # Errors
    /// [`Error::NotLeader`], [`Error::TransferInProgress`], [`Error::ProposalTooLarge`],
    /// [`Error::UnknownGroup`], [`Error::Stopped`], or [`Error::Timeout`].
    pub fn wait_accepted(&self, timeout: Duration) -> Result<EntryId> {
        self.wait_for(timeout, 1, |s| s.accepted)
    }

    /// Waits until the entry is committed.
    ///
    /// # Errors
    /// As [`Proposal::wait_accepted`], plus [`Error::ProposalDropped`] if another entry was
    /// committed at its index, and [`Error::OutcomeUnknown`] if the node lost leadership
    /// (or installed a snapshot) before it learned the entry's fate.
    pub fn wait_committed(&self, timeout: Duration) -> Result<EntryId> {
        self.wait_for(timeout, 2, |s| if s.committed { s.accepted } else { None })
    }

    /// Waits until this node applied the entry; returns the state machine's result.
    ///
    /// # Errors
    /// As [`Proposal::wait_committed`].
    pub fn wait_applied(&self, timeout: Duration) -> Result<Bytes> {
        self.wait_for(timeout, 3, |s| s.applied.clone())
    }

    /// True once the proposal reached a final state (applied or failed).
    pub fn is_done(&self) -> bool {
        let s = self.shared.stage.lock();
        s.applied.is_some() || s.failed.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (bounded) until blocked waiters registered for all of `bits`.
    fn until_registered(p: &Proposal, bits: u8) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while p.shared.stage.lock().waiting_for & bits != bits {
            assert!(Instant::now() < deadline, "waiters never blocked");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Regression: with one waiter on `applied` and a clone's waiter on `accepted`, the
    /// accepted one must wake at `accept`, not sleep until `applied` or its timeout.
    #[test]
    fn accepted_waiter_wakes_while_another_waits_for_applied() {
        let p = Proposal::new();
        let applied = {
            let p = p.clone();
            std::thread::spawn(move || p.wait_applied(Duration::from_secs(60)))
        };
        until_registered(&p, 1 << 3);
        let accepted = {
            let p = p.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                (p.wait_accepted(Duration::from_secs(60)), t.elapsed())
            })
        };
        until_registered(&p, (1 << 3) | (1 << 1));
        let id = EntryId { index: 5, term: 2 };
        p.accept(id);
        let (r, took) = accepted.join().expect("accepted waiter");
        assert_eq!(r.expect("accepted"), id);
        assert!(took < Duration::from_secs(30), "woke only after {took:?}");
        p.apply(Bytes::from_static(b"ok"));
        assert_eq!(
            applied.join().expect("applied waiter").expect("applied"),
            "ok"
        );
    }

    /// Regression: a timed-out wait for a later stage must not keep a later wait for an
    /// earlier stage from waking.
    #[test]
    fn timed_out_committed_wait_does_not_mute_accepted() {
        let p = Proposal::new();
        assert!(matches!(
            p.wait_committed(Duration::from_millis(1)),
            Err(Error::Timeout)
        ));
        let w = {
            let p = p.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                (p.wait_accepted(Duration::from_secs(60)), t.elapsed())
            })
        };
        until_registered(&p, 1 << 1);
        p.accept(EntryId { index: 1, term: 1 });
        let (r, took) = w.join().expect("waiter");
        assert!(r.is_ok());
        assert!(took < Duration::from_secs(30), "woke only after {took:?}");
    }
}
