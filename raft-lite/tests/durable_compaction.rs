//! Groups of a state machine that keeps its state durably itself
//! (`StateMachine::durable_state`): the log is compacted with a small marker once the state
//! machine made its state durable (never a copy of the state), by entry count or by bytes;
//! a restart replays only the log after the durable index; a follower behind the log's
//! start gets a full snapshot built for it on demand.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use surge_raft_lite::*;

const MARKER: &[u8] = b"durable-marker";

/// An applied index and the map as of it.
type State = (u64, BTreeMap<u64, Vec<u8>>);

/// A map of `u64 -> bytes` with a "disk" copy written only when the driver asks for a
/// compaction marker; what a restart finds is the disk copy.
#[derive(Clone, Default)]
struct DurableMap {
    live: Arc<Mutex<State>>,
    disk: Arc<Mutex<State>>,
    events: Arc<Mutex<Vec<String>>>,
}

impl DurableMap {
    /// A state machine restarted from this one's disk copy.
    fn restarted(&self) -> DurableMap {
        let disk = self.disk.lock().clone();
        DurableMap {
            live: Arc::new(Mutex::new(disk.clone())),
            disk: Arc::new(Mutex::new(disk)),
            events: Arc::default(),
        }
    }

    fn len(&self) -> usize {
        self.live.lock().1.len()
    }

    fn applied(&self) -> u64 {
        self.live.lock().0
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().clone()
    }
}

fn encode(map: &BTreeMap<u64, Vec<u8>>) -> Bytes {
    let mut v = Vec::new();
    for (k, x) in map {
        v.extend_from_slice(&k.to_le_bytes());
        v.extend_from_slice(&(x.len() as u32).to_le_bytes());
        v.extend_from_slice(x);
    }
    Bytes::from(v)
}

fn decode(mut data: &[u8]) -> BTreeMap<u64, Vec<u8>> {
    let mut map = BTreeMap::new();
    while !data.is_empty() {
        let k = u64::from_le_bytes(data[..8].try_into().unwrap());
        let n = u32::from_le_bytes(data[8..12].try_into().unwrap()) as usize;
        map.insert(k, data[12..12 + n].to_vec());
        data = &data[12 + n..];
    }
    map
}

impl StateMachine for DurableMap {
    fn apply(&mut self, index: u64, data: &[u8]) -> Bytes {
        let mut s = self.live.lock();
        s.0 = index;
        if data.len() >= 8 {
            let k = u64::from_le_bytes(data[..8].try_into().unwrap());
            s.1.insert(k, data[8..].to_vec());
        }
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        encode(&self.live.lock().1)
    }
    fn restore(&mut self, index: u64, data: &[u8]) {
        if data == MARKER {
            let held = self.disk.lock().0;
            self.events
                .lock()
                .push(format!("marker {index} held {held}"));
            assert!(
                held >= index,
                "marker at {index} but the state machine holds only {held} durably"
            );
            return;
        }
        self.events.lock().push(format!("full {index}"));
        let map = decode(data);
        *self.live.lock() = (index, map.clone());
        *self.disk.lock() = (index, map);
    }
    fn durable_state(&self) -> bool {
        true
    }
    fn compaction_marker(&mut self) -> Box<dyn FnOnce() -> Result<Bytes, String> + Send> {
        let (live, disk) = (self.live.clone(), self.disk.clone());
        Box::new(move || {
            // Everything applied so far (at least up to the marker's index) made durable.
            let now = live.lock().clone();
            *disk.lock() = now;
            Ok(Bytes::from_static(MARKER))
        })
    }
    fn durable_applied(&self) -> u64 {
        self.disk.lock().0
    }
}

fn opts(id: u64, every: u64, bytes: u64) -> NodeOptions {
    let mut o = NodeOptions::new(id).with_compact_log_bytes(bytes);
    o.tick = Duration::from_millis(5);
    o.raft.election_tick = 30;
    o.snapshot_every = every;
    o
}

fn start(
    dir: &Path,
    id: u64,
    net: &Arc<MemNetwork>,
    sm: &DurableMap,
    every: u64,
    bytes: u64,
) -> Node {
    let wal = Wal::open(dir, WalOptions::default()).unwrap();
    let node = Node::start(opts(id, every, bytes), Box::new(wal), net.clone()).unwrap();
    net.register(id, node.mailbox());
    node.add_group(1, ConfState::with_voters([1, 2, 3]), Box::new(sm.clone()))
        .unwrap();
    node
}

/// Three nodes of one group over WALs in their own directories, each with a fresh state
/// machine; `every` and `bytes` as in [`opts`].
struct Trio {
    dirs: Vec<tempfile::TempDir>,
    net: Arc<MemNetwork>,
    sms: Vec<DurableMap>,
}

impl Trio {
    fn new(seed: u64) -> Trio {
        Trio {
            dirs: (0..3).map(|_| tempfile::tempdir().unwrap()).collect(),
            net: MemNetwork::new(seed),
            sms: (0..3).map(|_| DurableMap::default()).collect(),
        }
    }

    /// Starts the three nodes over `sms` (this trio's, or restarted copies of them).
    fn start(&self, sms: &[DurableMap], every: u64, bytes: u64) -> Vec<Node> {
        (1..=3)
            .map(|id| {
                let i = id as usize - 1;
                start(self.dirs[i].path(), id, &self.net, &sms[i], every, bytes)
            })
            .collect()
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn leader(nodes: &[Node]) -> usize {
    let mut found = None;
    wait_until("a leader", || {
        found = nodes.iter().position(|n| {
            n.status(1).is_ok_and(|s| {
                s.role == Role::Leader && s.committed > 0 && s.applied >= s.committed
            })
        });
        found.is_some()
    });
    found.unwrap()
}

fn put(nodes: &[Node], k: u64, value: &[u8]) {
    let mut data = k.to_le_bytes().to_vec();
    data.extend_from_slice(value);
    let t0 = Instant::now();
    loop {
        let l = leader(nodes);
        match nodes[l]
            .propose(1, Bytes::from(data.clone()))
            .wait_applied(Duration::from_secs(2))
        {
            Ok(_) => return,
            Err(e) => assert!(t0.elapsed() < Duration::from_secs(30), "put {k}: {e}"),
        }
    }
}

/// The sizes of the snapshot files in `dir/snap`.
fn snapshot_file_sizes(dir: &Path) -> Vec<u64> {
    std::fs::read_dir(dir.join("snap"))
        .map(|d| d.map(|e| e.unwrap().metadata().unwrap().len()).collect())
        .unwrap_or_default()
}

#[test]
fn the_log_is_compacted_with_markers_and_a_lagging_follower_gets_a_snapshot_built_for_it() {
    let trio = Trio::new(11);
    let (net, sms) = (&trio.net, &trio.sms);
    let nodes = trio.start(sms, 20, 0);
    let l = leader(&nodes);
    let lag = (l + 1) % 3;
    net.unregister(lag as u64 + 1);
    let value = vec![7u8; 4096];
    // The leader keeps the log for the stopped follower until it holds four times
    // `snapshot_every` entries: then it compacts past it.
    for k in 0..250 {
        put(&nodes, k, &value);
    }
    wait_until("compactions on the leader", || {
        nodes[l].stats().snapshots >= 3
    });
    // Markers, not copies of ~1 MiB of state.
    let sizes = snapshot_file_sizes(trio.dirs[l].path());
    assert!(
        !sizes.is_empty() && sizes.iter().all(|&n| n < 1024),
        "snapshot files {sizes:?}"
    );
    assert!(
        sms[l].disk.lock().0 >= 60,
        "the marker made the state durable first"
    );

    net.register(lag as u64 + 1, nodes[lag].mailbox());
    put(&nodes, 1000, b"after");
    let target = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("the follower caught up", || sms[lag].applied() >= target);
    assert_eq!(sms[lag].len(), 251);
    assert!(
        sms[lag].events().iter().any(|e| e.starts_with("full ")),
        "{:?}",
        sms[lag].events()
    );
    let built: u64 = nodes.iter().map(|n| n.stats().snapshots_built).sum();
    assert!(built >= 1, "a snapshot was built on demand");
}

#[test]
fn a_few_large_entries_compact_the_log_by_bytes() {
    let trio = Trio::new(12);
    let sms = &trio.sms;
    let nodes = trio.start(sms, 1_000_000, 256 << 10);
    let big = vec![1u8; 100 << 10];
    for k in 0..8 {
        put(&nodes, k, &big);
    }
    // 800 KiB in 8 entries: three compactions by bytes on every node, none by count.
    wait_until("compactions by bytes everywhere", || {
        nodes.iter().all(|n| n.stats().snapshots >= 2)
    });
}

#[test]
fn a_restart_replays_only_the_log_after_the_durable_index() {
    let trio = Trio::new(13);
    let sms = &trio.sms;
    let mut nodes = trio.start(sms, 25, 0);
    for k in 0..110 {
        put(&nodes, k, b"v");
    }
    let applied = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("applied everywhere", || {
        sms.iter().all(|s| s.applied() >= applied)
    });
    wait_until("compacted everywhere", || {
        nodes.iter().all(|n| n.stats().snapshots >= 3)
    });
    for n in nodes.iter_mut() {
        n.stop();
    }
    drop(nodes);

    let again: Vec<DurableMap> = sms.iter().map(DurableMap::restarted).collect();
    let nodes = trio.start(&again, 25, 0);
    put(&nodes, 500, b"after restart");
    let target = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("replayed everywhere", || {
        again.iter().all(|s| s.applied() >= target)
    });
    for (i, (sm, node)) in again.iter().zip(&nodes).enumerate() {
        assert_eq!(sm.len(), 111, "node {}", i + 1);
        let events = sm.events();
        assert!(
            events.iter().all(|e| e.starts_with("marker ")),
            "node {}: {events:?}",
            i + 1
        );
        let replayed = node.stats().applied;
        assert!(
            replayed < 60,
            "node {} replayed {replayed} entries of about {target}",
            i + 1
        );
    }
}

#[test]
fn a_follower_briefly_behind_catches_up_from_the_log_not_a_snapshot() {
    let trio = Trio::new(14);
    let (net, sms) = (&trio.net, &trio.sms);
    let nodes = trio.start(sms, 20, 0);
    let l = leader(&nodes);
    let lag = (l + 1) % 3;
    put(&nodes, 0, b"first");
    net.unregister(lag as u64 + 1);
    // 50 entries: past `snapshot_every` (20) but below four times it.
    for k in 1..=50 {
        put(&nodes, k, b"v");
    }
    net.register(lag as u64 + 1, nodes[lag].mailbox());
    let target = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("the follower caught up", || sms[lag].applied() >= target);
    assert_eq!(sms[lag].len(), 51);
    assert!(
        sms[lag].events().is_empty(),
        "caught up from the log: {:?}",
        sms[lag].events()
    );
    let built: u64 = nodes.iter().map(|n| n.stats().snapshots_built).sum();
    assert_eq!(built, 0);
    // Once it holds the log again, the leader compacts.
    wait_until("a compaction on the leader", || {
        nodes[l].stats().snapshots >= 1
    });
}

/// A group that stops applying (a region whose writes moved to its split child, say) still
/// compacts the log its followers were holding back, once they caught up: the driver checks
/// quiet groups on its ticks, not only groups with something to apply.
#[test]
fn a_quiet_group_compacts_once_its_followers_caught_up() {
    let trio = Trio::new(15);
    let (net, sms) = (&trio.net, &trio.sms);
    let nodes = trio.start(sms, 1_000_000, 256 << 10);
    let l = leader(&nodes);
    let lag = (l + 1) % 3;
    put(&nodes, 0, b"first");
    net.unregister(lag as u64 + 1);
    // 600 KiB: past the byte threshold, below four times it; the leader keeps it all.
    let big = vec![3u8; 100 << 10];
    for k in 1..=6 {
        put(&nodes, k, &big);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(nodes[l].stats().snapshots, 0, "compacted past a follower");
    net.register(lag as u64 + 1, nodes[lag].mailbox());
    let target = nodes[l].status(1).unwrap().applied;
    wait_until("the follower caught up", || sms[lag].applied() >= target);
    // Nothing more is proposed.
    wait_until("the leader compacts the quiet group", || {
        nodes[l].stats().snapshots >= 1
    });
    assert!(sms[lag].events().is_empty(), "{:?}", sms[lag].events());
}

/// A [`DurableMap`] that streams its snapshot entry by entry and reads it back the same
/// way, recording the largest piece it handled, as a storage engine would.
#[derive(Clone, Default)]
struct StreamingMap {
    map: DurableMap,
    largest_piece: Arc<Mutex<usize>>,
    /// The next `restore_from` fails halfway (a crash while applying, as the node sees
    /// it: the driver stops).
    fail_next_restore: Arc<std::sync::atomic::AtomicBool>,
}

impl StateMachine for StreamingMap {
    fn apply(&mut self, index: u64, data: &[u8]) -> Bytes {
        self.map.apply(index, data)
    }
    fn snapshot(&mut self) -> Bytes {
        self.map.snapshot()
    }
    fn restore(&mut self, index: u64, data: &[u8]) {
        self.map.restore(index, data);
    }
    fn snapshot_stream(&mut self) -> SnapshotStream {
        let state = self.map.live.lock().1.clone();
        let largest = self.largest_piece.clone();
        Box::new(move |sink| {
            for (k, v) in &state {
                let mut piece = k.to_le_bytes().to_vec();
                piece.extend_from_slice(&(v.len() as u32).to_le_bytes());
                piece.extend_from_slice(v);
                let mut l = largest.lock();
                *l = (*l).max(piece.len());
                drop(l);
                sink(&piece).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }
    fn restore_from(&mut self, index: u64, reader: &mut dyn std::io::Read) -> Result<(), String> {
        if self
            .fail_next_restore
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            let mut half = vec![0u8; 1000];
            reader.read_exact(&mut half).map_err(|e| e.to_string())?;
            return Err("simulated failure halfway".into());
        }
        let mut map = BTreeMap::new();
        loop {
            let mut head = [0u8; 12];
            match reader.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(e.to_string()),
            }
            let k = u64::from_le_bytes(head[..8].try_into().unwrap());
            let n = u32::from_le_bytes(head[8..].try_into().unwrap()) as usize;
            let mut v = vec![0u8; n];
            reader.read_exact(&mut v).map_err(|e| e.to_string())?;
            let mut l = self.largest_piece.lock();
            *l = (*l).max(n + 12);
            drop(l);
            map.insert(k, v);
        }
        self.map.events.lock().push(format!("streamed {index}"));
        *self.map.live.lock() = (index, map.clone());
        *self.map.disk.lock() = (index, map);
        Ok(())
    }
    fn durable_state(&self) -> bool {
        true
    }
    fn compaction_marker(&mut self) -> Box<dyn FnOnce() -> Result<Bytes, String> + Send> {
        self.map.compaction_marker()
    }
    fn durable_applied(&self) -> u64 {
        self.map.durable_applied()
    }
}

/// Node `i + 1` over the WAL in `dir`, compacting every 20 entries or 1 MiB.
fn start_streaming(dir: &Path, i: usize, net: &Arc<MemNetwork>, sm: &StreamingMap) -> Node {
    let wal = Wal::open(dir, WalOptions::default()).unwrap();
    let node = Node::start(opts(i as u64 + 1, 20, 1 << 20), Box::new(wal), net.clone()).unwrap();
    net.register(i as u64 + 1, node.mailbox());
    node.add_group(1, ConfState::with_voters([1, 2, 3]), Box::new(sm.clone()))
        .unwrap();
    node
}

fn spool_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("spool"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_follower_that_lost_its_disk_gets_a_large_state_streamed_in_chunks() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let net = MemNetwork::new(23);
    let sms: Vec<StreamingMap> = (0..3).map(|_| StreamingMap::default()).collect();
    let start_one = |i: usize, sm: &StreamingMap| start_streaming(dirs[i].path(), i, &net, sm);
    let mut nodes: Vec<Node> = (0..3).map(|i| start_one(i, &sms[i])).collect();
    let l = leader(&nodes);
    let lost = (l + 1) % 3;
    // 6 MiB of state in 64 KiB values: six chunks at least.
    let value = vec![3u8; 64 << 10];
    for k in 0..96 {
        put(&nodes, k, &value);
    }
    let target = nodes[l].status(1).unwrap().applied;
    wait_until("every replica applied", || {
        sms.iter().all(|s| s.map.applied() >= target)
    });
    // The follower loses its disk: a fresh directory and state machine.
    net.unregister(lost as u64 + 1);
    drop(nodes.remove(lost));
    for k in 96..160 {
        put(&nodes, k, &value);
    }
    wait_until("the leader compacted past the lost follower", || {
        nodes.iter().all(|n| n.stats().snapshots >= 2)
    });
    std::fs::remove_dir_all(dirs[lost].path()).unwrap();
    let fresh = StreamingMap::default();
    nodes.insert(lost, start_one(lost, &fresh));
    put(&nodes, 1000, b"after");
    let target = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("the fresh follower caught up", || {
        fresh.map.applied() >= target
    });
    assert_eq!(fresh.map.len(), 161);
    assert!(
        fresh
            .map
            .events()
            .iter()
            .any(|e| e.starts_with("streamed ")),
        "{:?}",
        fresh.map.events()
    );
    let streamed: u64 = nodes
        .iter()
        .map(|n| n.stats().snapshot_bytes_streamed)
        .sum();
    assert!(streamed >= 160 * (64 << 10), "{streamed} bytes streamed");
    assert!(*fresh.largest_piece.lock() <= (64 << 10) + 12);
    // The received file goes once the follower's log starts at a newer marker.
    for k in 2000..2030 {
        put(&nodes, k, b"x");
    }
    wait_until("the spool file deleted after the next compaction", || {
        spool_files(dirs[lost].path()).is_empty()
    });
    // A restart of the follower finds everything without the file.
    let again = StreamingMap {
        map: fresh.map.restarted(),
        ..StreamingMap::default()
    };
    net.unregister(lost as u64 + 1);
    drop(nodes.remove(lost));
    nodes.insert(lost, start_one(lost, &again));
    put(&nodes, 3000, b"after restart");
    let target = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("the restarted follower caught up", || {
        again.map.applied() >= target
    });
    assert_eq!(again.map.len(), 161 + 30 + 1);
}

#[test]
fn a_streamed_snapshot_whose_apply_failed_is_applied_again_from_its_file_at_the_restart() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let net = MemNetwork::new(29);
    let start_one = |i: usize, sm: &StreamingMap| start_streaming(dirs[i].path(), i, &net, sm);
    let sms: Vec<StreamingMap> = (0..3).map(|_| StreamingMap::default()).collect();
    let mut nodes: Vec<Node> = (0..3).map(|i| start_one(i, &sms[i])).collect();
    let l = leader(&nodes);
    let lagging = (l + 1) % 3;
    net.unregister(lagging as u64 + 1);
    sms[lagging]
        .fail_next_restore
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let value = vec![5u8; 32 << 10];
    for k in 0..200 {
        put(&nodes, k, &value);
    }
    wait_until("the leader compacted past the lagging follower", || {
        nodes[l].stats().snapshots >= 2
    });
    net.register(lagging as u64 + 1, nodes[lagging].mailbox());
    // Its driver stops when the apply fails: the file and the log's reference stay.
    wait_until(
        "the follower received the file and failed to apply it",
        || nodes[lagging].status(1).is_err(),
    );
    assert_eq!(spool_files(dirs[lagging].path()).len(), 1);
    let events_before = sms[lagging].map.events();
    assert!(!events_before.iter().any(|e| e.starts_with("streamed")));
    net.unregister(lagging as u64 + 1);
    drop(nodes.remove(lagging));
    let again = StreamingMap {
        map: sms[lagging].map.restarted(),
        ..StreamingMap::default()
    };
    nodes.insert(lagging, start_one(lagging, &again));
    assert!(
        again
            .map
            .events()
            .iter()
            .any(|e| e.starts_with("streamed ")),
        "applied at the restart, from the file: {:?}",
        again.map.events()
    );
    put(&nodes, 1000, b"after");
    let target = nodes[leader(&nodes)].status(1).unwrap().applied;
    wait_until("the follower caught up", || again.map.applied() >= target);
    assert_eq!(again.map.len(), 201);
}
