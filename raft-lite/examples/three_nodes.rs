//! A 3-node group in one process: each node has its own driver thread, a durable `Wal` in
//! a temporary directory and a small key-value state machine; the nodes talk over an
//! in-process `MemNetwork`. The program elects a leader, writes through it, waits for the
//! writes to be applied everywhere, transfers leadership, writes again through the new
//! leader, and reads with ReadIndex.
//!
//! `cargo run -p surge-raft-lite --example three_nodes`

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::{
    ConfState, Error, MemNetwork, Node, NodeId, NodeOptions, Role, StateMachine, Wal, WalOptions,
};

/// The group this example replicates.
const GROUP: u64 = 1;
/// How long any single wait may take before the example gives up.
const WAIT: Duration = Duration::from_secs(10);

/// A key-value map; an entry is `key=value`. Shared with `main` so it can look inside.
#[derive(Clone, Default)]
struct Kv(Arc<Mutex<BTreeMap<String, String>>>);

impl StateMachine for Kv {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        let text = String::from_utf8_lossy(data);
        let (k, v) = text.split_once('=').unwrap_or((&text, ""));
        let old = self.0.lock().insert(k.to_owned(), v.to_owned());
        // The proposer gets the previous value back.
        Bytes::from(old.unwrap_or_default())
    }

    fn snapshot(&mut self) -> Bytes {
        let map = self.0.lock();
        let lines: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Bytes::from(lines.join("\n"))
    }

    fn restore(&mut self, _index: u64, data: &[u8]) {
        let text = String::from_utf8_lossy(data);
        let mut map = self.0.lock();
        map.clear();
        for line in text.lines() {
            if let Some((k, v)) = line.split_once('=') {
                map.insert(k.to_owned(), v.to_owned());
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dirs: Vec<tempfile::TempDir> = (0..3)
        .map(|_| tempfile::tempdir())
        .collect::<Result<_, _>>()?;
    let net = MemNetwork::new(1);
    let mut nodes = Vec::new();
    let mut maps = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let id = i as NodeId + 1;
        let wal = Wal::open(dir.path(), WalOptions::default())?;
        let node = Node::start(NodeOptions::new(id), Box::new(wal), net.clone())?;
        net.register(id, node.mailbox());
        let kv = Kv::default();
        node.add_group(
            GROUP,
            ConfState::with_voters([1, 2, 3]),
            Box::new(kv.clone()),
        )?;
        println!("node {id}: started, WAL in {}", dir.path().display());
        nodes.push(node);
        maps.push(kv);
    }

    // Elections happen by themselves after a randomized timeout; ask node 1 to go first.
    nodes[0].campaign(GROUP)?;
    let leader = wait_for_leader(&nodes)?;
    println!("node {leader} leads group {GROUP}");

    for i in 1..=5 {
        put(&nodes, &format!("k{i}"), &format!("v{i}"))?;
    }
    wait_applied_everywhere(&nodes, &maps, 5)?;
    println!("all three nodes applied k1..k5");

    // Hand leadership to another node: it is caught up first, then told to campaign.
    let target = if leader == 2 { 3 } else { 2 };
    println!("transferring leadership from node {leader} to node {target}");
    nodes[leader as usize - 1].transfer_leader(GROUP, target)?;
    let t0 = Instant::now();
    while wait_for_leader(&nodes)? != target {
        if t0.elapsed() > WAIT {
            return Err(format!("node {target} did not take over").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("node {target} leads group {GROUP} now");

    let previous = put(&nodes, "k1", "changed")?;
    println!("k1 = changed (previous value {previous:?})");
    put(&nodes, "k6", "v6")?;
    wait_applied_everywhere(&nodes, &maps, 6)?;

    // A linearizable read: once `read_index` returns, the leader's state machine has
    // applied everything committed when the read started.
    let leader = wait_for_leader(&nodes)?;
    let index = nodes[leader as usize - 1].read_index(GROUP, WAIT)?;
    let k1 = maps[leader as usize - 1].0.lock().get("k1").cloned();
    println!("ReadIndex on node {leader}: read point {index}, k1 = {k1:?}");
    for (i, kv) in maps.iter().enumerate() {
        println!("node {}: {:?}", i + 1, kv.0.lock());
    }
    for mut node in nodes {
        node.stop();
    }
    println!("done");
    Ok(())
}

/// The node that leads the group (by its own status), waiting for one to appear.
fn wait_for_leader(nodes: &[Node]) -> Result<NodeId, Error> {
    let t0 = Instant::now();
    loop {
        for n in nodes {
            if n.status(GROUP)?.role == Role::Leader {
                return Ok(n.id());
            }
        }
        if t0.elapsed() > WAIT {
            return Err(Error::Timeout);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Proposes `key=value` on the current leader and waits until it is applied there;
/// returns the previous value. Retries on a leader change.
fn put(nodes: &[Node], key: &str, value: &str) -> Result<String, Error> {
    let t0 = Instant::now();
    loop {
        let leader = wait_for_leader(nodes)?;
        let data = Bytes::from(format!("{key}={value}"));
        match nodes[leader as usize - 1]
            .propose(GROUP, data)
            .wait_applied(WAIT)
        {
            Ok(prev) => {
                println!("  put {key}={value} through node {leader}");
                return Ok(String::from_utf8_lossy(&prev).into_owned());
            }
            Err(e) if e.is_retryable() && t0.elapsed() < WAIT => {
                println!("  put {key}: {e}; retrying");
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits until every node's map holds `keys` keys.
fn wait_applied_everywhere(nodes: &[Node], maps: &[Kv], keys: usize) -> Result<(), Error> {
    let t0 = Instant::now();
    while maps.iter().any(|kv| kv.0.lock().len() < keys) {
        if t0.elapsed() > WAIT {
            return Err(Error::Timeout);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let applied: Vec<u64> = nodes
        .iter()
        .map(|n| n.status(GROUP).map(|s| s.applied))
        .collect::<Result<_, _>>()?;
    println!("  applied index per node: {applied:?}");
    Ok(())
}
