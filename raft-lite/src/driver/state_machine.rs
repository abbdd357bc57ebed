//! The application's replicated state machine.

use bytes::Bytes;

use crate::ConfState;

/// Where [`StateMachine::snapshot_stream`]'s closure writes: called with consecutive
/// pieces of the snapshot; an error means the stream is over (the follower went away).
pub type SnapshotSink<'a> = &'a mut dyn FnMut(&[u8]) -> std::io::Result<()>;

/// What [`StateMachine::snapshot_stream`] returns: writes the state captured when it was
/// called into the sink, on another thread.
pub type SnapshotStream = Box<dyn for<'a> FnOnce(SnapshotSink<'a>) -> Result<(), String> + Send>;

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

    /// The state as of the last applied entry, written later as a stream: the driver
    /// calls this on its thread, where the closure must capture a consistent view (as
    /// [`StateMachine::snapshot_deferred`]), and runs the closure on a thread of its own,
    /// which hands every piece the closure gives `sink` to the follower in chunks of
    /// [`crate::SNAPSHOT_CHUNK_BYTES`], at most a few chunks in flight. So a snapshot for a
    /// follower is never held whole in memory, however large the state. Used for the
    /// snapshots a node builds for a follower of a group with
    /// [`StateMachine::durable_state`], when its store has a spool directory
    /// ([`crate::LogStore::snapshot_spool_dir`]). An error from `sink` (the follower went
    /// away) must stop the closure, which returns it; an `Err` of its own (the state could
    /// not be read) likewise ends the stream, and the follower asks again later.
    ///
    /// The bytes given to `sink`, concatenated, are what [`StateMachine::restore_from`]
    /// reads on the follower (never [`StateMachine::restore`]). The default gives the
    /// whole encoding of [`StateMachine::snapshot_deferred`] at once.
    fn snapshot_stream(&mut self) -> SnapshotStream {
        let encode = self.snapshot_deferred();
        Box::new(move |sink| sink(&encode()).map_err(|e| e.to_string()))
    }

    /// Replaces the state by a streamed snapshot ([`StateMachine::snapshot_stream`])
    /// taken at `index`, read from `reader` (a file the follower received the chunks into,
    /// so memory stays bounded if the state machine reads it piece by piece). It may be
    /// called again with the same snapshot after a crash during an earlier call (the file
    /// stays until a newer snapshot replaces it): a state machine that made `index`
    /// durable already may skip it. An error (damaged or truncated data, the state could
    /// not be written) stops the node, as a storage failure does: the group would be left
    /// without its state. The default reads everything and calls
    /// [`StateMachine::restore`].
    ///
    /// # Errors
    /// What reading or applying the stream fails with, as a message naming what and where.
    fn restore_from(&mut self, index: u64, reader: &mut dyn std::io::Read) -> Result<(), String> {
        let mut data = Vec::new();
        reader
            .read_to_end(&mut data)
            .map_err(|e| format!("reading the snapshot at {index}: {e}"))?;
        self.restore(index, &data);
        Ok(())
    }

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
