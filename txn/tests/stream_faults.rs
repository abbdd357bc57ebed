//! The stream watermark under faults: coordinators that die mid-commit (after prewrite, or
//! after their primary's commit), splits of the stream's region and leader moves, all while
//! live coordinators commit conflicting transactions and a follower consumes the stream.
//!
//! Checked throughout: every record the follower receives is above the last watermark it
//! consumed. At the end: every acknowledged transaction and every one whose dead
//! coordinator had committed its primary is in the stream exactly once; none that died
//! before its commit point is; the delivery equals a scan from the beginning; and the stream
//! replayed with STRICT rules gives the store's table. The seed comes from
//! `SURGE_STREAM_SEED` (printed), else a fixed one.

mod binlog_support;
mod stream_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use binlog_support::{cluster, key};
use parking_lot::Mutex;
use stream_support::{Follower, Table, config, coordinator, replay, store_table};
use surge_txn::workload::Rng;
use surge_txn::{ClientConfig, STREAM_PREFIX, StreamOptions, TxnClient, TxnMode};

/// Writes `delta` to one of 4 shared keys in a transaction of `client`.
fn write(client: &TxnClient, rng: &mut Rng) -> Result<surge_txn::Transaction, surge_txn::TxnError> {
    let mut t = client.begin(TxnMode::Pessimistic)?;
    for _ in 0..2 {
        let r = (rng.next_u64() % 4) as u8;
        let k = key(r, &format!("k{}", rng.next_u64() % 4));
        let v = t.get_for_update(&k)?.map_or(0, |v| v.len());
        t.put(&k, &vec![b'x'; v % 7 + 1])?;
    }
    Ok(t)
}

#[test]
fn the_watermark_holds_under_dead_coordinators_splits_and_leader_moves() {
    let seed: u64 = std::env::var("SURGE_STREAM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(21);
    println!("seed {seed}");
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let live: Vec<TxnClient> = (1..=2)
        .map(|id| {
            coordinator(
                &c,
                &dir.path().join(format!("live{id}")),
                id,
                config(3000, StreamOptions::default()),
            )
        })
        .collect();
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    let acked = Mutex::new(BTreeMap::<u64, u64>::new());
    let dead_committed = Mutex::new(BTreeMap::<u64, u64>::new());
    let dead_rolled_back = Mutex::new(BTreeSet::<u64>::new());
    let done = AtomicBool::new(false);
    let mut follower = Follower::default();
    std::thread::scope(|s| {
        let writers: Vec<_> = live
            .iter()
            .enumerate()
            .map(|(n, client)| {
                let acked = &acked;
                s.spawn(move || {
                    let mut rng = Rng::new(seed ^ ((n as u64 + 1) * 0x9e37));
                    for _ in 0..40 {
                        let Ok(t) = write(client, &mut rng) else {
                            continue;
                        };
                        let start = t.start_ts();
                        match t.commit() {
                            Ok(commit) => {
                                acked.lock().insert(start, commit);
                            }
                            Err(e) => assert!(e.is_retryable(), "txn {start}: {e}"),
                        }
                    }
                })
            })
            .collect();
        // Dead coordinators: each abandons one transaction, before or after its commit point.
        let saboteur = {
            let (dead_committed, dead_rolled_back, c, dir) =
                (&dead_committed, &dead_rolled_back, &c, dir.path());
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ 0xdead);
                for n in 0..6u32 {
                    std::thread::sleep(Duration::from_millis(150 + rng.next_u64() % 300));
                    let client = coordinator(
                        c,
                        &dir.join(format!("dead{n}")),
                        10 + n,
                        config(800, StreamOptions::default()),
                    );
                    let Ok(t) = write(&client, &mut rng) else {
                        continue;
                    };
                    let start = t.start_ts();
                    if rng.next_u64().is_multiple_of(2) {
                        if t.__abandon_after_prewrite().is_ok() {
                            dead_rolled_back.lock().insert(start);
                        }
                    } else if let Ok(commit) = t.__abandon_after_primary_commit() {
                        dead_committed.lock().insert(start, commit);
                    }
                }
            })
        };
        // Region changes of the stream's range while it is written and read.
        let chaos = {
            let (c, reader, done) = (&c, &reader, &done);
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ 0xc4a05);
                let mut prefix_split = false;
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(200 + rng.next_u64() % 300));
                    let split_at = if prefix_split {
                        // Between the records taken before and after now (a lane keeps
                        // its newest records first: `!record_ts` in the key).
                        let ts = reader.current_ts().expect("ts");
                        let mut k = STREAM_PREFIX.to_vec();
                        k.extend_from_slice(&(!ts).to_be_bytes());
                        k
                    } else {
                        STREAM_PREFIX.to_vec()
                    };
                    if let Some(region) = c.region_of(&split_at) {
                        match c.split_region(region.id, Some(split_at.clone())) {
                            Ok(_) => prefix_split = true,
                            Err(e) => println!("split refused: {e}"),
                        }
                    }
                    if let Some(region) = c.region_of(STREAM_PREFIX)
                        && let Some(leader) = c.leader_of(STREAM_PREFIX)
                    {
                        let ids = c.node_ids();
                        let to = ids
                            [(ids.iter().position(|&n| n == leader).unwrap_or(0) + 1) % ids.len()];
                        let _ = c.transfer_leader(region.id, to, Duration::from_secs(5));
                    }
                }
            })
        };
        let follower = &mut follower;
        let (done_f, reader_f) = (&done, &reader);
        let f = s.spawn(move || {
            while !done_f.load(Ordering::Acquire) {
                follower.round(reader_f);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        for w in writers {
            w.join().expect("writer");
        }
        saboteur.join().expect("saboteur");
        done.store(true, Ordering::Release);
        chaos.join().expect("chaos");
        f.join().expect("follower");
    });
    // The dead coordinators' locks expire (800 ms TTL); then the rest is delivered.
    let target = reader.current_ts().expect("ts");
    while follower.resolved < target {
        follower.round(&reader);
        std::thread::sleep(Duration::from_millis(50));
    }
    let acked = acked.into_inner();
    let dead_committed = dead_committed.into_inner();
    let dead_rolled_back = dead_rolled_back.into_inner();
    println!(
        "acked {}, dead after commit {}, dead before commit {}, follower rounds {}, regions {}",
        acked.len(),
        dead_committed.len(),
        dead_rolled_back.len(),
        follower.rounds,
        c.regions().len()
    );
    assert!(acked.len() >= 20, "too few commits: {}", acked.len());
    assert!(
        !dead_committed.is_empty() && !dead_rolled_back.is_empty(),
        "seed {seed}: both deaths wanted"
    );
    let streamed: BTreeMap<u64, u64> = follower
        .delivered
        .iter()
        .map(|t| (t.start_ts, t.commit_ts))
        .collect();
    follower.start_set();
    let mut want = acked.clone();
    want.extend(dead_committed.iter().map(|(s, c)| (*s, *c)));
    assert_eq!(streamed, want, "seed {seed}: streamed transactions");
    assert!(
        dead_rolled_back.iter().all(|s| !streamed.contains_key(s)),
        "seed {seed}: a transaction rolled back was streamed"
    );
    follower.check_against_full_scan(&reader);
    let mut table = Table::new();
    replay(&mut table, &follower.delivered).unwrap_or_else(|e| panic!("seed {seed}: replay: {e}"));
    assert_eq!(
        table,
        store_table(&reader),
        "seed {seed}: stream replay differs from the store"
    );
}
