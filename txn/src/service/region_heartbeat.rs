//! Region heartbeats: a node thread that tells the meta group, every
//! [`HEARTBEAT_EVERY`], the range and epoch of every region this node leads (PD's region
//! heartbeat, without the statistics).
//!
//! Splits and merges report their outcome to the meta group as they happen, retried for a
//! while; but a change whose report never arrives (a split whose Raft proposal came back
//! "outcome unknown" and applied anyway, a report that gave up during a long partition)
//! left a hole in the map for good, and a client routed by the map could never reach the
//! keys under it. A heartbeat repairs that within a beat. The meta leader proposes only
//! what changes its map (`MetaPeer::news`), so a quiet cluster sends one request per node
//! per beat and writes nothing.

use std::sync::Weak;
use std::time::Duration;

use super::node::KvNode;
use super::node_loop::spawn_every;
use super::request::KvRequest;

/// How often a node reports the regions it leads.
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// Starts the heartbeat of `node`; it ends when the node stops or is dropped.
pub(super) fn spawn(node: Weak<KvNode>) {
    spawn_every(
        "surge-txn-region-heartbeat",
        HEARTBEAT_EVERY,
        node,
        "reports led regions to the meta group",
        |node| {
            let led = node.led_regions();
            if led.is_empty() {
                return;
            }
            // Best effort: the next beat sends it again.
            if let Err(e) = node.call_meta(KvRequest::ReportRegions {
                put: led,
                remove: Vec::new(),
            }) {
                tracing::debug!(error = %e, "region heartbeat not delivered");
            }
        },
    );
}
