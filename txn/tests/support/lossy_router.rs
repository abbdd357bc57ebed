//! [`LossyRouter`]: the network between a client and the nodes, with faults. The nodes'
//! own links (Raft messages) go through the cluster's `MemNetwork`, whose drops, delays and
//! partitions the tests set there; a client reaches the nodes through a `NodeRouter`, so its
//! link's faults are injected here, around the cluster's router:
//! - a request lost on the way: the node never sees it, the client times out;
//! - a reply lost: the request ran, the client times out;
//! - a reply garbled: the request ran, the client gets a protocol error;
//! - a request held in the network: the client times out at once and the node receives the
//!   request later (up to 300 ms), after the client moved on (retried, committed, rolled
//!   back);
//! - a request or a reply delayed (up to `max_delay`);
//! - the client cut off from a node: every request to it times out.
//!
//! Rates are per mille of requests and can change during a run ([`LossyRouter::set`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use surge_txn::ServiceError;
use surge_txn::rpc::{KvRequest, KvResponse, KvService, NodeRouter};

use super::rng::SplitMix64;

/// Fault rates of the client's link, per mille of requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkFaults {
    /// Requests lost before reaching the node.
    pub drop_request: u32,
    /// Requests that ran but whose reply was lost.
    pub drop_reply: u32,
    /// Requests that ran but whose reply arrived garbled (a protocol error).
    pub garble_reply: u32,
    /// Requests held in the network and delivered after the client timed out.
    pub late: u32,
    /// Requests, and independently replies, delayed by up to `max_delay`.
    pub delay: u32,
    /// The longest delay.
    pub max_delay: Duration,
}

/// How many faults a [`LossyRouter`] injected.
#[derive(Debug, Default)]
pub struct LinkStats {
    /// Requests passed to a node.
    pub delivered: AtomicU64,
    /// Requests lost.
    pub dropped_requests: AtomicU64,
    /// Replies lost.
    pub dropped_replies: AtomicU64,
    /// Replies garbled.
    pub garbled_replies: AtomicU64,
    /// Requests delivered late.
    pub late: AtomicU64,
    /// Requests or replies delayed.
    pub delayed: AtomicU64,
    /// Requests to a node the client was cut off from.
    pub cut: AtomicU64,
}

impl std::fmt::Display for LinkStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        write!(
            f,
            "{} delivered, {} requests lost, {} replies lost, {} replies garbled, {} late, \
             {} delayed, {} to a cut-off node",
            g(&self.delivered),
            g(&self.dropped_requests),
            g(&self.dropped_replies),
            g(&self.garbled_replies),
            g(&self.late),
            g(&self.delayed),
            g(&self.cut)
        )
    }
}

struct Shared {
    inner: Arc<dyn NodeRouter>,
    faults: Mutex<LinkFaults>,
    cut: Mutex<BTreeSet<u64>>,
    rng: Mutex<SplitMix64>,
    late: Mutex<Vec<JoinHandle<()>>>,
    stats: LinkStats,
}

/// A [`NodeRouter`] that injects [`LinkFaults`] into every request of the clients built on
/// it. Cheap to clone; clones share faults and statistics.
#[derive(Clone)]
pub struct LossyRouter(Arc<Shared>);

impl std::fmt::Debug for LossyRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LossyRouter")
            .field("faults", &*self.0.faults.lock())
            .field("cut", &*self.0.cut.lock())
            .finish()
    }
}

impl LossyRouter {
    /// Around `inner`, without faults yet; `seed` drives the fault choices.
    pub fn new(inner: Arc<dyn NodeRouter>, seed: u64) -> LossyRouter {
        LossyRouter(Arc::new(Shared {
            inner,
            faults: Mutex::new(LinkFaults::default()),
            cut: Mutex::new(BTreeSet::new()),
            rng: Mutex::new(SplitMix64::new(seed)),
            late: Mutex::new(Vec::new()),
            stats: LinkStats::default(),
        }))
    }

    /// Sets the fault rates.
    pub fn set(&self, faults: LinkFaults) {
        *self.0.faults.lock() = faults;
    }

    /// Cuts the client off from `node` (`true`) or reconnects it.
    pub fn cut(&self, node: u64, cut: bool) {
        let mut set = self.0.cut.lock();
        if cut {
            set.insert(node);
        } else {
            set.remove(&node);
        }
    }

    /// Ends every fault and waits until every request held in the network was delivered.
    pub fn heal_and_drain(&self) {
        self.set(LinkFaults::default());
        self.0.cut.lock().clear();
        loop {
            let pending: Vec<_> = std::mem::take(&mut *self.0.late.lock());
            if pending.is_empty() {
                return;
            }
            for h in pending {
                let _ = h.join();
            }
        }
    }

    /// What was injected so far.
    pub fn stats(&self) -> &LinkStats {
        &self.0.stats
    }

    /// This router as the clients' router.
    pub fn router(&self) -> Arc<dyn NodeRouter> {
        Arc::new(self.clone())
    }
}

impl NodeRouter for LossyRouter {
    fn nodes(&self) -> Vec<u64> {
        self.0.inner.nodes()
    }

    fn service(&self, node: u64) -> Result<Arc<dyn KvService>, ServiceError> {
        let inner = self.0.inner.service(node)?;
        Ok(Arc::new(LossyLink {
            shared: Arc::clone(&self.0),
            node,
            inner,
        }))
    }
}

/// One node as a client sees it through the lossy link.
struct LossyLink {
    shared: Arc<Shared>,
    node: u64,
    inner: Arc<dyn KvService>,
}

/// What the link does to one request.
enum Fate {
    Pass,
    DropRequest,
    DropReply,
    Garble,
    Late(Duration),
}

impl LossyLink {
    fn timeout(&self) -> ServiceError {
        // The client's view of a lost message: no answer in time (after a short wait, as a
        // real timeout would take).
        std::thread::sleep(Duration::from_millis(2));
        ServiceError::Timeout {
            node: self.node,
            timeout_ms: 2,
        }
    }

    fn draw(&self) -> (Fate, Option<Duration>, Option<Duration>) {
        let f = *self.shared.faults.lock();
        let mut rng = self.shared.rng.lock();
        let mut roll = u32::try_from(rng.below(1000)).unwrap_or(0);
        let mut pick = |rate: u32| {
            let hit = roll < rate;
            roll = roll.saturating_sub(rate);
            hit
        };
        let fate = if pick(f.drop_request) {
            Fate::DropRequest
        } else if pick(f.drop_reply) {
            Fate::DropReply
        } else if pick(f.garble_reply) {
            Fate::Garble
        } else if pick(f.late) {
            Fate::Late(Duration::from_millis(rng.range(20, 300)))
        } else {
            Fate::Pass
        };
        let max_ms = u64::try_from(f.max_delay.as_millis()).unwrap_or(0);
        let mut delay = || {
            (max_ms > 0 && rng.below(1000) < u64::from(f.delay))
                .then(|| Duration::from_millis(rng.range(1, max_ms)))
        };
        let (before, after) = (delay(), delay());
        (fate, before, after)
    }
}

impl KvService for LossyLink {
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        let stats = &self.shared.stats;
        if self.shared.cut.lock().contains(&self.node) {
            stats.cut.fetch_add(1, Ordering::Relaxed);
            return Err(self.timeout());
        }
        let (fate, before, after) = self.draw();
        let delays = u64::from(before.is_some()) + u64::from(after.is_some());
        stats.delayed.fetch_add(delays, Ordering::Relaxed);
        if let Some(d) = before {
            std::thread::sleep(d);
        }
        let reply = match fate {
            Fate::DropRequest => {
                stats.dropped_requests.fetch_add(1, Ordering::Relaxed);
                return Err(self.timeout());
            }
            Fate::Late(d) => {
                stats.late.fetch_add(1, Ordering::Relaxed);
                let inner = Arc::clone(&self.inner);
                let handle = std::thread::spawn(move || {
                    std::thread::sleep(d);
                    let _ = inner.call(req);
                });
                self.shared.late.lock().push(handle);
                return Err(self.timeout());
            }
            Fate::Pass | Fate::DropReply | Fate::Garble => self.inner.call(req),
        };
        stats.delivered.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = after {
            std::thread::sleep(d);
        }
        match fate {
            Fate::DropReply if reply.is_ok() => {
                stats.dropped_replies.fetch_add(1, Ordering::Relaxed);
                Err(self.timeout())
            }
            Fate::Garble if reply.is_ok() => {
                stats.garbled_replies.fetch_add(1, Ordering::Relaxed);
                Err(ServiceError::Protocol {
                    node: self.node,
                    detail: "injected fault: the reply arrived garbled".into(),
                })
            }
            _ => reply,
        }
    }
}
