//! Data beyond memory: a disk engine loaded with many times its block cache keeps the
//! process's resident memory bounded (by the cache, the memtables and fjall's buffers, not by
//! the data), and reads everything back.
//!
//! This drives one region's view of a node's engine directly. A whole node still keeps, in
//! `raft-lite`, each region's latest Raft snapshot and the log since it in memory (see the
//! crate README): bounding a node's memory needs snapshots streamed from the engine, which
//! this does not cover.

use surge_txn::{Cf, Engine, EngineIdentity, FjallEngine, FjallOptions, Modify, WriteBatch};

/// Resident memory of this process, in bytes (Linux `/proc/self/status`), if known.
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

const CACHE: u64 = 8 << 20;
const VALUE: usize = 1024;
const KEYS: u64 = 96 * 1024; // 96 MiB of values: twelve times the cache
const BATCH: u64 = 256;

fn key(i: u64) -> Vec<u8> {
    let mut k = b"k".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

#[test]
fn loading_twelve_times_the_cache_keeps_resident_memory_bounded() {
    let Some(before) = rss() else {
        println!("no /proc/self/status here: resident memory cannot be measured; skipped");
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let options = FjallOptions::default()
        .with_cache_bytes(CACHE)
        .with_memtable_bytes(4 << 20)
        .with_worker_threads(1);
    let engine =
        FjallEngine::open(dir.path(), &EngineIdentity::new("m", 1), options).expect("open");
    let view = engine.region(1, b"", b"").expect("view");
    let mut peak = 0u64;
    for b in 0..KEYS / BATCH {
        let modifies = (b * BATCH..(b + 1) * BATCH)
            .map(|i| Modify::Put {
                cf: Cf::Default,
                key: key(i),
                value: vec![(i % 251) as u8; VALUE],
            })
            .collect();
        view.write(&WriteBatch {
            modifies,
            applied_index: b + 1,
        })
        .expect("write");
        if b.is_multiple_of(16) {
            peak = peak.max(rss().unwrap_or(0));
        }
    }
    let loaded = KEYS * (VALUE as u64 + 9);
    assert_eq!(view.size_bytes(), loaded);
    let mut seen = 0u64;
    {
        let snap = view.snapshot();
        snap.scan(Cf::Default, b"k", None, &mut |k, v| {
            assert_eq!(k, key(seen).as_slice());
            assert_eq!(v.len(), VALUE);
            assert_eq!(v[0], (seen % 251) as u8);
            seen += 1;
            if seen.is_multiple_of(4096) {
                peak = peak.max(rss().unwrap_or(0));
            }
            true
        });
    }
    assert_eq!(seen, KEYS);
    let grown = peak.saturating_sub(before);
    println!(
        "loaded {} MiB with an {} MiB cache: resident memory grew by {} MiB at most",
        loaded >> 20,
        CACHE >> 20,
        grown >> 20
    );
    // The bound: under the data loaded (a MemEngine would hold all of it, plus its maps'
    // overhead). Not half of it: on a loaded machine flushes fall behind the writes and
    // several sealed memtables wait in memory at once (59 MiB seen once in a full
    // `make check`, 35 MiB alone).
    assert!(
        grown < loaded * 3 / 4,
        "resident memory grew by {} MiB for {} MiB loaded",
        grown >> 20,
        loaded >> 20
    );
}
