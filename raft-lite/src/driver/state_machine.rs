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

    /// Replaces the state by a snapshot taken at `index`.
    fn restore(&mut self, index: u64, data: &[u8]);

    /// The last applied index that the state machine itself keeps durably (0 if it keeps
    /// nothing); replay after a restart starts after it.
    fn durable_applied(&self) -> u64 {
        0
    }
}
