//! A whole 3-node cluster (driver, WAL per node, in-process network) runs in a child
//! process that proposes and reports every proposal the leader applied; the parent kills
//! the child with SIGKILL mid-stream, restarts the cluster from the three data
//! directories and checks that every acknowledged proposal is still in the replicated
//! state (committed entries survive a crash of every node at once).
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::*;
use surge_testkit::CrashChild;

const ROLE: &str = "RAFT_LITE_CLUSTER_CHILD_DIR";

#[derive(Clone, Default)]
struct Set(Arc<Mutex<BTreeSet<u64>>>);

impl StateMachine for Set {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        if let Ok(b) = <[u8; 8]>::try_from(data) {
            self.0.lock().insert(u64::from_le_bytes(b));
        }
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        let mut v = Vec::new();
        for x in self.0.lock().iter() {
            v.extend_from_slice(&x.to_le_bytes());
        }
        Bytes::from(v)
    }
    fn restore(&mut self, _index: u64, data: &[u8]) {
        let mut s = self.0.lock();
        s.clear();
        for c in data.chunks_exact(8) {
            s.insert(u64::from_le_bytes(c.try_into().unwrap()));
        }
    }
}

fn start(base: &std::path::Path) -> (Vec<Node>, Vec<Set>) {
    let net = MemNetwork::new(5);
    let mut nodes = Vec::new();
    let mut sets = Vec::new();
    for id in 1..=3u64 {
        let mut o = NodeOptions::new(id);
        o.tick = Duration::from_millis(5);
        // 150-300 ms election timeouts: robust to a starved driver thread on loaded CI.
        o.raft.election_tick = 30;
        o.snapshot_every = 50;
        let wal = Wal::open(
            base.join(format!("n{id}")),
            WalOptions::default().with_max_segment_bytes(16 << 10),
        )
        .unwrap();
        let n = Node::start(o, Box::new(wal), net.clone()).unwrap();
        net.register(id, n.mailbox());
        let s = Set::default();
        n.add_group(1, ConfState::with_voters([1, 2, 3]), Box::new(s.clone()))
            .unwrap();
        nodes.push(n);
        sets.push(s);
    }
    (nodes, sets)
}

fn leader(nodes: &[Node]) -> usize {
    let t0 = Instant::now();
    loop {
        for (i, n) in nodes.iter().enumerate() {
            if let Ok(s) = n.status(1)
                && s.role == Role::Leader
                && s.committed > 0
                && s.applied >= s.committed
            {
                return i;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no leader");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn child(dir: &str) {
    let (nodes, _sets) = start(&PathBuf::from(dir));
    let mut out = std::io::stdout();
    let mut next: u64 = std::env::var("RAFT_LITE_CLUSTER_FIRST")
        .unwrap()
        .parse()
        .unwrap();
    let mut acked = 0;
    loop {
        let l = leader(&nodes);
        let p = nodes[l].propose(1, Bytes::copy_from_slice(&next.to_le_bytes()));
        if p.wait_applied(Duration::from_secs(5)).is_ok() {
            writeln!(out, "ack {next}").unwrap();
            out.flush().unwrap();
            next += 1;
            acked += 1;
            if acked == 100 {
                writeln!(out, "reached").unwrap();
                out.flush().unwrap();
            }
        }
    }
}

#[test]
fn sigkill_of_the_whole_cluster_loses_no_acknowledged_proposal() {
    if let Ok(dir) = std::env::var(ROLE) {
        child(&dir);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Vec<u64> = Vec::new();
    for round in 0..2u64 {
        let first = round * 1_000_000;
        let mut c = CrashChild::spawn(
            "sigkill_of_the_whole_cluster_loses_no_acknowledged_proposal",
            [
                (ROLE, dir.path().display().to_string()),
                ("RAFT_LITE_CLUSTER_FIRST", first.to_string()),
            ],
        );
        let mut track = |line: &str| {
            if let Some(n) = line.strip_prefix("ack ") {
                acked.push(n.parse().unwrap());
            }
        };
        c.wait_reached(&mut track);
        c.kill_after(Duration::from_millis(20 + 30 * round), &mut track);
        assert!(
            acked.len() as u64 >= 100 * (round + 1),
            "child made progress"
        );
        // Restart all three from disk; the new leader's state must hold every ack.
        let (nodes, sets) = start(dir.path());
        let marker = u64::MAX - round;
        // Retried through leader changes (a loaded machine may move leadership).
        let t0 = Instant::now();
        let l = loop {
            let l = leader(&nodes);
            match nodes[l]
                .propose(1, Bytes::copy_from_slice(&marker.to_le_bytes()))
                .wait_applied(Duration::from_secs(10))
            {
                Ok(_) => break l,
                Err(e) => assert!(
                    t0.elapsed() < Duration::from_secs(60),
                    "marker never applied: {e}"
                ),
            }
        };
        let have = sets[l].0.lock().clone();
        for a in &acked {
            assert!(
                have.contains(a),
                "acknowledged proposal {a} lost (round {round})"
            );
        }
        drop(nodes);
    }
}
