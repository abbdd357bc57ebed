//! [`RegionStateMachine`]: a data region as a `raft-lite` state machine.

use std::sync::Arc;

use bytes::Bytes;
use surge_raft_lite::StateMachine;

use super::peer::RegionPeer;

/// Applies a data region's log to its [`RegionPeer`] and drives its lock table from the
/// leadership callbacks (`on_leader` when the new term's no-op applies, `on_follower` as soon
/// as leadership is lost).
pub(crate) struct RegionStateMachine {
    peer: Arc<RegionPeer>,
}

impl RegionStateMachine {
    pub(crate) fn new(peer: Arc<RegionPeer>) -> RegionStateMachine {
        RegionStateMachine { peer }
    }
}

impl StateMachine for RegionStateMachine {
    fn apply(&mut self, index: u64, data: &[u8]) -> Bytes {
        self.peer.apply(index, data)
    }

    fn on_leader(&mut self, term: u64) {
        self.peer.on_leader(term);
    }

    fn on_follower(&mut self, _term: u64) {
        self.peer.on_follower();
    }

    fn snapshot(&mut self) -> Bytes {
        self.peer.snapshot()
    }

    fn restore(&mut self, index: u64, data: &[u8]) {
        self.peer.restore(index, data);
    }
}
