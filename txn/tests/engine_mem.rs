//! MemEngine behaviour across threads: batches are atomic and a snapshot is consistent.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a failed unwrap is a failed test

use std::sync::atomic::{AtomicBool, Ordering};

use surge_txn::{Cf, Engine, MemEngine, Modify, Snapshot, WriteBatch};

fn pair_batch(i: u64) -> WriteBatch {
    // Two keys always written together with the same value.
    let value = i.to_be_bytes().to_vec();
    WriteBatch {
        modifies: vec![
            Modify::Put {
                cf: Cf::Write,
                key: b"a".to_vec(),
                value: value.clone(),
            },
            Modify::Put {
                cf: Cf::Default,
                key: b"b".to_vec(),
                value,
            },
        ],
        applied_index: i,
    }
}

fn read_pair(snap: &dyn Snapshot) -> (Option<Vec<u8>>, Option<Vec<u8>>, u64) {
    let a = snap.get(Cf::Write, b"a");
    std::thread::yield_now();
    let b = snap.get(Cf::Default, b"b");
    (a, b, snap.applied_index())
}

#[test]
fn snapshots_never_see_half_a_batch() {
    let engine = MemEngine::new();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=300 {
                engine.write(&pair_batch(i)).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        for _ in 0..2 {
            s.spawn(|| {
                let mut seen = 0;
                while !done.load(Ordering::SeqCst) || seen < 10 {
                    let snap = engine.snapshot();
                    let (a, b, index) = read_pair(&*snap);
                    assert_eq!(a, b, "both keys from one batch");
                    if let Some(a) = a {
                        assert_eq!(u64::from_be_bytes(a.try_into().unwrap()), index);
                    }
                    seen += 1;
                }
            });
        }
    });
    assert_eq!(engine.applied_index(), 300);
}

#[test]
fn a_snapshot_moves_to_another_thread_and_holds_its_view() {
    let engine = MemEngine::new();
    engine.write(&pair_batch(1)).unwrap();
    std::thread::scope(|s| {
        let snap = engine.snapshot();
        let writer = s.spawn(|| engine.write(&pair_batch(2)).unwrap());
        let reader = s.spawn(move || {
            let view = read_pair(&*snap);
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(read_pair(&*snap), view);
            view.2
        });
        assert_eq!(reader.join().unwrap(), 1);
        writer.join().unwrap();
    });
    assert_eq!(engine.snapshot().applied_index(), 2);
}
