//! Power loss, replayed from the I/O trace. `kill -9` keeps everything that reached the
//! kernel; a power cut keeps only what was fsynced. The library records each write, fsync
//! (with the length it covered), rename and directory fsync; for many cut points this test
//! rebuilds the directory as a power cut there could leave it — every file cut to what
//! its last fsync covered (plus, every third cut, a torn part of what was written after), names
//! present only once a directory fsync made them durable, the in-use flag as it was — and
//! checks that recovery opens it and finds every commit acknowledged before the cut,
//! exactly once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use surge_binlog::__iotrace::{self, Step};
use surge_binlog::{Binlog, IN_USE_FLAG_OFFSET};

use crate::common::{all_events, groups, test_config};

/// Per file name: (durable length, length written so far, in-use flag cleared).
type Disk = BTreeMap<PathBuf, (u64, u64, bool)>;

/// What a power cut after the first `k` steps leaves, for files directly in `dir`.
fn durable_after(dir: &Path, steps: &[Step], k: usize) -> Disk {
    let mut files: Disk = BTreeMap::new();
    let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
    let mut named: BTreeSet<PathBuf> = BTreeSet::new();
    for s in &steps[..k] {
        let e = files.entry(s.path.clone()).or_insert((0, 0, false));
        match s.op.as_str() {
            "create+fsync" | "fsync" | "fdatasync" => {
                let len = s.len.unwrap_or(0);
                e.0 = e.0.max(len);
                e.1 = e.1.max(len);
                if s.op == "create+fsync" {
                    pending.insert(s.path.clone());
                }
            }
            "append" => {
                e.1 = e.1.max(s.len.unwrap_or(0));
                if !named.contains(&s.path) {
                    pending.insert(s.path.clone()); // the index is created by its first append
                }
            }
            "clear-in-use" => e.2 = true,
            "rename-to" => {
                let from = s.from.clone().unwrap_or_default();
                let moved = files.remove(&from).unwrap_or((0, 0, false));
                files.insert(s.path.clone(), moved);
                pending.insert(s.path.clone());
            }
            "fsync-dir" if s.path.parent() == Some(dir) || s.path == dir.join(".") => {
                named.extend(pending.iter().cloned());
                pending.clear();
            }
            _ => {}
        }
    }
    files.retain(|p, _| named.contains(p) && p.parent() == Some(dir));
    files
}

fn acked_before(steps: &[Step], k: usize) -> BTreeSet<u64> {
    steps[..k]
        .iter()
        .filter(|s| s.op == "ack")
        .filter_map(|s| s.path.file_name()?.to_str()?.parse().ok())
        .collect()
}

#[test]
fn every_acknowledged_commit_survives_a_power_cut_at_any_step() {
    __iotrace::start();
    let live = tempfile::tempdir().unwrap();
    let ack_dir = live.path().join("#ack");
    let log =
        Arc::new(Binlog::open(test_config(live.path()).with_max_binlog_size(2 << 20)).unwrap());
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let (log, ack_dir) = (Arc::clone(&log), ack_dir.clone());
            std::thread::spawn(move || {
                for i in 0..30u64 {
                    let xid = t * 1000 + i;
                    let mut c = log.new_cache();
                    c.put(&xid.to_le_bytes(), &[1u8; 300]).unwrap();
                    // Thread 0 also commits large transactions, one at a time.
                    if t == 0 && i % 10 == 4 {
                        c.put(b"big", &vec![2u8; 3 << 19]).unwrap(); // 1.5 MiB: renamed
                    } else if t == 0 && i % 10 == 8 {
                        c.put(b"mid", &vec![3u8; 600 << 10]).unwrap(); // copied, fills files
                    }
                    log.commit(c, xid).unwrap();
                    __iotrace::mark("ack", &ack_dir.join(xid.to_string()));
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|h| h.join().unwrap());
    assert_eq!(log.stats().renames, 3);
    let log = Arc::into_inner(log).unwrap();
    log.close().unwrap();
    let steps = __iotrace::records_under(live.path());
    // A cut after every step.
    let cuts: Vec<usize> = (0..=steps.len()).collect();
    let mut torn_cuts = 0;
    for (n, &k) in cuts.iter().enumerate() {
        let disk = durable_after(live.path(), &steps, k);
        let snap = tempfile::tempdir().unwrap();
        for (path, &(durable, written, cleared)) in &disk {
            let mut bytes = std::fs::read(path).unwrap();
            // Every third cut also keeps a torn part (512-byte steps) of the unsynced bytes.
            let mut keep = durable;
            if n % 3 == 0 && written > durable {
                keep += (written - durable) * 2 / 3;
                torn_cuts += usize::from(keep > durable);
            }
            bytes.truncate(keep.min(bytes.len() as u64) as usize);
            let name = path.file_name().unwrap();
            let is_binlog = name.to_string_lossy() != "surge-bin.index";
            if is_binlog && !cleared && bytes.len() > IN_USE_FLAG_OFFSET as usize {
                bytes[IN_USE_FLAG_OFFSET as usize] |= 1; // still marked in use at the cut
            }
            std::fs::write(snap.path().join(name), &bytes).unwrap();
        }
        let acked = acked_before(&steps, k);
        let reopened = Binlog::open(test_config(snap.path()))
            .unwrap_or_else(|e| panic!("cut {k}/{}: recovery failed: {e}", steps.len()));
        drop(reopened);
        let (complete, _) = groups(&all_events(snap.path()).unwrap());
        let xids: Vec<u64> = complete.iter().map(|c| c.1).collect();
        let unique: BTreeSet<u64> = xids.iter().copied().collect();
        assert_eq!(unique.len(), xids.len(), "cut {k}: duplicate transaction");
        let lost: Vec<&u64> = acked.difference(&unique).collect();
        assert!(
            lost.is_empty(),
            "cut {k}/{}: acknowledged {lost:?} lost",
            steps.len()
        );
    }
    assert!(torn_cuts > 0, "some cuts kept torn tails");
    eprintln!(
        "{} power cuts checked over {} steps",
        cuts.len(),
        steps.len()
    );
}
