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
    /// What a blocked waiter waits for (0 = nobody waits, 1 accepted, 2 committed,
    /// 3 applied): only a change it waits for wakes it, so a waiter for `applied` is not
    /// woken (one futex round trip each) at `accepted`.
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
        if s.waiting_for == 1 {
            self.shared.cv.notify_all();
        }
    }

    pub(crate) fn commit(&self) {
        let mut s = self.shared.stage.lock();
        s.committed = true;
        if s.waiting_for == 2 {
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
            s.waiting_for = s.waiting_for.max(stage);
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
    /// committed at its index.
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
