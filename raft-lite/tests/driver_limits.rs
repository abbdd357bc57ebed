//! The driver keeps its requests within bounds: a proposal the log could not take back is
//! refused when proposed, and a ReadIndex request whose caller gave up is dropped.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::*;

/// Counts applied bytes.
#[derive(Clone, Default)]
struct Counter(Arc<Mutex<u64>>);

impl StateMachine for Counter {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        *self.0.lock() += data.len() as u64;
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        Bytes::copy_from_slice(&self.0.lock().to_le_bytes())
    }
    fn restore(&mut self, _index: u64, data: &[u8]) {
        *self.0.lock() = data.try_into().map(u64::from_le_bytes).unwrap_or_default();
    }
}

fn opts(id: u64) -> NodeOptions {
    let mut o = NodeOptions::new(id);
    o.tick = Duration::from_millis(5);
    o.raft.election_tick = 30;
    o
}

fn wait_leader(node: &Node) {
    let t0 = Instant::now();
    while node.status(1).unwrap().role != Role::Leader {
        assert!(t0.elapsed() < Duration::from_secs(30), "no leader");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Regression: a proposal larger than one WAL record could hold was written (and then cut
/// or refused at open); now the node refuses it when proposed and keeps working, and
/// proposals that together exceed a record in one Ready are split and reopen.
#[test]
fn proposal_above_the_log_limit_is_refused_when_proposed() {
    let dir = tempfile::tempdir().unwrap();
    let wal_opts = WalOptions::default().with_max_record_bytes(4096);
    let net = MemNetwork::new(1);
    let wal = Wal::open(dir.path(), wal_opts.clone()).unwrap();
    let limit = wal.max_entry_bytes();
    let mut node = Node::start(opts(1), Box::new(wal), net.clone()).unwrap();
    net.register(1, node.mailbox());
    let sm = Counter::default();
    node.add_group(1, ConfState::with_voters([1]), Box::new(sm.clone()))
        .unwrap();
    node.campaign(1).unwrap();
    wait_leader(&node);
    let t = Duration::from_secs(10);
    let err = node
        .propose(1, Bytes::from(vec![1u8; limit + 1]))
        .wait_applied(t)
        .unwrap_err();
    assert!(
        matches!(err, Error::ProposalTooLarge { size, limit: l } if size == limit + 1 && l == limit),
        "{err}"
    );
    // Many proposals in one Ready, more than a record together, and the largest one.
    let ps: Vec<Proposal> = (0..17)
        .map(|_| node.propose(1, Bytes::from(vec![2u8; 1000])))
        .chain([node.propose(1, Bytes::from(vec![3u8; limit]))])
        .collect();
    for p in ps {
        p.wait_applied(t).unwrap();
    }
    let total = 17 * 1000 + limit as u64;
    assert_eq!(*sm.0.lock(), total);
    node.stop();
    drop(node);
    // Everything acknowledged comes back.
    let wal = Wal::open(dir.path(), wal_opts).unwrap();
    assert_eq!(wal.stats().truncated_tail_bytes, 0);
    let st = wal.load(1).unwrap().unwrap();
    let replayed: usize = st.entries.iter().map(|e| e.data.len()).sum();
    assert_eq!(replayed as u64, total);
}

/// Regression: a ReadIndex request whose caller timed out stayed queued (in the driver and
/// in the core) until the next leadership change, which a leader cut off from its
/// followers without check-quorum may never see.
#[test]
fn timed_out_read_index_is_dropped() {
    let net = MemNetwork::new(2);
    let mut nodes = Vec::new();
    for id in 1..=3 {
        let mut o = opts(id);
        // Without check-quorum a leader cut off from its followers stays leader.
        o.raft.check_quorum = false;
        o.raft.pre_vote = false;
        let node = Node::start(o, Box::new(MemLogStore::new()), net.clone()).unwrap();
        net.register(id, node.mailbox());
        node.add_group(
            1,
            ConfState::with_voters([1, 2, 3]),
            Box::new(Counter::default()),
        )
        .unwrap();
        nodes.push(node);
    }
    nodes[0].campaign(1).unwrap();
    wait_leader(&nodes[0]);
    // The leader's no-op must commit before it serves reads.
    let t0 = Instant::now();
    while nodes[0].read_index(1, Duration::from_secs(1)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "no read served");
    }
    net.partition(&[1], &[2, 3]);
    for _ in 0..5 {
        assert!(matches!(
            nodes[0].read_index(1, Duration::from_millis(20)),
            Err(Error::Timeout)
        ));
    }
    // Dropped at the next tick (5 ms) after each caller gave up.
    let t0 = Instant::now();
    loop {
        let s = nodes[0].status(1).unwrap();
        if s.pending_reads == 0 {
            assert_eq!(s.role, Role::Leader, "still the (stale) leader");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{} reads still queued",
            s.pending_reads
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    net.heal();
}

/// `NodeOptions::default()` leaves the node id 0, which must be set: the node is refused
/// when it starts, naming the field, instead of starting and failing at its first group.
#[test]
fn a_node_without_an_id_is_refused_at_start() {
    let net = MemNetwork::new(1);
    let refused = Node::start(
        NodeOptions::default(),
        Box::new(MemLogStore::new()),
        net.clone(),
    );
    assert!(
        matches!(refused, Err(Error::InvalidConfig { field: "id", .. })),
        "{:?}",
        refused.map(|n| n.id())
    );
    let mut node = Node::start(
        NodeOptions::default().with_id(1),
        Box::new(MemLogStore::new()),
        net,
    )
    .unwrap();
    assert_eq!(node.id(), 1);
    node.stop();
}
