//! Stream records: every transaction with binlog events commits, in the same Percolator
//! transaction, a record of them under the stream prefix; `stream_resolved_ts` and
//! `stream_scan` read them back as one stream in commit_ts order.
//!
//! Each test runs a durable three-node `LocalCluster` (4 regions, in-memory pessimistic
//! locks) with coordinators that each own a binlog.

mod binlog_support;
mod stream_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use binlog_support::{cluster, key};
use parking_lot::Mutex;
use stream_support::{Follower, Table, config, coordinator, replay, store_table};
use surge_txn::{
    ClientConfig, ClusterConfig, EngineKind, LocalCluster, LockMode, STREAM_PREFIX,
    StreamGroupKind, StreamOptions, TxnClient, TxnError, TxnMode,
};

/// Transaction `i` of a coordinator: moves a unit between two of 6 shared keys (in two
/// regions), inserting a key that is absent; every third one is optimistic (it conflicts
/// and rolls back now and then).
/// With `tables`, the keys are rows of two TiDB-style tables (`t{id}_r...`, both in one
/// region) instead, so the records go to the tables' lanes and commit in one phase.
fn transfer(
    client: &TxnClient,
    i: u64,
    seed: u64,
    tables: bool,
) -> Result<(u64, u64), (u64, TxnError)> {
    let mode = if i.is_multiple_of(3) {
        TxnMode::Optimistic
    } else {
        TxnMode::Pessimistic
    };
    let shaped = |r: u64, name: String| {
        if tables {
            table_row(1 + r % 2, &name)
        } else {
            key((r % 4) as u8, &name)
        }
    };
    let a = shaped(seed, format!("acct{}", (i + seed) % 3));
    let b = shaped(seed + 1, format!("acct{}", (i * 7 + seed) % 3));
    let mut t = client.begin(mode).map_err(|e| (0, e))?;
    let start_ts = t.start_ts();
    let run = |t: &mut surge_txn::Transaction| -> Result<(), TxnError> {
        let va = t.get_for_update(&a)?.map_or(0, |v| parse(&v));
        let vb = t.get_for_update(&b)?.map_or(0, |v| parse(&v));
        t.put(&a, (va - 1).to_string().as_bytes())?;
        t.put(&b, (vb + 1).to_string().as_bytes())?;
        Ok(())
    };
    match run(&mut t) {
        Ok(()) => t.commit().map(|c| (start_ts, c)).map_err(|e| (start_ts, e)),
        Err(e) => {
            t.rollback();
            Err((start_ts, e))
        }
    }
}

/// A coordinator of `c` with its binlog in `dir`, server id `id`, `ttl_ms` locks and the
/// default stream options.
fn default_coordinator(c: &LocalCluster, dir: &std::path::Path, id: u32, ttl_ms: u64) -> TxnClient {
    coordinator(c, dir, id, config(ttl_ms, StreamOptions::default()))
}

/// The key of row `name` of table `id`, laid out as TiDB's: `t`, the 8-byte id, `_r`.
fn table_row(id: u64, name: &str) -> Vec<u8> {
    let mut k = vec![b't'];
    k.extend_from_slice(&(id | 1 << 63).to_be_bytes());
    k.extend_from_slice(b"_r");
    k.extend_from_slice(name.as_bytes());
    k
}

fn parse(v: &[u8]) -> i64 {
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Several coordinators commit conflicting transactions on the same keys while a follower
/// consumes the stream watermark by watermark. Checked: every record it receives is above
/// the last watermark it consumed; in the end it received every acknowledged transaction
/// exactly once and no failed one, in rising (commit_ts, start_ts), the same as a scan from
/// the beginning; and the stream replayed with STRICT rules gives the store's table.
#[test]
fn coordinators_commit_into_one_stream_in_commit_ts_order() {
    one_stream_of_coordinators(None, false);
}

/// The same on the memory engine (the default is the disk engine).
#[test]
fn coordinators_commit_into_one_stream_on_the_memory_engine() {
    one_stream_of_coordinators(Some(EngineKind::Memory), false);
}

/// The same with the rows in two tables: their records go to the tables' lanes (each in
/// the table's region), registered by whichever coordinator comes first; the stream is
/// still one, complete and in order, and those commits take one phase.
#[test]
fn table_lanes_merge_into_the_same_one_stream() {
    one_stream_of_coordinators(None, true);
}

fn one_stream_of_coordinators(engine: Option<EngineKind>, tables: bool) {
    let dir = tempfile::tempdir().expect("dir");
    let c = match engine {
        None => cluster(&dir.path().join("cluster")),
        Some(kind) => LocalCluster::start(
            ClusterConfig::new(dir.path().join("cluster"))
                .with_regions(4)
                .with_lock_mode(LockMode::InMemory)
                .with_engine(kind),
        )
        .expect("cluster"),
    };
    let coordinators: Vec<TxnClient> = (1..=3)
        .map(|id| {
            coordinator(
                &c,
                &dir.path().join(format!("binlog{id}")),
                id,
                config(3000, StreamOptions::default()),
            )
        })
        .collect();
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    let acked = Mutex::new(BTreeMap::<u64, u64>::new());
    let failed = Mutex::new(BTreeSet::<u64>::new());
    let done = AtomicBool::new(false);
    let per_coordinator = 40;
    let mut follower = Follower::default();
    std::thread::scope(|s| {
        for (n, client) in coordinators.iter().enumerate() {
            let (acked, failed) = (&acked, &failed);
            s.spawn(move || {
                for i in 0..per_coordinator {
                    match transfer(client, i, n as u64, tables) {
                        Ok((start, commit)) => {
                            acked.lock().insert(start, commit);
                        }
                        Err((start, e)) => {
                            assert!(e.is_retryable(), "txn {start}: {e}");
                            failed.lock().insert(start);
                        }
                    }
                }
            });
        }
        let follower = &mut follower;
        let (done, reader) = (&done, &reader);
        let f = s.spawn(move || {
            while !done.load(Ordering::Acquire) {
                follower.round(reader);
            }
        });
        // Wait for the writers (all spawned threads but the follower), then stop it.
        while acked.lock().len() + failed.lock().len() < 3 * per_coordinator as usize {
            std::thread::sleep(Duration::from_millis(20));
        }
        done.store(true, Ordering::Release);
        f.join().expect("follower");
    });
    // A last round once every writer is done delivers the rest.
    follower.round(&reader);
    let acked = acked.into_inner();
    let failed = failed.into_inner();
    println!(
        "acked {}, failed {}, follower rounds {}",
        acked.len(),
        failed.len(),
        follower.rounds
    );
    assert!(acked.len() >= 30, "too few commits: {}", acked.len());
    assert!(
        follower.rounds >= 3,
        "the follower ran {} rounds",
        follower.rounds
    );

    let got = follower.start_set();
    let want: BTreeSet<u64> = acked.keys().copied().collect();
    assert_eq!(
        got, want,
        "streamed transactions differ from the acknowledged ones"
    );
    assert!(
        got.is_disjoint(&failed),
        "a failed transaction was streamed"
    );
    for t in &follower.delivered {
        assert_eq!(
            acked.get(&t.start_ts),
            Some(&t.commit_ts),
            "txn {}",
            t.start_ts
        );
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.groups[0].kind, StreamGroupKind::Transactional);
    }
    follower.check_against_full_scan(&reader);
    let mut table = Table::new();
    replay(&mut table, &follower.delivered).unwrap_or_else(|e| panic!("stream replay: {e}"));
    assert_eq!(
        table,
        store_table(&reader),
        "stream replay differs from the store"
    );
    let one_pc: u64 = coordinators
        .iter()
        .map(|c| c.counters().one_pc_commits)
        .sum();
    if tables {
        // Both tables' rows and their lanes lie in one region: most commits are one
        // phase (a few take two, e.g. past the drift bound).
        assert!(
            one_pc * 2 >= acked.len() as u64,
            "{one_pc} one-phase commits of {}",
            acked.len()
        );
        // A user scan over the tables returns rows only, never a lane's records.
        let rows = reader
            .scan(&table_row(1, ""), Some(&table_row(3, "")), 1000)
            .expect("scan");
        assert!(!rows.is_empty());
        assert!(
            rows.iter().all(|(k, _)| k[9..].starts_with(b"_r")),
            "{rows:?}"
        );
    } else {
        assert_eq!(one_pc, 0, "a record in the empty lane is in another region");
    }
}

/// A record larger than the chunk size is stored in several keys and comes back whole.
#[test]
fn a_big_record_is_chunked_and_reassembled() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let stream = StreamOptions::default().with_chunk_bytes(1 << 20);
    let client = coordinator(&c, &dir.path().join("binlog"), 1, config(3000, stream));
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    let mut want = Table::new();
    for i in 0..5u8 {
        let value: Vec<u8> = (0..(1 << 20) + 17).map(|j: u32| (j as u8) ^ i).collect();
        let k = key(i % 4, &format!("big{i}"));
        t.put(&k, &value).expect("put");
        want.insert(k, value);
    }
    let start_ts = t.start_ts();
    let commit_ts = t.commit().expect("commit");
    let wm = client.stream_resolved_ts().expect("watermark");
    assert!(wm.resolved_ts >= commit_ts);
    let txns = client.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert_eq!(txns.len(), 1);
    assert_eq!((txns[0].start_ts, txns[0].commit_ts), (start_ts, commit_ts));
    let bytes: usize = txns[0].groups.iter().map(|g| g.event_bytes()).sum();
    assert!(bytes > 5 << 20, "record of {bytes} bytes");
    let mut table = Table::new();
    replay(&mut table, &txns).expect("replay");
    assert_eq!(table, want);
    // The record's chunks sit under the stream prefix, invisible to scans.
    assert_eq!(store_table(&client), want);
}

/// The coordinator waits between its record's prewrite and its commit timestamp longer
/// than the skew bound: the transaction is rolled back with a retryable error, nothing of
/// it is in the store or the stream, and the next transaction commits.
#[test]
fn a_commit_slower_than_the_skew_bound_rolls_back() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let stream = StreamOptions::default().with_max_record_skew(Duration::from_millis(200));
    let client = coordinator(&c, &dir.path().join("binlog"), 1, config(3000, stream));
    let k = key(1, "slow");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&k, b"v").expect("put");
    let slow = t.__commit_pausing_after_prewrite(|| std::thread::sleep(Duration::from_millis(500)));
    match slow {
        Err(
            e @ TxnError::StreamRecordTooSlow {
                skew_ms,
                max_skew_ms,
                ..
            },
        ) => {
            assert!(e.is_retryable());
            assert!(skew_ms > max_skew_ms && max_skew_ms == 200, "{e}");
        }
        other => panic!("expected StreamRecordTooSlow, got {other:?}"),
    }
    assert_eq!(client.get(&k).expect("get"), None);
    let wm = client.stream_resolved_ts().expect("watermark");
    assert_eq!(wm.locks_seen, 0, "the record's lock was rolled back");
    assert!(
        client
            .stream_scan(0, wm.resolved_ts, 0)
            .expect("scan")
            .is_empty()
    );

    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&k, b"w").expect("put");
    let commit_ts = t.commit().expect("the next commit");
    let wm = client.stream_resolved_ts().expect("watermark");
    let txns = client.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert_eq!(
        txns.iter().map(|t| t.commit_ts).collect::<Vec<_>>(),
        vec![commit_ts]
    );
}

/// A coordinator that stops after prewriting (its record locked) holds the watermark at
/// its record_ts until its locks' TTL runs out; then the watermark passes it and the record
/// is rolled back (its primary was never committed). One that stops after its primary's
/// commit holds it until its record is a second old, and its record is then committed.
/// The stalls are printed.
#[test]
fn a_dead_coordinator_holds_the_watermark_for_about_its_ttl() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let ttl_ms = 1500;
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    for (n, after_commit) in [(1u32, false), (2, true)] {
        let client = coordinator(
            &c,
            &dir.path().join(format!("binlog{n}")),
            n,
            config(ttl_ms, StreamOptions::default()),
        );
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        t.put(&key(0, &format!("dead{n}")), b"x").expect("put");
        t.put(&key(2, &format!("dead{n}")), b"y").expect("put");
        let start_ts = t.start_ts();
        let abandoned = Instant::now();
        let commit_ts = if after_commit {
            Some(
                t.__abandon_after_primary_commit()
                    .expect("primary committed"),
            )
        } else {
            t.__abandon_after_prewrite().expect("prewritten");
            None
        };
        // Held while the TTL runs.
        // (A record lock holds it at its record_ts: at or above start_ts, below the
        // oracle.)
        let wm = reader.stream_resolved_ts().expect("watermark");
        assert!(
            wm.resolved_ts < wm.oracle_ts && wm.resolved_ts >= start_ts,
            "the watermark passed a live record lock: {wm:?}"
        );
        assert!(wm.locks_seen >= 1);
        let stall = loop {
            let wm = reader.stream_resolved_ts().expect("watermark");
            // Nothing else writes: free once it stands at the oracle.
            if wm.resolved_ts == wm.oracle_ts {
                break abandoned.elapsed();
            }
            assert!(
                abandoned.elapsed() < Duration::from_millis(ttl_ms + 5000),
                "the watermark stayed held for {:?}",
                abandoned.elapsed()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        println!(
            "dead coordinator ({}): watermark held {stall:?} with a {ttl_ms} ms lock TTL",
            if after_commit {
                "after primary commit"
            } else {
                "after prewrite"
            }
        );
        // Before the commit point: held for the TTL. After it: for about a second.
        let least = if after_commit { 800 } else { ttl_ms * 3 / 4 };
        assert!(
            stall >= Duration::from_millis(least),
            "released after {stall:?}"
        );
        let wm = reader.stream_resolved_ts().expect("watermark");
        let txns = reader.stream_scan(0, wm.resolved_ts, 0).expect("scan");
        let found = txns
            .iter()
            .find(|t| t.start_ts == start_ts)
            .map(|t| t.commit_ts);
        assert_eq!(found, commit_ts, "record of the dead coordinator's txn");
    }
}

/// A stream reader that settles a dead coordinator's record (its primary committed)
/// commits the record's keys only: the transaction's rows beside it, in the table's region,
/// stay locked for their own readers, which then find them committed. A region-wide resolve
/// there had every follower commit a large transaction's whole region in one proposal, the
/// work its coordinator was doing at the time, under the same latches.
#[test]
fn a_stream_reader_settles_only_its_record_keys() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = default_coordinator(&c, &dir.path().join("binlog"), 1, 1000);
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    let rows: Vec<Vec<u8>> = (0..3).map(|i| table_row(1, &format!("r{i}"))).collect();
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    for row in &rows {
        t.put(row, b"v").expect("put");
    }
    let start_ts = t.start_ts();
    let commit_ts = t
        .__abandon_after_primary_commit()
        .expect("primary committed");
    let started = Instant::now();
    let wm = loop {
        let wm = reader.stream_resolved_ts().expect("watermark");
        if wm.resolved_ts > commit_ts {
            break wm;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "watermark held"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let txns = reader.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert_eq!(
        txns.iter()
            .map(|t| (t.start_ts, t.commit_ts))
            .collect::<Vec<_>>(),
        vec![(start_ts, commit_ts)]
    );
    let locked = user_locks_of(&c, start_ts);
    assert_eq!(locked.len(), rows.len() - 1, "the secondaries: {locked:?}");
    assert!(locked.iter().all(|k| rows.contains(k)), "{locked:?}");
    let mut r = reader.begin(TxnMode::Optimistic).expect("begin");
    for row in &rows {
        assert_eq!(r.get(row).expect("get"), Some(b"v".to_vec()));
    }
    assert!(user_locks_of(&c, start_ts).is_empty());
}

/// A commit whose secondaries go in the background, slowly, commits its stream record
/// before returning, ahead of them: the watermark passes the transaction at once, with no
/// reader settling its record (behind the paced secondaries it waited two seconds and was
/// settled by the reader from the primary).
#[test]
fn the_record_is_committed_before_paced_secondaries() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = coordinator(
        &c,
        &dir.path().join("binlog"),
        1,
        config(3000, StreamOptions::default())
            .with_async_secondaries(true)
            .with_secondary_batch_keys(1)
            .with_secondary_pace(Some(Duration::from_millis(400))),
    );
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    // Rows of table 1 (the record's lane, in their region, after them in key order) and
    // keys of another region, so the commit takes two phases.
    for i in 0..6 {
        t.put(&table_row(1, &format!("r{i}")), b"v").expect("put");
    }
    t.put(&key(2, "other"), b"v").expect("put");
    let start_ts = t.start_ts();
    let commit_ts = t.commit().expect("commit");
    let wm = reader.stream_resolved_ts().expect("watermark");
    assert!(
        wm.resolved_ts > commit_ts,
        "the watermark waits for the record: {wm:?}"
    );
    assert_eq!(wm.locks_settled, 0, "{wm:?}");
    let txns = reader.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert_eq!(
        txns.iter()
            .map(|t| (t.start_ts, t.commit_ts))
            .collect::<Vec<_>>(),
        vec![(start_ts, commit_ts)]
    );
}

/// Whether `key` is the stream's: under its prefix, or under a table lane's (`t{id}` and
/// the prefix).
fn is_stream_key(key: &[u8]) -> bool {
    key.starts_with(STREAM_PREFIX) || key.get(9..).is_some_and(|k| k.starts_with(STREAM_PREFIX))
}

/// The keys outside the stream's locked by transaction `start_ts`, in every region.
fn user_locks_of(c: &LocalCluster, start_ts: u64) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for region in c.regions() {
        let leader = c.leader_of_group(region.id).expect("leader");
        let reply = c.call(
            leader,
            surge_txn::rpc::KvRequest::ScanLock {
                ctx: surge_txn::rpc::Context {
                    region_id: region.id,
                    epoch: region.epoch,
                    gc_hold_ts: 0,
                },
                max_ts: u64::MAX,
                start: region.start.clone(),
                end: None,
                limit: 0,
            },
        );
        match reply {
            Ok(surge_txn::rpc::KvResponse::Locks { locks }) => keys.extend(
                locks
                    .into_iter()
                    .filter(|l| l.lock_ts == start_ts && !is_stream_key(&l.key))
                    .map(|l| l.key),
            ),
            other => panic!("scan locks of region {}: {other:?}", region.id),
        }
    }
    keys
}

/// Keys under the stream prefix are not the users': writes are refused, scans skip them.
#[test]
fn the_stream_prefix_is_reserved() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = default_coordinator(&c, &dir.path().join("binlog"), 1, 3000);
    let mut reserved = STREAM_PREFIX.to_vec();
    reserved.extend_from_slice(b"mine");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    for r in [
        t.put(&reserved, b"v"),
        t.insert(&reserved, b"v"),
        t.delete(&reserved),
        t.get_for_update(&reserved).map(|_| ()),
    ] {
        assert!(
            matches!(r, Err(TxnError::ReservedKey { ref key }) if *key == reserved),
            "{r:?}"
        );
    }
    // Payload keys of external records are reserved too, and so are a table lane's
    // record keys and the lane registry.
    let mut lane_key = table_row(7, "")[..9].to_vec();
    lane_key.extend_from_slice(STREAM_PREFIX);
    for k in [
        b"\xff\xffstream:x".to_vec(),
        lane_key,
        b"\xff\xffstream.t".to_vec(),
    ] {
        assert!(
            matches!(t.put(&k, b"v"), Err(TxnError::ReservedKey { .. })),
            "{k:?}"
        );
    }
    // A key just after the reserved range is ordinary, and a scan crossing the range
    // returns it and the user keys below, not the records.
    let after = b"\xff\xffstream;x".to_vec();
    t.put(&after, b"a").expect("put after the range");
    t.put(&key(3, "z"), b"z").expect("put");
    t.commit().expect("commit");
    let wm = client.stream_resolved_ts().expect("watermark");
    assert_eq!(
        client
            .stream_scan(0, wm.resolved_ts, 0)
            .expect("scan")
            .len(),
        1
    );
    let keys: Vec<Vec<u8>> = client
        .scan(b"", None, 100)
        .expect("scan")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec![key(3, "z"), after.clone()]);
    let from_prefix = client.scan(STREAM_PREFIX, None, 100).expect("scan");
    assert_eq!(from_prefix.len(), 1);
    assert_eq!(from_prefix[0].0, after);
}

/// DDL logged with no key written becomes a transaction of its own in the stream: one
/// standalone group holding the Query event. With a record, a single-region transaction
/// commits in two phases; without a binlog, one-phase commit is still used.
#[test]
fn ddl_alone_streams_as_a_standalone_group_and_records_take_two_phases() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = default_coordinator(&c, &dir.path().join("binlog"), 1, 3000);
    client
        .binlog_query("shop", "CREATE TABLE t (a INT PRIMARY KEY)")
        .expect("DDL");
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.binlog_query("shop", "DROP TABLE t")
        .expect("DDL in a txn");
    let ddl_ts = t.commit().expect("commit");
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(1, "one"), b"1").expect("put");
    t.commit().expect("commit");
    assert_eq!(
        client.counters().one_pc_commits,
        0,
        "no one-phase commit with a record"
    );

    let wm = client.stream_resolved_ts().expect("watermark");
    let txns = client.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert_eq!(txns.len(), 3);
    assert_eq!(txns[1].commit_ts, ddl_ts);
    for (t, sql) in txns.iter().zip(["CREATE TABLE", "DROP TABLE"]) {
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.groups[0].kind, StreamGroupKind::Standalone);
        let events = t.groups[0].decode_events().expect("events");
        let surge_binlog::EventBody::Query(q) = &events[0].body else {
            panic!("not a Query event: {:?}", events[0]);
        };
        assert!(String::from_utf8_lossy(&q.query).starts_with(sql));
    }
    assert_eq!(txns[2].groups[0].kind, StreamGroupKind::Transactional);

    // Streaming off, or no binlog: no records, one-phase commits again.
    let plain = TxnClient::new(c.router(), ClientConfig::default());
    let mut t = plain.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(1, "two"), b"2").expect("put");
    t.commit().expect("commit");
    assert_eq!(plain.counters().one_pc_commits, 1);
    let off = coordinator(
        &c,
        &dir.path().join("binlog-off"),
        2,
        config(3000, StreamOptions::default().with_enabled(false)),
    );
    let mut t = off.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(1, "three"), b"3").expect("put");
    t.commit().expect("commit");
    let wm = client.stream_resolved_ts().expect("watermark");
    assert_eq!(
        client
            .stream_scan(0, wm.resolved_ts, 0)
            .expect("scan")
            .len(),
        3
    );
}

/// Hot-row groups: each kept member is its own group of its transaction's record, in
/// member order, so the stream in commit_ts order replays every update one by one: the
/// key's values along the stream are 1, 2, ..., N for N increments.
#[test]
fn hot_row_members_stream_as_one_group_each_in_order() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = default_coordinator(&c, &dir.path().join("binlog"), 1, 3000);
    let hot = key(0, "counter");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&hot, &surge_txn::HotOp::encode(0)).expect("put");
    t.commit().expect("insert the row");
    let (threads, updates) = (16u64, 10u64);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (client, hot) = (client.clone(), hot.clone());
            s.spawn(move || {
                for _ in 0..updates {
                    client
                        .hot_update(
                            &hot,
                            surge_txn::HotOp::add(1),
                            surge_txn::HotHints::hot_update(),
                        )
                        .expect("hot update");
                }
            });
        }
    });
    let wm = client.stream_resolved_ts().expect("watermark");
    let txns = client.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    let groups: usize = txns.iter().map(|t| t.groups.len()).sum();
    let n = threads * updates;
    assert_eq!(
        groups as u64,
        n + 1,
        "one group per member, plus the insert"
    );
    assert!(
        txns.iter().any(|t| t.groups.len() > 1),
        "no transaction carried a hot-row group of several members"
    );
    // Values along the stream: each group's row after the update.
    let mut seen = Vec::new();
    for t in &txns[1..] {
        for g in &t.groups {
            let mut table = Table::new();
            table.insert(hot.clone(), Vec::new());
            let one = surge_txn::StreamTxn {
                groups: vec![g.clone()],
                ..t.clone()
            };
            replay(&mut table, &[one]).expect("member replay");
            seen.push(parse(&table[&hot]));
        }
    }
    let want: Vec<i64> = (1..=n as i64).collect();
    assert_eq!(seen, want, "members out of order in the stream");
    let mut table = Table::new();
    replay(&mut table, &txns).expect("replay");
    assert_eq!(table, store_table(&client));
}

/// A record over `inline_max_bytes` is stored external: its chunks as payload keys
/// prewritten with the other keys, one value under its record key. It reads back whole,
/// also when its coordinator died after the commit point with the payload still locked
/// (the reader's snapshot read commits it from the primary).
#[test]
fn an_external_record_reads_back_whole_even_with_its_payload_locked() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let stream = StreamOptions::default()
        .with_chunk_bytes(64 << 10)
        .with_inline_max_bytes(256 << 10);
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    let mut want = Table::new();
    let mut expected = Vec::new();
    for (n, abandon) in [(1u32, false), (2, true)] {
        let client = coordinator(
            &c,
            &dir.path().join(format!("binlog{n}")),
            n,
            config(1000, stream.clone()),
        );
        let mut t = client.begin(TxnMode::Optimistic).expect("begin");
        for i in 0..4u8 {
            let value = vec![i ^ n as u8; 200 << 10];
            let k = key(i, &format!("ext{n}-{i}"));
            t.put(&k, &value).expect("put");
            want.insert(k, value);
        }
        let start_ts = t.start_ts();
        let commit_ts = if abandon {
            t.__abandon_after_primary_commit()
                .expect("primary committed")
        } else {
            t.commit().expect("commit")
        };
        expected.push((start_ts, commit_ts));
    }
    // The abandoned one's record lock holds the watermark until its TTL runs out.
    let started = Instant::now();
    let wm = loop {
        let wm = reader.stream_resolved_ts().expect("watermark");
        if wm.resolved_ts > expected[1].1 {
            break wm;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "watermark held"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let txns = reader.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    let got: Vec<(u64, u64)> = txns.iter().map(|t| (t.start_ts, t.commit_ts)).collect();
    assert_eq!(got, expected);
    let mut table = Table::new();
    replay(&mut table, &txns).expect("replay");
    assert_eq!(table, want);
    assert_eq!(store_table(&reader), want, "payload keys are not user data");
}

/// The stream's settings are kept once for the cluster: the first claim wins and later
/// ones (another coordinator's) get it back; they are not a lane and not user data.
#[test]
fn stream_settings_are_claimed_once() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let a = default_coordinator(&c, &dir.path().join("binlog-a"), 1, 3000);
    let b = TxnClient::new(c.router(), ClientConfig::default());
    assert_eq!(
        a.stream_claim_settings(b"size=1").expect("claim"),
        b"size=1"
    );
    assert_eq!(
        b.stream_claim_settings(b"size=2").expect("claim"),
        b"size=1"
    );
    assert_eq!(
        a.stream_claim_settings(b"size=1").expect("claim"),
        b"size=1"
    );
    // A record in a table lane still streams, and user scans see neither.
    let mut t = a.begin(TxnMode::Optimistic).expect("begin");
    t.put(&table_row(4, "r"), b"1").expect("put");
    let commit_ts = t.commit().expect("commit");
    let wm = b.stream_resolved_ts().expect("watermark");
    let txns = b.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert_eq!(
        txns.iter().map(|t| t.commit_ts).collect::<Vec<_>>(),
        vec![commit_ts]
    );
    let all = b.scan(b"", None, 100).expect("scan");
    assert_eq!(all.len(), 1, "{all:?}");
}

/// A transaction that took its timestamps before its table's lane was registered, and a
/// reader whose watermark came in between (its registry read did not list the lane): the
/// transaction's record must commit above that watermark, or be in the scan up to it.
/// Before the fix the commit reused the transaction's own older timestamp as its
/// record_ts, committed in one phase below the watermark, in a lane the reader never
/// read: a record lost to that reader (a replica's stream copy missed it, another node's
/// did not). `other_registers` has another coordinator register the lane after the
/// watermark, so this one only learns it from the registry.
fn first_record_of_a_lane_stays_above_an_earlier_watermark(other_registers: bool) {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let client = default_coordinator(&c, &dir.path().join("binlog1"), 1, 3000);
    let other = default_coordinator(&c, &dir.path().join("binlog2"), 2, 3000);
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    // A commit without a record in the table's region first (a client without a binlog):
    // the region's first one-phase commit syncs its max_ts from the oracle, which would
    // lift this test's commit above the watermark by chance.
    let mut warm = reader.begin(TxnMode::Optimistic).expect("begin");
    warm.put(&table_row(6, "warm"), b"0").expect("put");
    warm.commit().expect("a commit without a record");
    // Some watermark first, so the reader has read the registry (without table 5's lane).
    reader.stream_resolved_ts().expect("watermark");
    let row = table_row(5, "a");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    let start_ts = t.start_ts();
    assert_eq!(t.get_for_update(&row).expect("lock"), None);
    t.put(&row, b"1").expect("put");
    // The other coordinator's transaction writes before the watermark (its binlog reads
    // the keys' existence then) and commits after it, registering the lane: its primary,
    // its smallest key, is table 5's row (`key(2, ..)` sorts after it). Optimistic, with a
    // key of another region: two phases, and no read or lock in the lane's region after
    // the watermark to raise its max_ts.
    let mut o = other.begin(TxnMode::Optimistic).expect("begin");
    if other_registers {
        o.put(&table_row(5, "b"), b"2").expect("put");
        o.put(&key(2, "b"), b"2").expect("put");
    }
    let wm = reader.stream_resolved_ts().expect("watermark");
    assert!(wm.resolved_ts > start_ts, "{wm:?} vs start_ts {start_ts}");
    if other_registers {
        o.commit().expect("the other coordinator's commit");
    }
    let commit_ts = t.commit().expect("commit");
    let txns = reader.stream_scan(0, wm.resolved_ts, 0).expect("scan");
    assert!(
        commit_ts > wm.resolved_ts || txns.iter().any(|x| x.start_ts == start_ts),
        "txn {start_ts} committed at {commit_ts}, at or below the watermark {} it was read \
         to, and its record is not in that read: {:?}",
        wm.resolved_ts,
        txns.iter()
            .map(|x| (x.start_ts, x.commit_ts))
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_first_record_of_a_lane_stays_above_an_earlier_watermark() {
    first_record_of_a_lane_stays_above_an_earlier_watermark(false);
}

#[test]
fn a_lane_learned_from_the_registry_stays_above_an_earlier_watermark() {
    first_record_of_a_lane_stays_above_an_earlier_watermark(true);
}

/// A region lets a one-phase commit with a record land up to a second above its record_ts,
/// and nothing checks a one-phase commit_ts against the skew bound afterwards: with a skew
/// bound below that, a record could commit further above its record_ts than the next
/// scan looks back. So such a client commits its records in two phases (where the skew is
/// checked before the commit point); with the default bound, in one.
#[test]
fn a_skew_bound_below_the_one_phase_drift_takes_two_phases() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let commit_one = |client: &TxnClient, row: &str| {
        let before = client.counters().one_pc_commits;
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        t.put(&table_row(5, row), b"v").expect("put");
        t.commit().expect("commit");
        client.counters().one_pc_commits - before
    };
    let tight = coordinator(
        &c,
        &dir.path().join("binlog1"),
        1,
        config(
            3000,
            // Below the one-phase drift bound (1 s), with room for a two-phase commit on
            // a loaded machine.
            StreamOptions::default().with_max_record_skew(Duration::from_millis(900)),
        ),
    );
    let default = default_coordinator(&c, &dir.path().join("binlog2"), 2, 3000);
    // The first commit of each registers or learns the lane; the second is the one looked at.
    commit_one(&default, "a");
    assert_eq!(
        commit_one(&default, "b"),
        1,
        "one phase with the default skew"
    );
    commit_one(&tight, "c");
    assert_eq!(commit_one(&tight, "d"), 0, "two phases with a 900 ms skew");
}

/// A table's region that grows by its stream records splits inside the table's lane (the
/// records outnumber the rows' versions). The lane keeps its newest records first, so the
/// split leaves the newest half with the rows and later records land beside them: the
/// table's commits still take one phase after the split, and a follower reads every record
/// across it. (With the oldest records first, every later record would go to the split-off
/// region and every later commit would take two phases.)
#[test]
fn a_split_inside_a_lane_keeps_the_rows_committing_in_one_phase() {
    // Small chunks: a record of a 4 KiB row is eight keys, one row version is one.
    split_keeps_the_rows_committing_in_one_phase(1, 4096, 512);
}

/// The same when the rows' versions outnumber the records (eight rows a commit, one record
/// key): the middle key falls among the rows, and the region moves the split to the table's
/// newest record (`region/split_key.rs`), so rows, index and later records stay together.
#[test]
fn a_split_among_a_tables_rows_keeps_them_with_their_records() {
    split_keeps_the_rows_committing_in_one_phase(8, 64, 1 << 20);
}

fn split_keeps_the_rows_committing_in_one_phase(rows: usize, value_len: usize, chunk: usize) {
    let dir = tempfile::tempdir().expect("dir");
    let c = LocalCluster::start(
        ClusterConfig::new(dir.path().join("cluster"))
            .with_regions(4)
            .with_lock_mode(LockMode::InMemory)
            .with_split_size(Some(256 << 10)),
    )
    .expect("cluster");
    let client = coordinator(
        &c,
        &dir.path().join("binlog1"),
        1,
        config(3000, StreamOptions::default().with_chunk_bytes(chunk)),
    );
    let value = vec![b'v'; value_len];
    let mut follower = Follower::default();
    let mut committed = 0usize;
    let mut commit = |i: usize| {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        for r in 0..rows {
            t.put(
                &table_row(5, &format!("row{}", (i * rows + r) % 64)),
                &value,
            )
            .expect("put");
        }
        t.commit().expect("commit");
        committed += 1;
    };
    let regions = c.regions().len();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 0;
    while c.regions().len() == regions {
        assert!(Instant::now() < deadline, "no split after {i} commits");
        commit(i);
        i += 1;
        if i % 16 == 0 {
            follower.round(&client);
        }
    }
    // Let a split that is still being applied settle before counting.
    std::thread::sleep(Duration::from_millis(500));
    let first_row = c.region_of(&table_row(5, "row0")).expect("row region");
    let row_regions: BTreeSet<u64> = (0..64)
        .filter_map(|r| c.region_of(&table_row(5, &format!("row{r}"))))
        .map(|r| r.id)
        .collect();
    assert_eq!(
        row_regions.len(),
        1,
        "the split parted the table's rows: {:?}",
        c.regions()
    );
    let before = client.counters().one_pc_commits;
    for j in 0..24 {
        commit(i + j);
    }
    let one_phase = client.counters().one_pc_commits - before;
    let lane_regions = c
        .regions()
        .iter()
        .filter(|r| r.start > first_row.start && r.start < table_row(6, ""))
        .count();
    assert!(
        lane_regions >= 1,
        "the split was not inside the table's lane: {:?}",
        c.regions()
    );
    assert_eq!(
        one_phase, 24,
        "commits after the split took two phases ({one_phase} of 24 in one)"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while follower.delivered.len() < committed {
        assert!(
            Instant::now() < deadline,
            "the follower read {} of {committed} records",
            follower.delivered.len()
        );
        follower.round(&client);
    }
    follower.check_against_full_scan(&client);
    assert_eq!(follower.start_set().len(), committed);
}
