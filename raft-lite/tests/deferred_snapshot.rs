//! A state machine may hand back its snapshot as a closure over a consistent view
//! (`StateMachine::snapshot_deferred`): the node's background snapshot writer encodes it,
//! so a slow encoding stalls neither the driver thread nor the other groups of the node,
//! and an encoding above `MAX_BYTES_LEN` is skipped without stopping the node.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::*;

mod snap_support;
use snap_support::wait_until;

const SLOW: u64 = 1;
const OTHER: u64 = 2;
const SNAPSHOT_EVERY: u64 = 20;
/// How long the slow group's encoding takes.
const ENCODE_DELAY: Duration = Duration::from_millis(1000);

/// A restored snapshot's index and values.
type Restored = (u64, Vec<u64>);

/// Counts of deferred encodings started and finished, shared with the test.
#[derive(Debug, Clone, Default)]
struct Probe {
    started: Arc<AtomicU64>,
    finished: Arc<AtomicU64>,
    /// The last snapshot restored: its index and the values it held.
    restored: Arc<Mutex<Option<Restored>>>,
}

/// Applies each entry's 8-byte value into a list; the snapshot is the list.
#[derive(Debug, Clone)]
struct ListSm {
    values: Vec<u64>,
    probe: Probe,
    /// Sleep inside the deferred encoding.
    delay: Duration,
    /// Zero bytes appended by the encoding (to exceed the limit).
    pad: usize,
}

impl ListSm {
    fn new(probe: &Probe, delay: Duration, pad: usize) -> ListSm {
        ListSm {
            values: Vec::new(),
            probe: probe.clone(),
            delay,
            pad,
        }
    }
}

fn encode(values: &[u64], pad: usize) -> Bytes {
    // Zeroed allocation: the padding is never touched, so cheap even at 256 MiB.
    let mut v = vec![0u8; values.len() * 8 + pad];
    for (x, c) in values.iter().zip(v.chunks_exact_mut(8)) {
        c.copy_from_slice(&x.to_le_bytes());
    }
    Bytes::from(v)
}

impl StateMachine for ListSm {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        self.values
            .push(u64::from_le_bytes(data.try_into().unwrap()));
        Bytes::new()
    }

    fn snapshot(&mut self) -> Bytes {
        encode(&self.values, self.pad)
    }

    fn snapshot_deferred(&mut self) -> Box<dyn FnOnce() -> Bytes + Send> {
        let view = self.values.clone();
        let (probe, delay, pad) = (self.probe.clone(), self.delay, self.pad);
        Box::new(move || {
            probe.started.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(delay);
            let b = encode(&view, pad);
            probe.finished.fetch_add(1, Ordering::SeqCst);
            b
        })
    }

    fn restore(&mut self, index: u64, data: &[u8]) {
        self.values = data
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        *self.probe.restored.lock() = Some((index, self.values.clone()));
    }
}

fn start(dir: &Path, groups: Vec<(u64, ListSm)>) -> Node {
    let wal = Wal::open_with(Arc::new(StdFs), dir, WalOptions::default()).unwrap();
    let mut o = NodeOptions::new(1);
    o.tick = Duration::from_millis(5);
    o.snapshot_every = SNAPSHOT_EVERY;
    let node = Node::start(o, Box::new(wal), MemNetwork::new(1)).unwrap();
    for (g, sm) in groups {
        node.add_group(g, ConfState::with_voters([1]), Box::new(sm))
            .unwrap();
        node.campaign(g).unwrap();
    }
    node
}

/// Proposes `value` to `group` and waits until applied; returns how long that took.
fn put(node: &Node, group: u64, value: u64) -> Duration {
    let mut last = None;
    // Retries while the group elects itself.
    for _ in 0..500 {
        let t0 = Instant::now();
        match node
            .propose(group, Bytes::copy_from_slice(&value.to_le_bytes()))
            .wait_applied(Duration::from_secs(10))
        {
            Ok(_) => return t0.elapsed(),
            Err(e) if e.is_retryable() => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("put {value} into group {group}: {e}"),
        }
    }
    panic!("put {value} into group {group}: {last:?}");
}

/// Regression: the driver thread encoded a group's snapshot itself
/// (`StateMachine::snapshot`), so every group of the node stalled for the encoding (50-125
/// ms for a 16 MiB region on a loaded machine, timed by hand). With an encoding that takes 1 s, every
/// proposal (of the other group, and of the snapshotting group itself) must complete in
/// well under that while it runs, nothing is recorded before it finished, and the recorded snapshot holds exactly the state at its index.
#[test]
fn other_groups_commit_while_a_snapshot_is_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let mut node = start(
        dir.path(),
        vec![
            (SLOW, ListSm::new(&probe, ENCODE_DELAY, 0)),
            (OTHER, ListSm::new(&Probe::default(), Duration::ZERO, 0)),
        ],
    );
    put(&node, OTHER, 0);
    put(&node, SLOW, 0);
    // Every proposal from here on, of either group, completes while the encoding may run.
    let mut worst = Duration::ZERO;
    for v in 1..SNAPSHOT_EVERY {
        worst = worst.max(put(&node, SLOW, v));
    }
    wait_until("the encoding starts", || {
        probe.started.load(Ordering::SeqCst) == 1
    });
    for v in 1..=5 {
        worst = worst.max(put(&node, OTHER, v));
    }
    // Applied after the view was taken: must not be in the snapshot.
    worst = worst.max(put(&node, SLOW, 1000));
    assert!(
        worst < ENCODE_DELAY / 2,
        "a proposal took {worst:?} while a snapshot was encoded"
    );
    assert_eq!(
        probe.finished.load(Ordering::SeqCst),
        0,
        "the encoding finished before the other group's proposals: the test proves nothing"
    );
    assert_eq!(node.stats().snapshots, 0, "recorded before it was encoded");
    wait_until("the snapshot is recorded", || node.stats().snapshots == 1);
    assert_eq!(probe.finished.load(Ordering::SeqCst), 1);
    assert_eq!(node.stats().snapshot_failures, 0);
    node.stop();

    // Replay restores the snapshot: exactly the values applied up to its index (entry 1
    // is the leader's no-op).
    let probe2 = Probe::default();
    let mut node = start(
        dir.path(),
        vec![
            (SLOW, ListSm::new(&probe2, Duration::ZERO, 0)),
            (OTHER, ListSm::new(&Probe::default(), Duration::ZERO, 0)),
        ],
    );
    let (index, values) = probe2.restored.lock().clone().unwrap();
    assert!(index >= SNAPSHOT_EVERY, "snapshot at {index}");
    assert_eq!(values, (0..index - 1).collect::<Vec<_>>());
    node.stop();
}

/// A deferred encoding above `MAX_BYTES_LEN` is found too large on the writer: no file is
/// written, nothing is recorded, the node keeps committing, and a snapshot is tried again
/// after another `snapshot_every` entries.
#[test]
fn a_deferred_snapshot_above_the_limit_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::default();
    let mut node = start(
        dir.path(),
        vec![(SLOW, ListSm::new(&probe, Duration::ZERO, MAX_BYTES_LEN))],
    );
    for v in 0..SNAPSHOT_EVERY {
        put(&node, SLOW, v);
    }
    wait_until("the oversized snapshot is refused", || {
        node.stats().snapshot_failures == 1
    });
    assert_eq!(node.stats().snapshots, 0);
    let files = std::fs::read_dir(dir.path().join("snap"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(files, 0, "a file was written for a snapshot over the limit");
    // Not retried before another `snapshot_every` entries; the node still commits.
    for v in SNAPSHOT_EVERY..2 * SNAPSHOT_EVERY - 2 {
        put(&node, SLOW, v);
    }
    assert_eq!(probe.started.load(Ordering::SeqCst), 1);
    for v in 2 * SNAPSHOT_EVERY - 2..2 * SNAPSHOT_EVERY + 2 {
        put(&node, SLOW, v);
    }
    wait_until("the snapshot is tried again", || {
        node.stats().snapshot_failures == 2
    });
    assert_eq!(node.stats().snapshots, 0);
    node.stop();
}
