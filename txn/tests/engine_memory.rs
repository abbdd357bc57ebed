//! Data beyond memory: a disk engine loaded with many times its block cache keeps the
//! process's resident memory bounded (by the cache, the memtables and fjall's buffers, not by
//! the data), and reads everything back.
//!
//! This drives one region's view of a node's engine directly (a whole node's memory, with its
//! Raft logs and streamed snapshots, is measured by `examples/engine_big.rs`).
//!
//! The bound is the design's: the block cache, plus the memtables not flushed yet, which
//! the engine keeps under `FjallOptions::max_write_buffer_bytes` (a leader's write waits
//! for the flushes above it, `Engine::throttle_writes`, called here before each batch),
//! plus slack for buffers and the allocator; the data loaded is four
//! times that, so a store holding its data in memory would fail.

use surge_txn::{Cf, Engine, EngineIdentity, FjallEngine, FjallOptions, Modify, WriteBatch};

/// Resident memory of this process, in bytes (Linux `/proc/self/status`), if known.
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

const CACHE: u64 = 8 << 20;
const WRITE_BUFFER: u64 = 16 << 20;
const VALUE: usize = 1024;
const KEYS: u64 = 192 * 1024; // 192 MiB of values: 24 times the cache
const BATCH: u64 = 256;

fn key(i: u64) -> Vec<u8> {
    let mut k = b"k".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

#[test]
fn loading_many_times_the_cache_keeps_resident_memory_bounded() {
    let Some(before) = rss() else {
        println!("no /proc/self/status here: resident memory cannot be measured; skipped");
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let options = FjallOptions::default()
        .with_cache_bytes(CACHE)
        .with_memtable_bytes(4 << 20)
        .with_max_write_buffer_bytes(WRITE_BUFFER)
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
        // As a region's leader does before it proposes a write.
        view.throttle_writes();
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
    // Without the write stall resident memory grew with the data (the flush worker could
    // not keep up with this writer, and fjall's active memtable grew past its size while
    // its rotation waited: 204 MiB for 387 MiB loaded); with it, 32 MiB for the same.
    let bound = CACHE + WRITE_BUFFER + (24 << 20);
    assert!(
        grown < bound && grown < loaded / 2,
        "resident memory grew by {} MiB for {} MiB loaded (bound {} MiB)",
        grown >> 20,
        loaded >> 20,
        bound >> 20
    );
}
