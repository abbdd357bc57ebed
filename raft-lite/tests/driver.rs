//! The multi-group driver with the in-process network and the TCP transport.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::*;

/// A key-value state machine that also records leadership events in log order.
#[derive(Clone, Default)]
struct Kv {
    inner: Arc<Mutex<KvState>>,
}

#[derive(Default)]
struct KvState {
    map: HashMap<Vec<u8>, Vec<u8>>,
    log: Vec<String>,
    applied: u64,
}

impl StateMachine for Kv {
    fn apply(&mut self, index: u64, data: &[u8]) -> Bytes {
        let mut s = self.inner.lock();
        s.applied = index;
        s.log.push(format!("apply {index}"));
        let (k, v) = data.split_at(data.iter().position(|b| *b == b'=').unwrap_or(data.len()));
        let old = s.map.insert(k.to_vec(), v.to_vec());
        Bytes::from(old.unwrap_or_default())
    }
    fn on_leader(&mut self, term: u64) {
        self.inner.lock().log.push(format!("leader {term}"));
    }
    fn on_follower(&mut self, term: u64) {
        self.inner.lock().log.push(format!("follower {term}"));
    }
    fn snapshot(&mut self) -> Bytes {
        let s = self.inner.lock();
        let mut v = Vec::new();
        for (k, x) in &s.map {
            v.extend_from_slice(&(k.len() as u32).to_le_bytes());
            v.extend_from_slice(k);
            v.extend_from_slice(&(x.len() as u32).to_le_bytes());
            v.extend_from_slice(x);
        }
        Bytes::from(v)
    }
    fn restore(&mut self, index: u64, data: &[u8]) {
        let mut s = self.inner.lock();
        s.map.clear();
        s.applied = index;
        s.log.push(format!("restore {index}"));
        let mut i = 0;
        while i < data.len() {
            let n = u32::from_le_bytes(data[i..i + 4].try_into().unwrap()) as usize;
            let k = data[i + 4..i + 4 + n].to_vec();
            i += 4 + n;
            let n = u32::from_le_bytes(data[i..i + 4].try_into().unwrap()) as usize;
            let v = data[i + 4..i + 4 + n].to_vec();
            i += 4 + n;
            s.map.insert(k, v);
        }
    }
}

fn opts(id: u64) -> NodeOptions {
    let mut o = NodeOptions::new(id);
    o.tick = Duration::from_millis(5);
    // Elections after 150-300 ms of silence, not 50-100 ms: CI runs every crate's tests
    // at once on 2 cores, and a driver thread starved for 100 ms must not cost the leader
    // its job in the middle of a test that talks to that leader.
    o.raft.election_tick = 30;
    o
}

/// Errors after which a test retries against whoever leads now (leadership may move on a
/// loaded machine).
fn transient(e: &Error) -> bool {
    e.is_retryable() || matches!(e, Error::Timeout | Error::OutcomeUnknown)
}

/// Like [`wait_leader`], and the leader applied the no-op opening its term (so it accepts
/// conf changes and ReadIndex).
fn wait_ready_leader(c: &Cluster) -> usize {
    let t0 = Instant::now();
    loop {
        let l = wait_leader(&c.nodes);
        if let Ok(s) = c.nodes[l].status(1)
            && c.sms[l]
                .inner
                .lock()
                .log
                .contains(&format!("leader {}", s.term))
        {
            return l;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no ready leader");
        std::thread::sleep(Duration::from_millis(5));
    }
}

struct Cluster {
    net: Arc<MemNetwork>,
    nodes: Vec<Node>,
    sms: Vec<Kv>,
}

fn cluster(n: u64, snapshot_every: u64) -> Cluster {
    let net = MemNetwork::new(7);
    let mut nodes = Vec::new();
    let mut sms = Vec::new();
    for id in 1..=n {
        let mut o = opts(id);
        o.snapshot_every = snapshot_every;
        let node = Node::start(o, Box::new(MemLogStore::new()), net.clone()).unwrap();
        net.register(id, node.mailbox());
        let kv = Kv::default();
        node.add_group(1, ConfState::with_voters(1..=n), Box::new(kv.clone()))
            .unwrap();
        nodes.push(node);
        sms.push(kv);
    }
    Cluster { net, nodes, sms }
}

fn wait_leader(nodes: &[Node]) -> usize {
    let t0 = Instant::now();
    loop {
        for (i, n) in nodes.iter().enumerate() {
            if let Ok(s) = n.status(1)
                && s.role == Role::Leader
                && s.applied >= s.committed
                && s.committed > 0
            {
                return i;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no leader");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Proposes until applied somewhere, retrying through leader changes.
fn put(c: &Cluster, k: &str, v: &str) -> Bytes {
    let t0 = Instant::now();
    loop {
        let l = wait_leader(&c.nodes);
        let p = c.nodes[l].propose(1, Bytes::from(format!("{k}={v}")));
        match p.wait_applied(Duration::from_secs(2)) {
            Ok(r) => return r,
            Err(e) => assert!(t0.elapsed() < Duration::from_secs(30), "put failed: {e}"),
        }
    }
}

fn wait_applied_everywhere(c: &Cluster, index: u64) {
    let t0 = Instant::now();
    while c.sms.iter().any(|s| s.inner.lock().applied < index) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "not applied everywhere"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn driver_replicates_and_returns_results() {
    let c = cluster(3, 0);
    assert_eq!(put(&c, "a", "1"), Bytes::new());
    assert_eq!(put(&c, "a", "=2"), Bytes::from_static(b"=1"));
    let l = wait_leader(&c.nodes);
    let st = c.nodes[l].status(1).unwrap();
    wait_applied_everywhere(&c, st.applied);
    for s in &c.sms {
        assert_eq!(s.inner.lock().map.get(b"a".as_slice()).unwrap(), b"==2");
    }
    // Proposals to a follower fail with NotLeader naming the leader.
    let f = (l + 1) % 3;
    let e = c.nodes[f]
        .propose(1, Bytes::from_static(b"x"))
        .wait_accepted(Duration::from_secs(2));
    assert!(
        matches!(e, Err(Error::NotLeader { leader: Some(_) })),
        "{e:?}"
    );
    // Unknown group.
    let e = c.nodes[l]
        .propose(9, Bytes::new())
        .wait_applied(Duration::from_secs(2));
    assert!(matches!(e, Err(Error::UnknownGroup { group: 9 })));
}

#[test]
fn proposal_stages_are_observable() {
    let c = cluster(3, 0);
    let t0 = Instant::now();
    loop {
        let l = wait_leader(&c.nodes);
        let p = c.nodes[l].propose(1, Bytes::from_static(b"k=v"));
        let r = p.wait_accepted(Duration::from_secs(5)).and_then(|acc| {
            let com = p.wait_committed(Duration::from_secs(5))?;
            assert_eq!(acc, com);
            p.wait_applied(Duration::from_secs(5))
        });
        match r {
            Ok(_) => {
                assert!(p.is_done());
                return;
            }
            Err(e) if transient(&e) && t0.elapsed() < Duration::from_secs(60) => {}
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn leadership_callbacks_follow_log_order() {
    let c = cluster(3, 0);
    put(&c, "x", "1");
    // Retried if leadership moves on its own meanwhile (a loaded machine).
    let t_all = Instant::now();
    let (l, term, to) = 'transfer: loop {
        assert!(t_all.elapsed() < Duration::from_secs(60), "no transfer");
        let l = wait_ready_leader(&c);
        let term = c.nodes[l].status(1).unwrap().term;
        let to = (l + 1) % 3;
        if c.nodes[l].transfer_leader(1, to as u64 + 1).is_err() {
            continue;
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if c.nodes[to].status(1).unwrap().role == Role::Leader {
                break 'transfer (l, term, to);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    put(&c, "y", "2");
    let old = c.sms[l].inner.lock().log.clone();
    assert!(old.contains(&format!("leader {term}")), "{old:?}");
    assert!(old.contains(&format!("follower {term}")), "{old:?}");
    let new = c.sms[to].inner.lock().log.clone();
    let pos = new.iter().position(|s| s.starts_with("leader ")).unwrap();
    // Everything before the new leader's no-op was applied before it was told.
    let st = c.nodes[to].status(1).unwrap();
    let applies_before = new[..pos].iter().filter(|s| s.starts_with("apply")).count();
    assert!(applies_before >= 1, "{new:?}");
    assert!(st.term > term);
}

#[test]
fn faulty_network_still_commits() {
    let c = cluster(3, 0);
    c.net.set_faults(
        NetFaults::default()
            .with_drop_pct(10)
            .with_dup_pct(10)
            .with_min_delay(Duration::from_micros(100))
            .with_max_delay(Duration::from_millis(3)),
    );
    for i in 0..30 {
        put(&c, &format!("k{i}"), "v");
    }
    c.net.set_faults(NetFaults::default());
    let s = c.net.stats();
    assert!(s.dropped > 0 && s.duplicated > 0, "{s:?}");
    let l = wait_leader(&c.nodes);
    wait_applied_everywhere(&c, c.nodes[l].status(1).unwrap().committed);
    for sm in &c.sms {
        assert_eq!(sm.inner.lock().map.len(), 30);
    }
}

#[test]
fn partitioned_leader_is_replaced() {
    let c = cluster(3, 0);
    let l = wait_leader(&c.nodes);
    let others: Vec<u64> = (1..=3u64).filter(|i| *i != l as u64 + 1).collect();
    c.net.partition(&[l as u64 + 1], &others);
    let t0 = Instant::now();
    loop {
        let leaders: Vec<usize> = (0..3)
            .filter(|&i| i != l && c.nodes[i].status(1).unwrap().role == Role::Leader)
            .collect();
        if leaders.len() == 1 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no new leader");
        std::thread::sleep(Duration::from_millis(10));
    }
    c.net.heal();
    put(&c, "after", "heal");
}

#[test]
fn lagging_node_catches_up_by_snapshot() {
    let c = cluster(3, 20);
    let l = wait_leader(&c.nodes);
    let lag = (l + 2) % 3;
    c.net.unregister(lag as u64 + 1);
    for i in 0..80 {
        put(&c, &format!("k{i}"), "v");
    }
    c.net.register(lag as u64 + 1, c.nodes[lag].mailbox());
    let idx = c.nodes[l].status(1).unwrap().applied;
    wait_applied_everywhere(&c, idx);
    let log = c.sms[lag].inner.lock().log.clone();
    assert!(
        log.iter().any(|s| s.starts_with("restore")),
        "caught up without a snapshot?"
    );
    assert_eq!(c.sms[lag].inner.lock().map.len(), 80);
}

#[test]
fn restart_from_wal_recovers_state() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let net = MemNetwork::new(3);
    let start = |id: u64, kv: &Kv| {
        let wal = Wal::open(dirs[id as usize - 1].path(), WalOptions::default()).unwrap();
        let node = Node::start(opts(id), Box::new(wal), net.clone()).unwrap();
        net.register(id, node.mailbox());
        node.add_group(1, ConfState::with_voters([1, 2, 3]), Box::new(kv.clone()))
            .unwrap();
        node
    };
    let sms: Vec<Kv> = (0..3).map(|_| Kv::default()).collect();
    let mut nodes: Vec<Node> = (1..=3).map(|i| start(i, &sms[i as usize - 1])).collect();
    let c = Cluster {
        net: net.clone(),
        nodes: std::mem::take(&mut nodes),
        sms: sms.clone(),
    };
    for i in 0..10 {
        put(&c, &format!("k{i}"), "v");
    }
    let Cluster { mut nodes, .. } = c;
    for n in nodes.iter_mut() {
        n.stop();
    }
    drop(nodes);
    let fresh: Vec<Kv> = (0..3).map(|_| Kv::default()).collect();
    let nodes: Vec<Node> = (1..=3).map(|i| start(i, &fresh[i as usize - 1])).collect();
    let c = Cluster {
        net,
        nodes,
        sms: fresh,
    };
    put(&c, "k10", "v");
    let l = wait_leader(&c.nodes);
    wait_applied_everywhere(&c, c.nodes[l].status(1).unwrap().committed);
    for sm in &c.sms {
        assert_eq!(sm.inner.lock().map.len(), 11, "replayed from the WAL");
    }
}

#[test]
fn membership_change_through_driver() {
    let c = cluster(3, 0);
    let t0 = Instant::now();
    // Retried through leader changes until the removal is in effect on the leader.
    let victim = loop {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "removal never applied"
        );
        let l = wait_ready_leader(&c);
        let st = c.nodes[l].status(1).unwrap();
        if st.conf.voters.len() == 2 {
            let gone = (1..=3u64).find(|v| !st.conf.voters.contains(v)).unwrap();
            break gone as usize - 1;
        }
        let victim = (l + 1) % 3;
        let p = c.nodes[l].propose_conf_change(1, ConfChange::RemoveNode(victim as u64 + 1));
        match p.wait_applied(Duration::from_secs(10)) {
            Ok(_) => {
                assert_eq!(c.nodes[l].status(1).unwrap().conf.voters.len(), 2);
                break victim;
            }
            Err(e) if transient(&e) || matches!(e, Error::ConfChangePending { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    };
    assert!(victim < 3);
    put(&c, "two", "voters");
}

/// Waits up to 10 s for the transport's counters to satisfy `done`.
fn wait_stats(t: &TcpTransport, done: impl Fn(&TcpStats) -> bool) {
    let t0 = Instant::now();
    while !done(&t.stats()) {
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t.stats());
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn tcp_transport_runs_a_cluster_and_refuses_garbage() {
    let addrs: Vec<std::net::SocketAddr> = (0..3)
        .map(|_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        })
        .collect();
    let mut transports = Vec::new();
    let mut nodes = Vec::new();
    let mut sms = Vec::new();
    for id in 1..=3u64 {
        let peers: HashMap<u64, std::net::SocketAddr> = (1..=3u64)
            .filter(|p| *p != id)
            .map(|p| (p, addrs[p as usize - 1]))
            .collect();
        let t = TcpTransport::bind(id, addrs[id as usize - 1], peers).unwrap();
        let node = Node::start(opts(id), Box::new(MemLogStore::new()), t.clone()).unwrap();
        t.serve(node.mailbox()).unwrap();
        let kv = Kv::default();
        node.add_group(1, ConfState::with_voters([1, 2, 3]), Box::new(kv.clone()))
            .unwrap();
        transports.push(t);
        nodes.push(node);
        sms.push(kv);
    }
    let c = Cluster {
        net: MemNetwork::new(0),
        nodes,
        sms,
    };
    for i in 0..20 {
        put(&c, &format!("t{i}"), "v");
    }
    // Garbage: a valid hello, then a frame that is not a message, then an oversized length.
    let mut s = std::net::TcpStream::connect(addrs[2]).unwrap();
    let mut hello = 0x5352_4c54u32.to_le_bytes().to_vec();
    hello.extend_from_slice(&1u64.to_le_bytes());
    s.write_all(&hello).unwrap();
    s.write_all(&5u32.to_le_bytes()).unwrap();
    s.write_all(b"junk!").unwrap();
    s.write_all(&u32::MAX.to_le_bytes()).unwrap();
    s.flush().unwrap();
    wait_stats(&transports[2], |s| s.malformed >= 2);
    // Regression: a frame claiming another sender was delivered. Node 1's connection
    // speaks for node 2 here: a vote request at a far-off term in node 2's name.
    let mut s = std::net::TcpStream::connect(addrs[2]).unwrap();
    s.write_all(&hello).unwrap();
    let spoofed = Message {
        from: 2,
        to: 3,
        term: 1_000,
        kind: MessageKind::Vote {
            last_index: 1_000,
            last_term: 1_000,
            transfer: true,
        },
    };
    let mut body = Vec::new();
    encode_message(1, &spoofed, &mut body);
    s.write_all(&(body.len() as u32).to_le_bytes()).unwrap();
    s.write_all(&body).unwrap();
    s.flush().unwrap();
    wait_stats(&transports[2], |s| s.wrong_sender >= 1);
    assert!(
        c.nodes[2].status(1).unwrap().term < 1_000,
        "the spoofed vote request reached the node"
    );
    // The cluster still works.
    put(&c, "still", "ok");
    for t in &transports {
        t.shutdown();
    }
}

#[test]
fn read_index_on_leader_sees_acknowledged_writes() {
    let c = cluster(3, 0);
    put(&c, "r", "1");
    let t0 = Instant::now();
    let (l, committed_before, idx) = loop {
        let l = wait_ready_leader(&c);
        let committed_before = c.nodes[l].status(1).unwrap().committed;
        match c.nodes[l].read_index(1, Duration::from_secs(5)) {
            Ok(idx) => break (l, committed_before, idx),
            Err(e) if transient(&e) && t0.elapsed() < Duration::from_secs(60) => {}
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        idx >= committed_before,
        "read point {idx} before a known commit {committed_before}"
    );
    assert_eq!(
        c.sms[l].inner.lock().map.get(b"r".as_slice()).unwrap(),
        b"=1"
    );
    assert!(c.sms[l].inner.lock().applied >= idx);
    let f = (l + 1) % 3;
    assert!(matches!(
        c.nodes[f].read_index(1, Duration::from_secs(5)),
        Err(Error::NotLeader { .. })
    ));
}

#[test]
fn many_groups_share_log_writes() {
    let net = MemNetwork::new(11);
    let mut nodes = Vec::new();
    for id in 1..=3u64 {
        // Node 1 campaigns for every group below and all proposals go to it: long
        // election timeouts (1-2 s) keep a starved CI machine from moving leadership.
        let mut o = opts(id);
        o.raft.election_tick = 200;
        let node = Node::start(o, Box::new(MemLogStore::new()), net.clone()).unwrap();
        net.register(id, node.mailbox());
        for g in 1..=8u64 {
            node.add_group(
                g,
                ConfState::with_voters([1, 2, 3]),
                Box::new(Kv::default()),
            )
            .unwrap();
        }
        nodes.push(node);
    }
    for g in 1..=8u64 {
        nodes[0].campaign(g).unwrap();
    }
    let t0 = Instant::now();
    while (1..=8u64).any(|g| nodes[0].status(g).unwrap().committed == 0) {
        assert!(t0.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = nodes[0].stats();
    let mut ps = Vec::new();
    for i in 0..400u64 {
        ps.push(nodes[0].propose(1 + i % 8, Bytes::from(format!("k{i}=v"))));
    }
    for p in ps {
        p.wait_applied(Duration::from_secs(20)).unwrap();
    }
    let after = nodes[0].stats();
    let writes = after.writes - before.writes;
    assert_eq!(after.proposals - before.proposals, 400);
    assert!(
        writes < 200,
        "400 proposals over 8 groups took {writes} log writes"
    );
}

#[test]
fn tcp_peers_reconnect_after_a_node_restarts() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let addrs: Vec<std::net::SocketAddr> = (0..3)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
        })
        .collect();
    let boot = |id: u64, kv: &Kv| {
        let peers: HashMap<u64, std::net::SocketAddr> = (1..=3u64)
            .filter(|p| *p != id)
            .map(|p| (p, addrs[p as usize - 1]))
            .collect();
        let t0 = Instant::now();
        let t = loop {
            match TcpTransport::bind(id, addrs[id as usize - 1], peers.clone()) {
                Ok(t) => break t,
                Err(e) => {
                    assert!(t0.elapsed() < Duration::from_secs(10), "rebind: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        };
        let wal = Wal::open(dirs[id as usize - 1].path(), WalOptions::default()).unwrap();
        let node = Node::start(opts(id), Box::new(wal), t.clone()).unwrap();
        t.serve(node.mailbox()).unwrap();
        node.add_group(1, ConfState::with_voters([1, 2, 3]), Box::new(kv.clone()))
            .unwrap();
        (node, t)
    };
    let sms: Vec<Kv> = (0..3).map(|_| Kv::default()).collect();
    let mut parts: Vec<(Node, Arc<TcpTransport>)> = (1..=3u64)
        .map(|id| boot(id, &sms[id as usize - 1]))
        .collect();
    // Make node 1 the leader so that node 3 can go away without an election.
    parts[0].0.campaign(1).unwrap();
    let (nodes, transports): (Vec<Node>, Vec<Arc<TcpTransport>>) = parts.drain(..).unzip();
    let c = Cluster {
        net: MemNetwork::new(0),
        nodes,
        sms: sms.clone(),
    };
    for i in 0..10 {
        put(&c, &format!("a{i}"), "v");
    }
    let Cluster { mut nodes, .. } = c;
    let mut transports = transports;
    // Node 3 goes down: its connections close.
    let mut n3 = nodes.pop().unwrap();
    n3.stop();
    transports[2].shutdown();
    drop(n3);
    let old3 = transports.pop().unwrap();
    let connects_before = transports[0].stats().connects + transports[1].stats().connects;
    let c = Cluster {
        net: MemNetwork::new(0),
        nodes,
        sms: sms[..2].to_vec(),
    };
    for i in 0..10 {
        put(&c, &format!("b{i}"), "v");
    }
    // Node 3 comes back on the same address with its WAL; peers reconnect to it.
    let fresh = Kv::default();
    let (n3, t3) = boot(3, &fresh);
    let Cluster { mut nodes, .. } = c;
    nodes.push(n3);
    transports.push(t3);
    let c = Cluster {
        net: MemNetwork::new(0),
        nodes,
        sms: vec![sms[0].clone(), sms[1].clone(), fresh.clone()],
    };
    put(&c, "c", "v");
    let t0 = Instant::now();
    while fresh.inner.lock().map.len() < 21 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "node 3 did not catch up: {}",
            fresh.inner.lock().map.len()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let connects_after = transports[0].stats().connects + transports[1].stats().connects;
    assert!(connects_after > connects_before, "peers reconnected");
    for t in transports.iter().chain(std::iter::once(&old3)) {
        t.shutdown();
    }
}

/// Regression: a proposal accepted by a leader that then loses leadership (cut off, it
/// steps down by check-quorum) was never resolved while the group stayed idle: its waiter
/// slept until its own timeout. It now fails at once with `OutcomeUnknown`.
#[test]
fn proposal_waiter_is_told_when_leadership_is_lost() {
    let c = cluster(3, 0);
    let l = wait_leader(&c.nodes);
    let lid = l as u64 + 1;
    let others: Vec<u64> = (1..=3u64).filter(|i| *i != lid).collect();
    c.net.partition(&[lid], &others);
    let p = c.nodes[l].propose(1, Bytes::from_static(b"cut=off"));
    // Accepted (or refused if the step-down already happened: then nothing to test).
    if p.wait_accepted(Duration::from_secs(20)).is_err() {
        c.net.heal();
        return;
    }
    let t0 = Instant::now();
    let r = p.wait_applied(Duration::from_secs(60));
    assert!(
        matches!(r, Err(Error::OutcomeUnknown)),
        "{r:?} after {:?}",
        t0.elapsed()
    );
    c.net.heal();
}

/// Regression: a peer that stops reading (vanished without a reset) held the writer in
/// `write_all` forever, so it never reconnected. With a write timeout the blocked
/// connection is dropped and dialled again.
#[test]
fn tcp_writer_gives_up_on_a_peer_that_stops_reading() {
    let fake = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let fake_addr = fake.local_addr().unwrap();
    let accepted = Arc::new(Mutex::new(Vec::new()));
    {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            // Accept and hold every connection, never reading from it.
            for s in fake.incoming().map_while(|s| s.ok()) {
                accepted.lock().push(s);
            }
        });
    }
    let t = TcpTransport::bind(
        1,
        "127.0.0.1:0".parse().unwrap(),
        HashMap::from([(2, fake_addr)]),
    )
    .unwrap();
    t.set_write_timeout(Duration::from_millis(200));
    let node = Node::start(opts(1), Box::new(MemLogStore::new()), t.clone()).unwrap();
    t.serve(node.mailbox()).unwrap();
    let payload = Bytes::from(vec![7u8; 1 << 20]);
    let big = Message {
        from: 1,
        to: 2,
        term: 1,
        kind: MessageKind::Append {
            prev_index: 0,
            prev_term: 0,
            entries: vec![Entry {
                term: 1,
                index: 1,
                kind: EntryKind::Normal,
                data: payload,
            }],
            commit: 0,
        },
    };
    let t0 = Instant::now();
    while accepted.lock().len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "never reconnected: {:?}",
            t.stats()
        );
        t.send(9, big.clone());
        std::thread::sleep(Duration::from_millis(20));
    }
    t.shutdown();
}

/// A state machine that panics on one payload.
struct Panicky;

impl StateMachine for Panicky {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        assert!(
            data != b"boom",
            "state machine refuses boom (intended by the test)"
        );
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        Bytes::new()
    }
    fn restore(&mut self, _index: u64, _data: &[u8]) {}
}

/// Regression: when the driver thread died (a panicking state machine), waiting
/// proposals were never told and slept until their own timeout.
#[test]
fn proposal_waiters_learn_when_the_driver_thread_dies() {
    let net = MemNetwork::new(21);
    let node = Node::start(opts(1), Box::new(MemLogStore::new()), net.clone()).unwrap();
    net.register(1, node.mailbox());
    node.add_group(1, ConfState::with_voters([1]), Box::new(Panicky))
        .unwrap();
    node.campaign(1).unwrap();
    let t0 = Instant::now();
    loop {
        let p = node.propose(1, Bytes::from_static(b"fine"));
        if p.wait_applied(Duration::from_secs(5)).is_ok() {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "never led");
    }
    // Queue one waiter behind the fatal entry: both must hear `Stopped`.
    let boom = node.propose(1, Bytes::from_static(b"boom"));
    let after = node.propose(1, Bytes::from_static(b"after"));
    let t0 = Instant::now();
    for p in [&boom, &after] {
        let r = p.wait_applied(Duration::from_secs(60));
        assert!(matches!(r, Err(Error::Stopped)), "{r:?}");
    }
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
}

/// A group added with `add_group_nowait` and an initial snapshot (as a region split seeds a
/// new region on every replica) starts from that snapshot's data and position, serves
/// proposals, and after a restart of every node comes back from the seeded snapshot plus its
/// log, not from an empty state.
#[test]
fn seeded_group_starts_from_its_initial_snapshot_and_survives_a_restart() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let seed = Snapshot {
        meta: SnapshotMeta {
            index: 5,
            term: 5,
            conf: ConfState::with_voters(1..=3),
        },
        // The Kv state machine's snapshot format: one pair "a" = "seeded".
        data: {
            let mut v = Vec::new();
            v.extend_from_slice(&1u32.to_le_bytes());
            v.extend_from_slice(b"a");
            v.extend_from_slice(&6u32.to_le_bytes());
            v.extend_from_slice(b"seeded");
            Bytes::from(v)
        },
    };
    for round in 0..2 {
        let net = MemNetwork::new(5);
        let mut nodes = Vec::new();
        let mut sms = Vec::new();
        for id in 1..=3u64 {
            let wal = Wal::open(dirs[id as usize - 1].path(), WalOptions::default()).unwrap();
            let node = Node::start(opts(id), Box::new(wal), net.clone()).unwrap();
            net.register(id, node.mailbox());
            let kv = Kv::default();
            node.add_group_nowait(
                9,
                ConfState::with_voters(1..=3),
                Box::new(kv.clone()),
                Some(seed.clone()),
            );
            nodes.push(node);
            sms.push(kv);
        }
        let t0 = Instant::now();
        let leader = loop {
            if let Some(i) = (0..3).find(|i| {
                nodes[*i]
                    .status(9)
                    .is_ok_and(|s| s.role == Role::Leader && s.applied > 5)
            }) {
                break i;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no leader for the seeded group"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        let key = format!("b{round}=v");
        nodes[leader]
            .propose(9, Bytes::from(key.into_bytes()))
            .wait_applied(Duration::from_secs(10))
            .unwrap();
        let s = sms[leader].inner.lock();
        assert_eq!(
            s.map.get(&b"a"[..]),
            Some(&b"seeded".to_vec()),
            "round {round}"
        );
        assert!(
            s.map.contains_key(&b"b0"[..]),
            "round {round}: {:?}",
            s.map.keys()
        );
        assert!(s.applied > 5);
    }
}
