//! Faults under the disk engine: a full disk fails the write with an error and loses nothing
//! written before it; a damaged engine is a clear error, never a panic.
//!
//! The full-disk test needs a small filesystem: set `SURGE_TXN_ENOSPC_DIR` to a directory on
//! one (for example a 70 MiB tmpfs: `mount -t tmpfs -o size=70m tmpfs /mnt/small`); without
//! it the test says so and passes.

use surge_txn::{
    Cf, Engine, EngineError, EngineIdentity, FjallEngine, FjallOptions, Modify, WriteBatch,
};

fn options() -> FjallOptions {
    FjallOptions::default()
        .with_cache_bytes(8 << 20)
        .with_memtable_bytes(4 << 20)
        .with_worker_threads(1)
}

fn batch(i: u64) -> WriteBatch {
    WriteBatch {
        modifies: (0..64u64)
            .map(|j| Modify::Put {
                cf: Cf::Default,
                key: format!("k{i:06}-{j:02}").into_bytes(),
                value: vec![i as u8; 16 << 10],
            })
            .collect(),
        applied_index: i,
    }
}

#[test]
fn a_full_disk_fails_the_write_and_keeps_every_acknowledged_batch() {
    let Ok(base) = std::env::var("SURGE_TXN_ENOSPC_DIR") else {
        println!("SURGE_TXN_ENOSPC_DIR not set: no small filesystem to fill; skipped");
        return;
    };
    let dir = tempfile::tempdir_in(&base).expect("dir");
    // Room to make once the disk is full, as an operator would.
    let filler = dir.path().with_extension("filler");
    std::fs::write(&filler, vec![0u8; 8 << 20]).expect("filler");
    let id = EngineIdentity::new("f", 1);
    let mut acked = 0;
    {
        let engine = FjallEngine::open(dir.path(), &id, options()).expect("open");
        let view = engine.region(1, b"", b"").expect("view");
        let failure = loop {
            match view.write(&batch(acked + 1)) {
                Ok(()) => acked += 1,
                Err(e) => break e,
            }
            assert!(acked < 100_000, "the filesystem never filled");
        };
        println!("after {acked} batches of 1 MiB: {failure}");
        assert!(matches!(failure, EngineError::Io { .. }), "{failure}");
        let again = view.write(&batch(acked + 2)).expect_err("stopped");
        assert!(
            matches!(again, EngineError::Stopped { index, .. } if index == acked + 1),
            "{again}"
        );
        assert_eq!(view.applied_index(), acked);
    }
    // Room again, then every acknowledged batch is there.
    std::fs::remove_file(&filler).expect("remove the filler");
    let engine = FjallEngine::open(dir.path(), &id, options()).expect("reopen");
    let view = engine.region(1, b"", b"").expect("view");
    // The record is as of the last checkpoint, which the engine writes with the first
    // batch at least 32 entries past the one before: the log replays the rest, whose data
    // the engine may hold already (checked below).
    let (applied, _) = view.durable_region().expect("a durable state");
    assert!(
        applied <= acked && acked - applied < 32,
        "reopened at {applied}, {acked} acknowledged"
    );
    let snap = view.snapshot();
    for i in 1..=acked {
        for j in [0u64, 63] {
            let v = snap
                .get(Cf::Default, format!("k{i:06}-{j:02}").as_bytes())
                .unwrap_or_else(|| panic!("acknowledged batch {i} lost key {j}"));
            assert_eq!(v.len(), 16 << 10);
        }
    }
}

#[test]
fn a_damaged_engine_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("dir");
    let id = EngineIdentity::new("f", 1);
    {
        let engine = FjallEngine::open(dir.path(), &id, options()).expect("open");
        let view = engine.region(1, b"", b"").expect("view");
        for i in 1..=8 {
            view.write(&batch(i)).expect("write");
        }
        engine.persist().expect("persist");
    }
    // Overwrite the middle of every file the engine wrote.
    let mut damaged = 0;
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(mut bytes) = std::fs::read(&p)
                && bytes.len() > 64
            {
                let mid = bytes.len() / 2;
                bytes[mid..mid + 32].fill(0xa5);
                std::fs::write(&p, bytes).expect("damage");
                damaged += 1;
            }
        }
    }
    assert!(damaged > 0);
    match FjallEngine::open(dir.path(), &id, options()) {
        Err(e) => {
            let text = e.to_string();
            println!("{text}");
            assert!(
                text.contains(&dir.path().display().to_string()),
                "the error names the engine: {text}"
            );
        }
        Ok(engine) => {
            // fjall may find the damage only when it reads the data: the read is refused
            // (the region stops), never a panic or a wrong value.
            let view = engine.region(1, b"", b"").expect("view");
            let snap = view.snapshot();
            let mut wrong = 0;
            snap.scan(Cf::Default, b"k", None, &mut |_, v| {
                if v.len() != 16 << 10 {
                    wrong += 1;
                }
                true
            });
            assert_eq!(wrong, 0, "a damaged value was returned");
        }
    }
}
