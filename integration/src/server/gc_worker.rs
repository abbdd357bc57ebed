//! The node's GC thread: on the node that leads the meta group, collects the cluster's MVCC
//! garbage every [`GcConfig::interval`] with [`TxnClient::gc`](surge_txn::TxnClient::gc)
//! (TiDB's GC worker, which runs on one elected TiDB server).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use surge_txn::KvNode;

use super::coordinator::NodeCoordinator;

/// How a node bounds transaction age and collects garbage. Build it from
/// [`GcConfig::default`] and the `with_*` methods (the struct is `#[non_exhaustive]`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcConfig {
    /// Reads and new locks older than this are refused
    /// ([`KvNodeConfig::gc_life_time`](surge_txn::KvNodeConfig::gc_life_time)); every node
    /// of a cluster must have the same value.
    pub life_time: Duration,
    /// How often the meta leader's node collects.
    pub interval: Duration,
    /// How much older than `life_time` the safe point is: clock skew between the nodes
    /// must stay below it, or a node with a slow clock could still serve a read that the
    /// collection below the safe point broke.
    pub margin: Duration,
    /// How long a node's coordinator's GC hold outlives the node
    /// ([`GcHoldOptions::ttl`](surge_txn::GcHoldOptions::ttl)): a node down longer than
    /// this with transactions in doubt may find their records collected when it comes
    /// back.
    pub hold_ttl: Duration,
}

impl Default for GcConfig {
    /// A 10-minute life time (TiDB's `tidb_gc_life_time`), a collection every 5 minutes,
    /// a 1-minute margin, holds that outlive their node by 24 hours (TiCDC's `gc-ttl`).
    fn default() -> GcConfig {
        GcConfig {
            life_time: Duration::from_secs(600),
            interval: Duration::from_secs(300),
            margin: Duration::from_secs(60),
            hold_ttl: Duration::from_secs(24 * 3600),
        }
    }
}

impl GcConfig {
    /// Sets [`GcConfig::life_time`].
    #[must_use]
    pub fn with_life_time(mut self, life_time: Duration) -> Self {
        self.life_time = life_time;
        self
    }

    /// Sets [`GcConfig::interval`].
    #[must_use]
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets [`GcConfig::margin`].
    #[must_use]
    pub fn with_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// Sets [`GcConfig::hold_ttl`].
    #[must_use]
    pub fn with_hold_ttl(mut self, hold_ttl: Duration) -> Self {
        self.hold_ttl = hold_ttl;
        self
    }
}

/// Starts the thread; it ends once `stop` is set or the node is dropped.
pub(super) fn spawn(
    node: Weak<KvNode>,
    coordinator: Weak<NodeCoordinator>,
    config: GcConfig,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("surgedb-gc".into())
        .spawn(move || {
            let mut next = Instant::now() + config.interval;
            loop {
                while Instant::now() < next {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                next = Instant::now() + config.interval;
                let (Some(node), Some(coordinator)) = (node.upgrade(), coordinator.upgrade())
                else {
                    return;
                };
                if node.is_stopped() {
                    return;
                }
                if node.is_meta_leader() {
                    run_once(node.id(), &coordinator, &config);
                }
            }
        })
}

/// One collection: a safe point `life_time + margin` behind now (and at or below every GC
/// hold), then
/// [`TxnClient::gc`](surge_txn::TxnClient::gc); the outcome goes to the node's log.
fn run_once(id: u64, coordinator: &NodeCoordinator, config: &GcConfig) {
    let Ok(client) = coordinator.client() else {
        return;
    };
    let started = Instant::now();
    let back = config.life_time + config.margin;
    let outcome = client
        .safe_point_older_than(back)
        .and_then(|sp| client.gc(sp));
    match outcome {
        Ok(r) => eprintln!(
            "surgedb node {id}: gc below {}: {} regions, {} locks settled ({} alive), {} keys, \
             {} records and {} values removed, {} records read, {:.1} s",
            r.safe_point,
            r.regions,
            r.locks_resolved,
            r.locks_alive,
            r.keys,
            r.removed.records,
            r.removed.values,
            r.records_seen,
            started.elapsed().as_secs_f64()
        ),
        Err(e) => eprintln!("surgedb node {id}: gc failed (tried again next round): {e}"),
    }
}
