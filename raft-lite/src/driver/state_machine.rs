//! The application's replicated state machine.

use bytes::Bytes;

use crate::ConfState;

/// What a group replicates into. All calls come from the node's driver thread, in log
/// order.
///
/// Leadership callbacks are placed in the log order that a lock table needs:
/// [`StateMachine::on_leader`] is called when the new leader applies the no-op entry that
/// opens its term, i.e. after every entry of earlier terms was applied and before any entry
/// proposed in its term; [`StateMachine::on_follower`] is called as soon as the node learns
/// it lost leadership, before it applies anything further.
pub trait StateMachine: Send + 'static {
    /// Applies a committed entry; the result is handed to the proposer's
    /// [`crate::Proposal::wait_applied`].
    fn apply(&mut self, index: u64, data: &[u8]) -> Bytes;

    /// A membership change was applied.
    fn on_conf_change(&mut self, index: u64, conf: &ConfState) {
        let _ = (index, conf);
    }

    /// This node leads the group from now on, in `term`.
    fn on_leader(&mut self, term: u64) {
        let _ = term;
    }

    /// This node no longer leads the group (it led in `term`).
    fn on_follower(&mut self, term: u64) {
        let _ = term;
    }

    /// Serializes the state as of the last applied entry.
    fn snapshot(&mut self) -> Bytes;

    /// The state as of the last applied entry, encoded later: the node's driver thread
    /// calls this and hands the returned closure to the node's background snapshot
    /// writer, which runs it before writing the file, so the encoding does not stall the
    /// other groups of the node (one driver thread serves them all). The default encodes
    /// now with [`StateMachine::snapshot`].
    ///
    /// The closure must return exactly the bytes [`StateMachine::snapshot`] would have
    /// returned when this method was called (the state at the applied index): it runs on
    /// another thread while this state machine goes on applying entries, so it must
    /// capture its own consistent view here (a copy-on-write clone, refcounted buffers)
    /// and must not reach the live state machine (through shared interior mutability or
    /// otherwise). It should not block on the driver thread: the driver never waits for
    /// it, but the writer handles one snapshot at a time for all groups of the node.
    /// A result above [`crate::MAX_BYTES_LEN`] is not written (the log is kept, and a
    /// snapshot is tried again after another `snapshot_every` entries); if the closure
    /// panics, the snapshot is likewise dropped and retried later.
    fn snapshot_deferred(&mut self) -> Box<dyn FnOnce() -> Bytes + Send> {
        let data = self.snapshot();
        Box::new(move || data)
    }

    /// Replaces the state by a snapshot taken at `index`.
    fn restore(&mut self, index: u64, data: &[u8]);

    /// The last applied index that the state machine itself keeps durably (0 if it keeps
    /// nothing); replay after a restart starts after it.
    fn durable_applied(&self) -> u64 {
        0
    }

    /// True if the state machine keeps its state durably itself (a storage engine that
    /// survives a restart). Its group's log is then compacted without encoding the state:
    /// the driver calls [`StateMachine::compaction_marker`] and records what it returns as
    /// the snapshot that marks the log's start, and a follower behind that start gets a
    /// snapshot built for it then ([`StateMachine::snapshot_deferred`]), not the marker.
    /// Read once, when the group is added. The default is false: the driver takes full
    /// snapshots.
    fn durable_state(&self) -> bool {
        false
    }

    /// With [`StateMachine::durable_state`]: a closure, run on the node's background
    /// snapshot thread, that makes every entry applied so far durable in the state
    /// machine's own storage and then returns a small marker (the log is compacted up to
    /// the applied index of this call only after it returns). At a restart the marker is
    /// handed to [`StateMachine::restore`] with its index, where the state machine holds
    /// that index or later durably. Rule: the log is never compacted past what the state
    /// machine holds durably, and the state machine never holds an entry the durable log
    /// lacks (entries are applied only once durable in the log). An error (the state
    /// could not be made durable) leaves the log as it is; compaction is tried again after
    /// another `snapshot_every` entries. The default encodes a full snapshot, as
    /// [`StateMachine::snapshot_deferred`].
    fn compaction_marker(&mut self) -> Box<dyn FnOnce() -> Result<Bytes, String> + Send> {
        let encode = self.snapshot_deferred();
        Box::new(move || Ok(encode()))
    }
}
