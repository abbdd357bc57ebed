//! [`spawn_every`]: a node's background thread that runs one step at a fixed period until
//! the node stops or is dropped (the split checker, the region heartbeat).

use std::sync::Weak;
use std::time::Duration;

use super::node::KvNode;

/// Starts thread `name`, which calls `step` with the node every `every` (after a first
/// sleep) and ends when the node stops or is dropped. A thread that cannot start is
/// logged as an error naming `what` it would have done.
pub(super) fn spawn_every(
    name: &str,
    every: Duration,
    node: Weak<KvNode>,
    what: &'static str,
    mut step: impl FnMut(&KvNode) + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            loop {
                std::thread::sleep(every);
                let Some(node) = node.upgrade() else { return };
                if node.is_stopped() {
                    return;
                }
                step(&node);
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "could not start the thread that {what}");
    }
}
