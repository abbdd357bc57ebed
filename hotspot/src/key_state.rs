//! Per-key group object: the collecting slot, the committing slot and the in-flight count.

use std::sync::atomic::AtomicUsize;
use std::thread::Thread;

use parking_lot::Mutex;

use crate::waiter::{BELLS, Bell};

/// One hot key's group object (AliSQL's `GroupUpdate`), pooled and reused across keys.
///
/// Two slots, as in AliSQL's `go_[2]`: the *collecting* group is `collect.pending`; the
/// *committing* group is whatever batch the holder of `commit` is running. So one group gathers
/// while the other commits.
///
/// Invariants:
/// - `in_flight` counts requests for this key between `Registry::acquire` and `release`; it is
///   only incremented under the registry shard's read or write lock, which is what lets the
///   registry recycle the object safely once it reaches zero.
/// - Whenever `pending` is non-empty, `pending[0]` is its leader: either running leader code or
///   already promoted. Everyone else in `pending` is parked.
/// - `commit` is held for exactly one group's `begin`..`commit` (or one ungrouped request), so
///   executor calls for a key never overlap.
/// - When `in_flight` is zero, `pending` is empty and `leader_wait` is `None`.
#[derive(Debug)]
pub(crate) struct KeyState<M> {
    pub(crate) in_flight: AtomicUsize,
    pub(crate) collect: Mutex<Collect<M>>,
    pub(crate) commit: Mutex<()>,
    /// Where members sleep: a member of the group with sequence number `s` sleeps on
    /// `bells[s % BELLS]`, and its leader rings that bell once when the group is done.
    pub(crate) bells: [Bell; BELLS],
}

/// The collecting slot.
#[derive(Debug)]
pub(crate) struct Collect<M> {
    /// Members of the next group, in arrival order.
    pub(crate) pending: Vec<M>,
    /// The other slot's buffer, kept for reuse so a hot key allocates no vectors per group.
    pub(crate) spare: Vec<M>,
    /// A leader in its timed wait, to be woken once `pending.len() >= target`.
    pub(crate) leader_wait: Option<LeaderWait>,
    /// Sequence number of the collecting group (picks its members' bell); bumped each time a
    /// leader takes a batch.
    pub(crate) seq: usize,
}

/// A leader parked in its timed wait for followers.
#[derive(Debug)]
pub(crate) struct LeaderWait {
    pub(crate) thread: Thread,
    pub(crate) target: usize,
}

impl<M> KeyState<M> {
    pub(crate) fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            collect: Mutex::new(Collect {
                pending: Vec::new(),
                spare: Vec::new(),
                leader_wait: None,
                seq: 0,
            }),
            commit: Mutex::new(()),
            bells: Default::default(),
        }
    }
}
