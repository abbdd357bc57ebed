//! The split checker: a node thread that splits the regions it leads once their data grows
//! past `KvNodeConfig::split_size` (TiKV's split-check worker, by size only).

use std::sync::Weak;
use std::time::Duration;

use super::node::KvNode;
use super::node_loop::spawn_every;
use super::request::KvRequest;

/// How often the regions' sizes are looked at.
const CHECK_EVERY: Duration = Duration::from_millis(200);

/// Starts the checker for `node`; it ends when the node stops or is dropped.
pub(super) fn spawn(node: Weak<KvNode>, split_size: u64) {
    spawn_every(
        "surge-txn-split-check",
        CHECK_EVERY,
        node,
        "splits regions by size",
        move |node| {
            for region_id in node.regions_over(split_size) {
                let r = node.handle(KvRequest::SplitRegion {
                    region_id,
                    split_key: None,
                });
                tracing::info!(region_id, result = ?r, "split by size");
            }
        },
    );
}
