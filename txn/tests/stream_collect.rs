//! Collecting stream records: a collection below every reader's published position deletes
//! the records (and external payloads) those readers delivered, never one a reader still
//! needs, and raises a mark that a reader left behind sees when it publishes.
//!
//! Each test runs a durable three-node `LocalCluster` (4 regions, in-memory pessimistic
//! locks) with a coordinator that owns a binlog, and a 1 s record skew bound (the least
//! that keeps records' one-phase commits) so that a reader's lower bound trails its
//! watermark by little.

mod binlog_support;
mod stream_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use binlog_support::key;
use parking_lot::Mutex;
use stream_support::{Follower, Table, config, coordinator, replay, store_table};
use surge_txn::codec::{compose_ts, physical_ms};
use surge_txn::{
    ClientConfig, ClusterConfig, LocalCluster, LockMode, StreamOptions, TxnClient, TxnMode,
};

/// The nodes' MVCC GC life time in the test that collects garbage.
const LIFE: Duration = Duration::from_secs(3);

fn stream() -> StreamOptions {
    StreamOptions::default()
        .with_max_record_skew(Duration::from_millis(1000))
        .with_chunk_bytes(64 << 10)
        .with_inline_max_bytes(256 << 10)
}

/// The key of row `name` of table `id`, laid out as TiDB's (a record in the table's lane).
fn table_row(id: u64, name: &str) -> Vec<u8> {
    let mut k = vec![b't'];
    k.extend_from_slice(&(id | 1 << 63).to_be_bytes());
    k.extend_from_slice(b"_r");
    k.extend_from_slice(name.as_bytes());
    k
}

/// Commits `n` transactions named `tag`: small ones in a table lane and in the empty lane,
/// and every third an external record (300 KiB of value: 5 payload chunks of 64 KiB).
fn commit_batch(client: &TxnClient, tag: &str, n: usize, want: &mut Table) -> BTreeSet<u64> {
    let mut started = BTreeSet::new();
    for i in 0..n {
        let mut t = client.begin(TxnMode::Optimistic).expect("begin");
        let (k, v) = match i % 3 {
            0 => (table_row(1, &format!("{tag}{i}")), vec![1u8; 16]),
            1 => (key((i % 4) as u8, &format!("{tag}{i}")), vec![2u8; 16]),
            _ => (key(1, &format!("{tag}{i}")), vec![i as u8; 300 << 10]),
        };
        t.put(&k, &v).expect("put");
        started.insert(t.start_ts());
        t.commit().expect("commit");
        want.insert(k, v);
    }
    started
}

/// Rounds until the watermark passes every commit so far.
fn catch_up(f: &mut Follower, reader: &TxnClient) {
    let now = reader.current_ts().expect("ts");
    while f.resolved < now {
        f.round(reader);
    }
}

#[test]
fn a_collection_below_every_position_takes_only_delivered_records() {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(
        ClusterConfig::new(dir.path().join("cluster"))
            .with_regions(4)
            .with_lock_mode(LockMode::InMemory)
            .with_gc_life_time(Some(LIFE)),
    )
    .expect("cluster");
    let client = coordinator(&c, &dir.path().join("binlog"), 1, config(3000, stream()));
    let reader = TxnClient::new(c.router(), ClientConfig::default().with_stream(stream()));
    let mut want = Table::new();
    let mut f = Follower::default();

    let first = commit_batch(&client, "a", 9, &mut want);
    // Past the skew bound, so that the watermark's lower bound is above the first batch.
    std::thread::sleep(Duration::from_millis(1200));
    catch_up(&mut f, &reader);
    assert_eq!(f.start_set(), first);
    let resolved_a = f.resolved;
    let delivered = f.delivered.len();
    assert_eq!(reader.stream_collected_below().expect("mark"), 0);
    assert_eq!(
        reader
            .stream_publish_position(1, f.lower, f.resolved)
            .expect("publish"),
        0
    );
    let positions = reader.stream_positions().expect("positions");
    assert_eq!(positions.len(), 1);
    assert_eq!(
        (
            positions[0].owner,
            positions[0].lower_record_ts,
            positions[0].done_ts
        ),
        (1, f.lower, f.resolved)
    );

    // A second batch the follower has not read yet, all of it above the position.
    let second = commit_batch(&client, "b", 6, &mut want);
    // One delete transaction at most: the mark goes up at once, the sweep is left to the
    // next call.
    let first_call = reader.stream_collect(f.lower, 1).expect("collect");
    assert_eq!(first_call.below_record_ts, f.lower);
    assert!(first_call.more(), "{first_call:?}");
    let report = reader.stream_collect(f.lower, usize::MAX).expect("collect");
    println!("{first_call:?} {report:?}");
    assert_eq!(report.below_record_ts, f.lower);
    assert!(!report.more(), "{report:?}");
    // 9 records: 6 inline (one key each), 3 external (one key and 5 payload chunks each).
    assert_eq!(first_call.record_keys + report.record_keys, 9);
    assert_eq!(first_call.payload_keys + report.payload_keys, 15);
    // Again: nothing left below the mark, nothing done.
    let again = reader
        .stream_collect(f.lower, usize::MAX)
        .expect("collect again");
    assert_eq!(
        (again.record_keys, again.payload_keys, again.txns),
        (0, 0, 0)
    );

    // The follower goes on from its position and gets the second batch whole.
    catch_up(&mut f, &reader);
    let after: BTreeSet<u64> = f.delivered[delivered..]
        .iter()
        .map(|t| t.start_ts)
        .collect();
    assert_eq!(after, second);
    // The collection deleted the records; a read of the write history from the beginning
    // still finds their committed versions until MVCC garbage collection removes them
    // (below a deletion, as any deleted row's). Then nothing of the first batch is left.
    let first_read = reader.stream_scan(0, resolved_a, 0).expect("history scan");
    assert_eq!(first_read.len(), 9);
    std::thread::sleep(LIFE + Duration::from_millis(600));
    let now = reader.current_ts().expect("ts");
    let life_ms = u64::try_from(LIFE.as_millis()).expect("ms");
    let safe_point = compose_ts(physical_ms(now) - life_ms - 200, 0);
    let gc = reader.gc(safe_point).expect("gc");
    println!("{gc:?}");
    assert!(
        reader
            .stream_scan(0, resolved_a, 0)
            .expect("history scan")
            .is_empty()
    );
    // User data is untouched, and the stream replays over the rows the collection left.
    assert_eq!(store_table(&reader), want);
    let mut table = Table::new();
    replay(&mut table, &f.delivered).expect("replay");
    assert_eq!(table, want);

    // A reader that needs records below the mark learns so when it publishes, and its
    // position is not written: it must not hold the collection back.
    let mark = report.below_record_ts;
    assert_eq!(reader.stream_collected_below().expect("mark"), mark);
    assert_eq!(
        reader.stream_publish_position(2, 0, 0).expect("publish"),
        mark
    );
    let owners: Vec<u64> = reader
        .stream_positions()
        .expect("positions")
        .iter()
        .map(|p| p.owner)
        .collect();
    assert_eq!(owners, [1]);
    // A position is what was published last, lower or not (a copy replaced by an older
    // one needs more again) ...
    reader
        .stream_publish_position(1, mark, mark)
        .expect("publish lower");
    let p = reader.stream_positions().expect("positions")[0];
    assert_eq!((p.lower_record_ts, p.done_ts), (mark, mark));
    // ... and one found below the mark is removed.
    reader
        .stream_publish_position(1, mark - 1, 0)
        .expect("publish");
    assert!(reader.stream_positions().expect("positions").is_empty());
    assert!(!reader.stream_remove_position(1).expect("remove"));
    // The mark never goes back.
    let lower = reader
        .stream_collect(1, usize::MAX)
        .expect("collect below the mark");
    assert_eq!(lower.below_record_ts, mark);
}

/// Writers commit while a follower reads and a collector deletes below the follower's
/// published position after every round: the follower still delivers every acknowledged
/// transaction exactly once, in order, and the stream replays to the store's rows.
#[test]
fn collections_racing_commits_and_a_follower_lose_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    // MVCC garbage collection runs too (a second's life time), so that a record collected
    // too early is gone from the write history and the follower would miss it.
    let c = LocalCluster::start(
        ClusterConfig::new(dir.path().join("cluster"))
            .with_regions(4)
            .with_lock_mode(LockMode::InMemory)
            .with_gc_life_time(Some(Duration::from_secs(1))),
    )
    .expect("cluster");
    let writers: Vec<TxnClient> = (1..=2)
        .map(|id| {
            coordinator(
                &c,
                &dir.path().join(format!("binlog{id}")),
                id,
                config(3000, stream()),
            )
        })
        .collect();
    let reader = TxnClient::new(c.router(), ClientConfig::default().with_stream(stream()));
    let collector = TxnClient::new(c.router(), ClientConfig::default().with_stream(stream()));
    let acked = Mutex::new(BTreeMap::<u64, u64>::new());
    let want = Mutex::new(Table::new());
    let done = AtomicBool::new(false);
    let mut f = Follower::default();
    let mut collected = 0u64;
    let mut gc_removed = 0u64;
    std::thread::scope(|s| {
        let handles: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(n, client)| {
                let (acked, want) = (&acked, &want);
                s.spawn(move || {
                    for i in 0..45usize {
                        let mut t = client.begin(TxnMode::Optimistic).expect("begin");
                        let k = if i % 2 == 0 {
                            table_row(1, &format!("w{n}-{i}"))
                        } else {
                            key((i % 4) as u8, &format!("w{n}-{i}"))
                        };
                        let v = if i % 9 == 8 {
                            vec![n as u8; 300 << 10]
                        } else {
                            vec![i as u8; 8]
                        };
                        t.put(&k, &v).expect("put");
                        let start = t.start_ts();
                        let commit = t.commit().expect("commit");
                        acked.lock().insert(start, commit);
                        want.lock().insert(k, v);
                        std::thread::sleep(Duration::from_millis(50));
                    }
                })
            })
            .collect();
        let (f, done, reader, collector, collected, gc_removed) = (
            &mut f,
            &done,
            &reader,
            &collector,
            &mut collected,
            &mut gc_removed,
        );
        let follow = s.spawn(move || {
            let mut published = 0;
            while !done.load(Ordering::Acquire) {
                f.round(reader);
                // A watermark's lower bound may come out below the last one; a reader
                // keeps the larger (records below it were delivered), as the stream
                // writer does.
                published = published.max(f.lower);
                let mark = reader
                    .stream_publish_position(1, published, f.resolved)
                    .expect("publish");
                assert!(
                    mark <= published,
                    "collected past the follower: {mark} > {published}"
                );
                let report = collector
                    .stream_collect_with(
                        |positions, _, _| positions.iter().map(|p| p.lower_record_ts).min(),
                        usize::MAX,
                    )
                    .expect("collect");
                *collected += report.record_keys;
                let now = collector.current_ts().expect("ts");
                let safe_point = compose_ts(physical_ms(now) - 1300, 0);
                *gc_removed += collector.gc(safe_point).expect("gc").removed.records;
            }
        });
        for h in handles {
            h.join().expect("writer");
        }
        done.store(true, Ordering::Release);
        follow.join().expect("follower");
    });
    catch_up(&mut f, &reader);
    let acked = acked.into_inner();
    println!(
        "acked {}, rounds {}, record keys collected {collected}, versions removed by GC {gc_removed}",
        acked.len(),
        f.rounds
    );
    assert_eq!(acked.len(), 90);
    assert!(collected > 0, "nothing was collected while the writers ran");
    assert!(gc_removed > 0, "MVCC garbage collection removed nothing");
    let got = f.start_set();
    assert_eq!(got, acked.keys().copied().collect::<BTreeSet<u64>>());
    for t in &f.delivered {
        assert_eq!(acked.get(&t.start_ts), Some(&t.commit_ts));
    }
    assert!(
        f.delivered
            .windows(2)
            .all(|w| (w[0].commit_ts, w[0].start_ts) < (w[1].commit_ts, w[1].start_ts))
    );
    let mut table = Table::new();
    replay(&mut table, &f.delivered).expect("replay");
    assert_eq!(table, want.into_inner());
    assert_eq!(table, store_table(&reader));

    // Once MVCC garbage collection passed every deletion, exactly the records below the
    // mark are gone: every one at or above it is still there.
    std::thread::sleep(Duration::from_millis(1500));
    let now = reader.current_ts().expect("ts");
    reader
        .gc(compose_ts(physical_ms(now) - 1300, 0))
        .expect("gc");
    let mark = reader.stream_collected_below().expect("mark");
    let kept: BTreeSet<u64> = f
        .delivered
        .iter()
        .filter(|t| t.record_ts >= mark)
        .map(|t| t.start_ts)
        .collect();
    let left: BTreeSet<u64> = reader
        .stream_scan(0, f.resolved, 0)
        .expect("history scan")
        .iter()
        .map(|t| t.start_ts)
        .collect();
    assert!(
        !kept.is_empty() && kept.len() < f.delivered.len(),
        "mark {mark}"
    );
    assert_eq!(left, kept, "records at or above the mark {mark}");
}
