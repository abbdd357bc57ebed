//! Raw `KvRequest`s to a `LocalCluster`'s nodes, without the client: a timestamp, a region's
//! leader and context, and a read at a chosen version.

use surge_txn::{
    LocalCluster,
    rpc::{Context, KvRequest, KvResponse},
};

/// A fresh timestamp from whichever node's oracle answers (the meta leader).
pub fn timestamp(c: &LocalCluster) -> u64 {
    for id in c.node_ids() {
        if let Ok(KvResponse::Timestamp { ts }) = c.call(*id, KvRequest::GetTimestamp { count: 1 })
        {
            return ts;
        }
    }
    panic!("no timestamp oracle answered");
}

/// The leader of `key`'s region and the region's context (id and epoch) as the cluster sees
/// them now.
pub fn leader_and_ctx(c: &LocalCluster, key: &[u8]) -> (u64, Context) {
    let r = c.region_of(key).expect("region");
    let leader = c.leader_of_group(r.id).expect("leader");
    (
        leader,
        Context {
            region_id: r.id,
            epoch: r.epoch,
        },
    )
}

/// The value of `key` at `version`, read on its region's leader.
pub fn get_at(c: &LocalCluster, key: &[u8], version: u64) -> Option<Vec<u8>> {
    let (leader, ctx) = leader_and_ctx(c, key);
    match c
        .call(
            leader,
            KvRequest::Get {
                ctx,
                key: key.to_vec(),
                version,
                bypass_locks: vec![],
            },
        )
        .expect("get call")
    {
        KvResponse::Get { value } => value,
        other => panic!("get: {other:?}"),
    }
}
