//! Test support for snapshot persistence: a file system that can hold or observe the
//! writing of snapshot files, and a state machine with a set of numbers and a snapshot of
//! a chosen size.
#![allow(dead_code)] // Each test file uses a different part of it.
#![allow(clippy::unwrap_used)] // Test helpers: a failure is a test failure.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use surge_raft_lite::*;

/// True for a snapshot file of any format (`snap/<..>.snap`, or `snap-<group>.bin`).
pub fn is_snapshot_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("snap"))
}

/// A file system over another one that can hold every snapshot file write at its start
/// until released, and counts them.
#[derive(Debug, Clone)]
pub struct HookFs {
    inner: Arc<dyn WalFs>,
    hook: Arc<(Mutex<HookState>, Condvar)>,
}

#[derive(Debug, Default)]
struct HookState {
    held: bool,
    started: u64,
    written: u64,
}

impl HookFs {
    pub fn new(inner: Arc<dyn WalFs>) -> HookFs {
        HookFs {
            inner,
            hook: Arc::default(),
        }
    }

    /// Snapshot file writes from now on wait until [`HookFs::release`].
    pub fn hold(&self) {
        self.hook.0.lock().held = true;
    }

    pub fn release(&self) {
        self.hook.0.lock().held = false;
        self.hook.1.notify_all();
    }

    /// Snapshot file writes started so far.
    pub fn started(&self) -> u64 {
        self.hook.0.lock().started
    }

    /// Snapshot file writes completed so far.
    pub fn written(&self) -> u64 {
        self.hook.0.lock().written
    }
}

impl WalFs for HookFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn lock(&self, dir: &Path) -> io::Result<Option<Box<dyn DirLock>>> {
        self.inner.lock(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        self.inner.create(path)
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        self.inner.truncate(path, len)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if is_snapshot_file(path) {
            let (m, cv) = &*self.hook;
            let mut s = m.lock();
            s.started += 1;
            while s.held {
                cv.wait(&mut s);
            }
            drop(s);
            self.inner.write_atomic(path, data)?;
            m.lock().written += 1;
            return Ok(());
        }
        self.inner.write_atomic(path, data)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
}

/// A set of numbers; each entry is one little-endian `u64`. Its snapshot is the set
/// followed by `pad` zero bytes (a large snapshot at will).
#[derive(Clone, Default)]
pub struct Set {
    pub inner: Arc<Mutex<BTreeSet<u64>>>,
    pub pad: usize,
}

impl Set {
    pub fn with_pad(pad: usize) -> Set {
        Set {
            pad,
            ..Set::default()
        }
    }

    pub fn contains(&self, x: u64) -> bool {
        self.inner.lock().contains(&x)
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }
}

impl StateMachine for Set {
    fn apply(&mut self, _index: u64, data: &[u8]) -> Bytes {
        if let Ok(b) = <[u8; 8]>::try_from(data) {
            self.inner.lock().insert(u64::from_le_bytes(b));
        }
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        let s = self.inner.lock();
        let mut v = Vec::with_capacity(8 + s.len() * 8 + self.pad);
        v.extend_from_slice(&(s.len() as u64).to_le_bytes());
        for x in s.iter() {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.resize(v.len() + self.pad, 0);
        Bytes::from(v)
    }
    fn restore(&mut self, _index: u64, data: &[u8]) {
        let mut s = self.inner.lock();
        s.clear();
        let n = u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
        for c in data[8..8 + n * 8].chunks_exact(8) {
            s.insert(u64::from_le_bytes(c.try_into().unwrap()));
        }
    }
}

/// Proposes `x` to `group` of a single-node `node` and waits until it is applied.
pub fn put(node: &Node, group: u64, x: u64) {
    node.propose(group, Bytes::copy_from_slice(&x.to_le_bytes()))
        .wait_applied(std::time::Duration::from_secs(10))
        .unwrap();
}

/// The snapshot files in `wal_dir/snap` as (group, index), from their names.
pub fn snapshot_files(wal_dir: &Path) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = std::fs::read_dir(wal_dir.join("snap"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| {
            let mut it = n.strip_suffix(".snap")?.split('-');
            let g = u64::from_str_radix(it.next()?, 16).ok()?;
            let i = u64::from_str_radix(it.next()?, 16).ok()?;
            Some((g, i))
        })
        .collect();
    v.sort_unstable();
    v
}

/// Waits (up to 30 s, polling every 2 ms) until `f` holds; fails the test naming `what`.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}
