//! [`RegionStateMachine`]: a data region as a `raft-lite` state machine.

use std::sync::Arc;

use bytes::Bytes;
use surge_raft_lite::{SnapshotStream, StateMachine};

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

    /// A view of the region taken here, on the Raft thread, and encoded on the node's
    /// snapshot writer, so the other regions of the node do not wait for the encoding.
    fn snapshot_deferred(&mut self) -> Box<dyn FnOnce() -> Bytes + Send> {
        self.peer.snapshot_deferred()
    }

    fn restore(&mut self, index: u64, data: &[u8]) {
        self.peer.restore(index, data);
    }

    /// Written record by record from a view taken here (on a disk engine, a fjall
    /// snapshot): the region is never encoded whole.
    fn snapshot_stream(&mut self) -> SnapshotStream {
        self.peer.snapshot_stream()
    }

    /// Applied as it is read (on a disk engine): the region is never held whole.
    fn restore_from(&mut self, index: u64, reader: &mut dyn std::io::Read) -> Result<(), String> {
        self.peer.restore_from(index, reader)
    }

    /// A disk engine keeps the region durably: its log is compacted up to what the engine
    /// made durable, with a marker instead of a copy of the region's data.
    fn durable_state(&self) -> bool {
        self.peer.is_durable()
    }

    fn compaction_marker(&mut self) -> Box<dyn FnOnce() -> Result<Bytes, String> + Send> {
        self.peer.compaction_marker()
    }

    /// The engine's durable applied index (0 for a `MemEngine`): a restart replays only
    /// the log after it.
    fn durable_applied(&self) -> u64 {
        self.peer.durable_applied()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use surge_lock_table::{BudgetConfig, LockWaitManager, MemoryBudget, WaitConfig};

    use super::*;
    use crate::region::counters::Counters;
    use crate::region::host::RegionHost;
    use crate::region::region_info::{RegionEpoch, RegionInfo};
    use crate::{Cf, Engine, MemEngine, Modify, WriteBatch};

    /// A host for a region that never splits nor merges here.
    struct NoHost;

    impl RegionHost for NoHost {
        fn spawn_split_child(&self, _child: Arc<RegionPeer>, _seed: Bytes) {}
        fn hosts(&self, _id: u64) -> bool {
            false
        }
        fn region_merged(&self, _source: u64, _target: u64) {}
    }

    fn put(engine: &MemEngine, key: &[u8], value: &[u8], index: u64) {
        let modifies = [Cf::Lock, Cf::Write, Cf::Default]
            .into_iter()
            .map(|cf| Modify::Put {
                cf,
                key: key.to_vec(),
                value: value.to_vec(),
            })
            .collect();
        engine
            .write(&WriteBatch {
                modifies,
                applied_index: index,
            })
            .expect("write");
    }

    /// The deferred snapshot encodes exactly what `snapshot` gave when it was taken,
    /// whatever the engine applies before it runs.
    #[test]
    fn deferred_snapshot_encodes_like_snapshot_at_the_time_it_was_taken() {
        let engine = Arc::new(MemEngine::new());
        for i in 0..200u32 {
            put(&engine, &i.to_be_bytes(), &vec![i as u8; i as usize], 1);
        }
        let info = RegionInfo {
            id: 7,
            start: b"a".to_vec(),
            end: b"z".to_vec(),
            epoch: RegionEpoch {
                version: 3,
                conf_ver: 2,
            },
            peers: vec![1, 2, 3],
        };
        let peer = RegionPeer::new(
            1,
            info,
            engine.clone(),
            &MemoryBudget::new(BudgetConfig::default()),
            LockWaitManager::new(WaitConfig::default()),
            Arc::new(Counters::default()),
            Arc::new(NoHost),
            Arc::default(),
            Duration::from_secs(1),
        );
        let mut sm = RegionStateMachine::new(peer);
        let before = sm.snapshot();
        let deferred = sm.snapshot_deferred();
        put(&engine, b"later", b"not in the snapshot", 2);
        put(&engine, &5u32.to_be_bytes(), b"overwritten", 3);
        let encoded = std::thread::spawn(deferred).join().expect("encode");
        assert_eq!(encoded, before);
        assert_ne!(sm.snapshot(), before);
    }
}
