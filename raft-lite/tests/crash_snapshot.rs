//! SIGKILL around a snapshot written by the background snapshot writer: before its file
//! is durable, after the file but before the log refers to it, and after the reference.
//! A child process runs a node with two groups under load and stops (or marks) the crash
//! point; the parent kills it, reopens the directory and checks that the log names only
//! files that exist, that no other snapshot file is left, and that every acknowledged
//! proposal is there.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use surge_raft_lite::*;
use surge_testkit::CrashChild;

mod snap_support;
use snap_support::{Set, is_snapshot_file, put, snapshot_files};

const ROLE: &str = "RAFT_LITE_SNAP_CHILD_DIR";
const POINT: &str = "RAFT_LITE_SNAP_POINT";
const GROUPS: [u64; 2] = [1, 2];

/// Where the child stops or reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    /// The first snapshot file write never starts.
    BeforeFile,
    /// The first snapshot file is durable; its reference is never written.
    AfterFile,
    /// A superseded file is being deleted: its successor's reference is durable.
    AfterRef,
}

impl Point {
    fn parse(s: &str) -> Point {
        match s {
            "before_file" => Point::BeforeFile,
            "after_file" => Point::AfterFile,
            _ => Point::AfterRef,
        }
    }
}

fn say(line: &str) {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// The real file system, with the child's crash point on snapshot files.
#[derive(Debug)]
struct CrashFs {
    point: Point,
    reached: AtomicBool,
}

impl CrashFs {
    fn reached(&self) {
        if !self.reached.swap(true, Ordering::SeqCst) {
            say("reached");
        }
    }
    fn park(&self) -> ! {
        self.reached();
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    }
}

impl WalFs for CrashFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdFs.create_dir_all(dir)
    }
    fn lock(&self, dir: &Path) -> io::Result<Option<Box<dyn DirLock>>> {
        StdFs.lock(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        StdFs.list(dir)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        StdFs.read(path)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        StdFs.create(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        StdFs.truncate(path, len)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        StdFs.remove(path)?;
        if self.point == Point::AfterRef && is_snapshot_file(path) {
            self.reached();
        }
        Ok(())
    }
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if !is_snapshot_file(path) {
            return StdFs.write_atomic(path, data);
        }
        match self.point {
            Point::BeforeFile => self.park(),
            Point::AfterFile => {
                StdFs.write_atomic(path, data)?;
                self.park()
            }
            Point::AfterRef => StdFs.write_atomic(path, data),
        }
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdFs.sync_dir(dir)
    }
}

fn start(dir: &Path, fs: Arc<dyn WalFs>) -> (Node, Vec<Set>) {
    let mut o = NodeOptions::new(1);
    o.tick = Duration::from_millis(5);
    o.snapshot_every = 30;
    // The directory lock is an flock: a sibling test that forks its child while this test
    // holds the lock shares it until that child's exec, so a reopen right after a drop can
    // find it held for a moment (seen under the full suite's load).
    let t0 = std::time::Instant::now();
    let wal = loop {
        match Wal::open_with(fs.clone(), dir, WalOptions::default()) {
            Err(surge_raft_lite::Error::Locked { .. }) if t0.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => break r.unwrap(),
        }
    };
    let node = Node::start(o, Box::new(wal), MemNetwork::new(1)).unwrap();
    let mut sets = Vec::new();
    for g in GROUPS {
        // Group 1's snapshots are large enough to take a moment to write.
        let s = Set::with_pad(if g == 1 { 4 << 20 } else { 0 });
        node.add_group(g, ConfState::with_voters([1]), Box::new(s.clone()))
            .unwrap();
        node.campaign(g).unwrap();
        sets.push(s);
    }
    (node, sets)
}

fn child(dir: &str, point: Point) {
    let fs = Arc::new(CrashFs {
        point,
        reached: AtomicBool::new(false),
    });
    let (node, _sets) = start(Path::new(dir), fs);
    for x in 0u64.. {
        let g = GROUPS[x as usize % 2];
        let p = node.propose(g, Bytes::copy_from_slice(&x.to_le_bytes()));
        if p.wait_applied(Duration::from_secs(5)).is_ok() {
            say(&format!("ack {g} {x}"));
        }
    }
}

/// Records an acknowledgement line of the child.
fn track(acked: &mut Vec<(u64, u64)>, line: &str) {
    if let Some(rest) = line.strip_prefix("ack ") {
        let (g, x) = rest.split_once(' ').unwrap();
        acked.push((g.parse().unwrap(), x.parse().unwrap()));
    }
}

fn crash_at(test: &str, point: &str) {
    if let (Ok(dir), Ok(p)) = (std::env::var(ROLE), std::env::var(POINT)) {
        child(&dir, Point::parse(&p));
        return;
    }
    let point_kind = Point::parse(point);
    let dir = tempfile::tempdir().unwrap();
    let mut acked: Vec<(u64, u64)> = Vec::new();
    let mut c = CrashChild::spawn(
        test,
        [
            (ROLE, dir.path().display().to_string()),
            (POINT, point.to_string()),
        ],
    );
    c.wait_reached(|l| track(&mut acked, l));
    let at_reach = acked.len();
    // The node keeps serving meanwhile (a parked snapshot writer stalls nobody).
    c.kill_after(Duration::from_millis(300), |l| track(&mut acked, l));
    if point_kind != Point::AfterRef {
        assert!(
            acked.len() > at_reach + 30,
            "commits went on while the snapshot writer was stuck: {at_reach} then {}",
            acked.len()
        );
    }
    let before_open = snapshot_files(dir.path());
    if point_kind == Point::AfterFile {
        assert!(!before_open.is_empty(), "the unreferenced file is there");
    }

    // The log names only files that exist, and no other file is left.
    let wal = Wal::open(dir.path(), WalOptions::default()).unwrap();
    let mut named = Vec::new();
    for g in GROUPS {
        if let Some(s) = wal.load(g).unwrap().and_then(|st| st.snapshot) {
            named.push((g, s.meta.index));
        }
    }
    assert_eq!(
        snapshot_files(dir.path()),
        named,
        "before open: {before_open:?}"
    );
    match point_kind {
        Point::BeforeFile | Point::AfterFile => {
            assert!(
                !named.iter().any(|&(g, _)| g == 1),
                "group 1 never recorded a snapshot: {named:?}"
            );
        }
        Point::AfterRef => assert!(
            named.iter().any(|&(g, _)| g == 1),
            "group 1 replays from a snapshot file: {named:?}"
        ),
    }
    drop(wal);

    let (node, sets) = start(dir.path(), Arc::new(StdFs));
    for (i, g) in GROUPS.iter().enumerate() {
        put(&node, *g, u64::MAX - i as u64);
    }
    for (g, x) in &acked {
        let s = &sets[(*g - 1) as usize];
        assert!(
            s.contains(*x),
            "acknowledged {x} of group {g} lost at {point}"
        );
    }
    println!("{point}: {} acknowledged, snapshots {named:?}", acked.len());
}

#[test]
fn sigkill_before_the_snapshot_file_is_durable() {
    crash_at("sigkill_before_the_snapshot_file_is_durable", "before_file");
}

#[test]
fn sigkill_after_the_snapshot_file_before_its_reference() {
    crash_at(
        "sigkill_after_the_snapshot_file_before_its_reference",
        "after_file",
    );
}

#[test]
fn sigkill_after_the_snapshot_reference() {
    crash_at("sigkill_after_the_snapshot_reference", "after_ref");
}
