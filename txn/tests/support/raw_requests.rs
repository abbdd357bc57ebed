//! Raw `KvRequest`s to a `LocalCluster`'s nodes, without the client: a timestamp, a region's
//! leader and context, and a read at a chosen version. `TestCluster`'s methods of the same
//! names are these on its cluster.

use std::time::{Duration, Instant};

use surge_txn::LocalCluster;
use surge_txn::rpc::{Context, KvRequest, KvResponse};

/// How long a helper waits for an oracle or a leader (elections after a fault).
const WAIT: Duration = Duration::from_secs(30);

/// A fresh timestamp from whichever node's oracle answers (the meta leader), retrying across
/// elections for up to 30 s.
pub fn timestamp(c: &LocalCluster) -> u64 {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        for id in c.node_ids() {
            if let Ok(KvResponse::Timestamp { ts }) =
                c.call(*id, KvRequest::GetTimestamp { count: 1 })
            {
                return ts;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no timestamp oracle answered within 30 s");
}

/// The leader of `key`'s region and the region's context (id and epoch) as the cluster sees
/// them now, waiting up to 30 s for a leader.
pub fn leader_and_ctx(c: &LocalCluster, key: &[u8]) -> (u64, Context) {
    let region = c.region_of(key).expect("a region holds every key");
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(leader) = c.leader_of_group(region.id) {
            let ctx = Context {
                region_id: region.id,
                epoch: region.epoch,
            };
            return (leader, ctx);
        }
        assert!(
            Instant::now() < deadline,
            "region {} has no leader",
            region.id
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The value of `key` at `version`, read on its region's leader.
pub fn get_at(c: &LocalCluster, key: &[u8], version: u64) -> Option<Vec<u8>> {
    let (leader, ctx) = leader_and_ctx(c, key);
    let req = KvRequest::Get {
        ctx,
        key: key.to_vec(),
        version,
        bypass_locks: Vec::new(),
    };
    match c.call(leader, req) {
        Ok(KvResponse::Get { value }) => value,
        other => panic!("get {key:?} at {version} on node {leader}: {other:?}"),
    }
}
