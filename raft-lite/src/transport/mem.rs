//! An in-process network with fault injection: drop, delay (and so reorder), duplicate
//! and partition.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use super::Transport;
use crate::driver::Mailbox;
use crate::{Message, NodeId};

/// Faults applied to every message. None by default.
///
/// Build it with [`NetFaults::default`] and the `with_*` methods, or assign the public fields
/// of a default value: the struct is `#[non_exhaustive]`, so later faults can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetFaults {
    /// Percent of messages lost.
    pub drop_pct: u32,
    /// Percent of messages delivered twice.
    pub dup_pct: u32,
    /// Each message is delayed by a random time in `[min_delay, max_delay]`; different
    /// delays reorder messages. Zero means immediate delivery.
    pub min_delay: Duration,
    /// See `min_delay`.
    pub max_delay: Duration,
}

impl NetFaults {
    /// Sets [`NetFaults::drop_pct`].
    #[must_use]
    pub fn with_drop_pct(mut self, pct: u32) -> Self {
        self.drop_pct = pct;
        self
    }

    /// Sets [`NetFaults::dup_pct`].
    #[must_use]
    pub fn with_dup_pct(mut self, pct: u32) -> Self {
        self.dup_pct = pct;
        self
    }

    /// Sets [`NetFaults::min_delay`].
    #[must_use]
    pub fn with_min_delay(mut self, delay: Duration) -> Self {
        self.min_delay = delay;
        self
    }

    /// Sets [`NetFaults::max_delay`].
    #[must_use]
    pub fn with_max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }
}

/// Counters of a [`MemNetwork`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Messages handed to a mailbox.
    pub delivered: u64,
    /// Messages lost to faults or partitions (or to unknown destinations).
    pub dropped: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
}

type Boxes = Arc<Mutex<HashMap<NodeId, Mailbox>>>;

struct Delayed {
    at: Instant,
    seq: u64,
    group: u64,
    msg: Message,
}
impl PartialEq for Delayed {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Delayed {}
impl PartialOrd for Delayed {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Delayed {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// Routes messages between nodes of one process. Register each node's [`Mailbox`]; then
/// every node may use the same network as its [`Transport`].
pub struct MemNetwork {
    boxes: Boxes,
    faults: Mutex<NetFaults>,
    cut: Mutex<BTreeSet<(NodeId, NodeId)>>,
    rng: Mutex<u64>,
    delayed: Mutex<Option<Sender<Delayed>>>,
    seq: AtomicU64,
    delivered: Arc<AtomicU64>,
    dropped: AtomicU64,
    duplicated: AtomicU64,
}

impl std::fmt::Debug for MemNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemNetwork")
            .field("stats", &self.stats())
            .finish()
    }
}

impl MemNetwork {
    /// A network without faults; `seed` drives the fault choices once faults are set.
    pub fn new(seed: u64) -> Arc<MemNetwork> {
        Arc::new(MemNetwork {
            boxes: Arc::new(Mutex::new(HashMap::new())),
            faults: Mutex::new(NetFaults::default()),
            cut: Mutex::new(BTreeSet::new()),
            rng: Mutex::new(seed),
            delayed: Mutex::new(None),
            seq: AtomicU64::new(0),
            delivered: Arc::new(AtomicU64::new(0)),
            dropped: AtomicU64::new(0),
            duplicated: AtomicU64::new(0),
        })
    }

    /// Connects node `id`'s mailbox.
    pub fn register(&self, id: NodeId, mailbox: Mailbox) {
        self.boxes.lock().insert(id, mailbox);
    }

    /// Disconnects node `id` (as if it crashed): messages to it are lost.
    pub fn unregister(&self, id: NodeId) {
        self.boxes.lock().remove(&id);
    }

    /// Sets the faults.
    pub fn set_faults(&self, f: NetFaults) {
        *self.faults.lock() = f;
    }

    /// Cuts every link between a node of `a` and a node of `b` (both directions).
    pub fn partition(&self, a: &[NodeId], b: &[NodeId]) {
        let mut cut = self.cut.lock();
        for &x in a {
            for &y in b {
                cut.insert((x, y));
                cut.insert((y, x));
            }
        }
    }

    /// Restores every link.
    pub fn heal(&self) {
        self.cut.lock().clear();
    }

    /// Counters.
    pub fn stats(&self) -> NetStats {
        NetStats {
            delivered: self.delivered.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            duplicated: self.duplicated.load(Ordering::Relaxed),
        }
    }

    fn rand(&self) -> u64 {
        let mut s = self.rng.lock();
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn deliver_now(boxes: &Boxes, delivered: &AtomicU64, group: u64, msg: Message) -> bool {
        let mb = boxes.lock().get(&msg.to).cloned();
        match mb {
            Some(mb) => {
                mb.deliver(group, msg);
                delivered.fetch_add(1, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    fn delay_queue(&self) -> Sender<Delayed> {
        let mut d = self.delayed.lock();
        if let Some(tx) = d.as_ref() {
            return tx.clone();
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let boxes = self.boxes.clone();
        let delivered = self.delivered.clone();
        // Ends when the network (the only sender) is dropped.
        let _ = std::thread::Builder::new()
            .name("mem-network-delay".into())
            .spawn(move || delay_loop(rx, boxes, delivered));
        *d = Some(tx.clone());
        tx
    }
}

fn delay_loop(rx: Receiver<Delayed>, boxes: Boxes, delivered: Arc<AtomicU64>) {
    let mut heap: BinaryHeap<Reverse<Delayed>> = BinaryHeap::new();
    loop {
        let now = Instant::now();
        while heap.peek().is_some_and(|Reverse(d)| d.at <= now) {
            if let Some(Reverse(d)) = heap.pop() {
                MemNetwork::deliver_now(&boxes, &delivered, d.group, d.msg);
            }
        }
        let wait = heap
            .peek()
            .map_or(Duration::from_millis(100), |Reverse(d)| {
                d.at.saturating_duration_since(now)
            });
        match rx.recv_timeout(wait) {
            Ok(d) => heap.push(Reverse(d)),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        }
    }
}

impl Transport for MemNetwork {
    fn send(&self, group: u64, msg: Message) {
        if self.cut.lock().contains(&(msg.from, msg.to)) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let f = *self.faults.lock();
        if f == NetFaults::default() {
            if !Self::deliver_now(&self.boxes, &self.delivered, group, msg) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        if f.drop_pct > 0 && self.rand() % 100 < u64::from(f.drop_pct) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let copies = if f.dup_pct > 0 && self.rand() % 100 < u64::from(f.dup_pct) {
            self.duplicated.fetch_add(1, Ordering::Relaxed);
            2
        } else {
            1
        };
        for _ in 0..copies {
            let span = f.max_delay.saturating_sub(f.min_delay).as_micros() as u64;
            let delay =
                f.min_delay + Duration::from_micros(if span > 0 { self.rand() % span } else { 0 });
            if delay.is_zero() {
                Self::deliver_now(&self.boxes, &self.delivered, group, msg.clone());
            } else {
                let d = Delayed {
                    at: Instant::now() + delay,
                    seq: self.seq.fetch_add(1, Ordering::Relaxed),
                    group,
                    msg: msg.clone(),
                };
                let _ = self.delay_queue().send(d);
            }
        }
    }
}
