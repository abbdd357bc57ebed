//! MVCC garbage collection on a three-node cluster (`TxnClient::gc`): old versions go, every
//! read at or above the safe point still sees what it saw, a lock left by a transaction
//! whose primary committed is committed before its primary's record can go, and reads or
//! locks older than the GC life time are refused; a GC hold keeps the safe point below it
//! until it is removed or expires.

use std::time::Duration;

mod support;

use surge_txn::actions::CommitKind;
use surge_txn::codec::{compose_ts, physical_ms};
use surge_txn::rpc::{KvRequest, KvResponse};
use surge_txn::{
    BinlogOptions, ClientConfig, GcHold, GcHoldOptions, KeyError, LockMode, TxnClient, TxnError,
    TxnMode,
};

use support::{Layout, TestCluster, commit_keys, prewrite_request, txn_props};

/// The nodes' GC life time: reads and locks older than this are refused.
const LIFE: Duration = Duration::from_millis(1500);

fn cluster(life: Option<Duration>) -> TestCluster {
    TestCluster::start_with(Layout::new(4, LockMode::InMemory), |c| {
        c.gc_life_time = life;
    })
}

/// A safe point older than the nodes' life time by `margin`, from a fresh timestamp.
fn safe_point(c: &TestCluster, margin: Duration) -> u64 {
    let back = u64::try_from((LIFE + margin).as_millis()).expect("ms");
    compose_ts(physical_ms(c.timestamp()) - back, 0)
}

fn long(i: u8) -> Vec<u8> {
    vec![i; 300]
}

#[test]
fn gc_removes_old_versions_and_keeps_every_read_at_or_above_the_safe_point() {
    let c = cluster(Some(LIFE));
    let client = c.client(ClientConfig::default());
    // `a`: five versions, long and short values; `b`: a put, then a delete.
    for i in 0..5u8 {
        let mut t = client.begin(TxnMode::Optimistic).unwrap();
        let value = if i % 2 == 0 { long(i) } else { vec![i] };
        t.put(b"a", &value).unwrap();
        t.commit().unwrap();
    }
    let mut t = client.begin(TxnMode::Pessimistic).unwrap();
    t.put(b"b", b"gone soon").unwrap();
    t.commit().unwrap();
    let mut t = client.begin(TxnMode::Pessimistic).unwrap();
    t.delete(b"b").unwrap();
    t.commit().unwrap();

    // A transaction whose primary (`p`, one region) committed while its secondary (`s`,
    // another region) still holds its lock: its coordinator died between the two.
    let start = c.timestamp();
    let props = txn_props(b"p", start, 0, CommitKind::TwoPc);
    for key in [&b"p"[..], &b"\xf0s"[..]] {
        let r = c.call_leader(key, |ctx| {
            prewrite_request(ctx, &[(key, b"from the half-done txn")], props.clone())
        });
        assert!(
            matches!(r, KvResponse::Prewrite { .. }),
            "prewrite {key:?}: {r:?}"
        );
    }
    let commit_ts = c.timestamp();
    let r = commit_keys(&c.cluster, &[b"p"], start, commit_ts);
    assert!(matches!(r, KvResponse::Done), "commit p: {r:?}");
    // A newer version of `p` makes the half-done transaction's record there garbage.
    let mut t = client.begin(TxnMode::Optimistic).unwrap();
    t.put(b"p", b"newer").unwrap();
    t.commit().unwrap();

    let mut old = client.begin(TxnMode::Optimistic).unwrap();
    std::thread::sleep(LIFE + Duration::from_millis(700));
    let sp = safe_point(&c, Duration::from_millis(200));
    let report = client.gc(sp).unwrap();
    assert_eq!(report.safe_point, sp);
    assert_eq!(report.locks_resolved, 1, "{report:?}");
    assert_eq!(report.locks_alive, 0, "{report:?}");
    // a: four older versions (two of them long values); b: both records; p: the half-done
    // transaction's record.
    assert_eq!(report.removed.records, 4 + 2 + 1, "{report:?}");
    assert_eq!(report.removed.values, 2, "{report:?}");
    assert_eq!(report.keys, 3, "{report:?}");
    assert!(report.regions >= 4, "{report:?}");

    assert_eq!(client.get(b"a").unwrap(), Some(long(4)));
    assert_eq!(client.get(b"b").unwrap(), None);
    assert_eq!(client.get(b"p").unwrap(), Some(b"newer".to_vec()));
    assert_eq!(
        client.get(b"\xf0s").unwrap(),
        Some(b"from the half-done txn".to_vec()),
        "the secondary was committed before its primary's record went"
    );
    // Not even at the safe point itself: it is older than the life time.
    let oldest = compose_ts(physical_ms(c.timestamp()) - 1000, 0);
    assert_eq!(c.get_at(b"a", oldest), Some(long(4)));

    // Nothing left below the same safe point.
    let again = client.gc(sp).unwrap();
    assert_eq!(again.removed.records, 0, "{again:?}");
    assert_eq!(again.keys, 0, "{again:?}");

    // A transaction older than the life time can neither read nor write (its rollback,
    // below the safe point, is the next GC's garbage).
    match old.get(b"a") {
        Err(TxnError::Key(KeyError::TooOld { ts, oldest })) => assert!(ts < oldest),
        other => panic!("old read: {other:?}"),
    }
    old.put(b"c", b"late").unwrap();
    match old.commit() {
        Err(TxnError::Key(KeyError::TooOld { .. })) => {}
        other => panic!("old commit: {other:?}"),
    }
    assert_eq!(client.get(b"c").unwrap(), None);

    // A safe point the nodes would still serve reads at is refused before anything goes.
    let now = c.timestamp();
    match client.gc(now) {
        Err(TxnError::Key(KeyError::TooOld { ts, oldest })) => {
            assert_eq!(ts, now);
            assert!(oldest < now);
        }
        other => panic!("gc at now: {other:?}"),
    }
}

#[test]
fn a_cluster_without_a_life_time_refuses_gc_and_serves_old_timestamps() {
    let c = cluster(None);
    let client = c.client(ClientConfig::default());
    let mut t = client.begin(TxnMode::Optimistic).unwrap();
    t.put(b"k", b"v1").unwrap();
    t.commit().unwrap();
    let first = c.timestamp();
    let mut t = client.begin(TxnMode::Optimistic).unwrap();
    t.put(b"k", b"v2").unwrap();
    t.commit().unwrap();
    match client.gc(first) {
        Err(TxnError::Key(KeyError::TooOld { oldest: 0, .. })) => {}
        other => panic!("gc without a life time: {other:?}"),
    }
    assert_eq!(c.get_at(b"k", first), Some(b"v1".to_vec()));
}

#[test]
fn a_gc_request_walks_a_region_in_parts_and_answers_where_to_resume() {
    let c = cluster(Some(LIFE));
    let client = c.client(ClientConfig::default());
    // Three keys of one region with two versions each.
    for round in 0..2u8 {
        for key in [&b"r1"[..], b"r2", b"r3"] {
            let mut t = client.begin(TxnMode::Optimistic).unwrap();
            t.put(key, &[round]).unwrap();
            t.commit().unwrap();
        }
    }
    std::thread::sleep(LIFE + Duration::from_millis(700));
    let sp = safe_point(&c, Duration::from_millis(200));
    let mut start = b"r".to_vec();
    let mut parts = Vec::new();
    loop {
        let reply = c.call_leader(&start, |ctx| surge_txn::rpc::KvRequest::Gc {
            ctx,
            safe_point: sp,
            start: start.clone(),
            limit_keys: 1,
        });
        let KvResponse::Gc {
            keys,
            removed,
            resume_key,
            ..
        } = reply
        else {
            panic!("gc: {reply:?}");
        };
        parts.push((keys, removed.records));
        match resume_key {
            Some(next) if next.starts_with(b"r") => start = next,
            _ => break,
        }
    }
    // One key (and its one older version) per request; the walk then leaves the keys.
    assert_eq!(parts.len(), 3, "one request per key, none more: {parts:?}");
    assert_eq!(&parts[..3], &[(1, 1), (1, 1), (1, 1)], "{parts:?}");
    assert!(parts[3..].iter().all(|p| p.1 == 0), "{parts:?}");
    for key in [&b"r1"[..], b"r2", b"r3"] {
        assert_eq!(client.get(key).unwrap(), Some(vec![1]));
    }
}

/// A plain and a held point read of `key` at `version` on its leader.
fn reads_at(c: &TestCluster, key: &[u8], version: u64) -> (KvResponse, KvResponse) {
    let plain = c.call_leader(key, |ctx| KvRequest::Get {
        ctx,
        key: key.to_vec(),
        version,
        bypass_locks: Vec::new(),
    });
    let held = c.call_leader(key, |ctx| KvRequest::GetHeld {
        ctx,
        key: key.to_vec(),
        version,
        bypass_locks: Vec::new(),
    });
    (plain, held)
}

#[test]
fn a_gc_hold_keeps_the_safe_point_below_it_until_removed_and_held_reads_see_what_it_kept() {
    let c = cluster(Some(LIFE));
    let client = c.client(ClientConfig::default());
    let hold = c.timestamp();
    client
        .set_gc_hold(7, hold, Duration::from_secs(600))
        .unwrap();
    let mut t = client.begin(TxnMode::Optimistic).unwrap();
    t.put(b"h", b"old").unwrap();
    t.commit().unwrap();
    let between = c.timestamp();
    let mut t = client.begin(TxnMode::Optimistic).unwrap();
    t.put(b"h", b"new").unwrap();
    t.commit().unwrap();
    // An expired hold counts for nothing and is dropped when the holds are listed.
    client.set_gc_hold(8, 1, Duration::ZERO).unwrap();
    let holds = client.gc_holds().unwrap();
    assert_eq!(
        holds.iter().map(|h| (h.owner, h.ts)).collect::<Vec<_>>(),
        vec![(7, hold)]
    );

    std::thread::sleep(LIFE + Duration::from_millis(700));
    let sp = client
        .safe_point_older_than(LIFE + Duration::from_millis(200))
        .unwrap();
    assert_eq!(sp, hold, "the hold is older than the life time allows");
    client.gc(sp).unwrap();
    // `between` is older than the life time, so a plain read there is refused; the held
    // read sees the version the hold kept (without the hold, the collection would have
    // removed it: the newer version is below the life-time safe point).
    let (plain, held) = reads_at(&c, b"h", between);
    assert!(
        matches!(plain, KvResponse::KeyError(KeyError::TooOld { .. })),
        "{plain:?}"
    );
    assert!(
        matches!(&held, KvResponse::Get { value: Some(v) } if v == b"old"),
        "{held:?}"
    );

    client.remove_gc_hold(7).unwrap();
    assert!(client.gc_holds().unwrap().is_empty());
    let sp = client
        .safe_point_older_than(LIFE + Duration::from_millis(200))
        .unwrap();
    assert!(sp > between, "no hold: the safe point follows the clock");
    let report = client.gc(sp).unwrap();
    assert!(report.removed.records >= 1, "{report:?}");
    let (_, held) = reads_at(&c, b"h", between);
    assert!(
        matches!(held, KvResponse::Get { value: None }),
        "collected below the safe point: {held:?}"
    );
    assert_eq!(client.get(b"h").unwrap(), Some(b"new".to_vec()));
}

/// A client keeping hold `owner`, `LIFE` plus 200 ms behind its clock, heartbeating every
/// `heartbeat` (its refreshes: every 100 ms, on that thread).
fn hold_config(owner: u64, heartbeat: Duration) -> ClientConfig {
    ClientConfig::default()
        .with_heartbeat_interval(heartbeat)
        .with_gc_hold(Some(
            GcHoldOptions::new(owner, LIFE + Duration::from_millis(200))
                .with_refresh(Duration::from_millis(100)),
        ))
}

fn hold_of(client: &TxnClient, owner: u64) -> Option<GcHold> {
    client
        .gc_holds()
        .expect("list the GC holds")
        .into_iter()
        .find(|h| h.owner == owner)
}

#[test]
fn a_client_with_gc_hold_options_sets_its_hold_at_open_and_moves_it_with_the_clock() {
    let c = cluster(Some(LIFE));
    let observer = c.client(ClientConfig::default());
    let back = u64::try_from((LIFE + Duration::from_millis(200)).as_millis()).unwrap();

    // Set by `open` itself: this client's heartbeat thread does not tick within the test.
    let before = physical_ms(c.timestamp());
    let _quiet =
        TxnClient::open(c.cluster.router(), hold_config(3, Duration::from_secs(600))).unwrap();
    let set = hold_of(&observer, 3).expect("the hold is set when open returns");
    let after = physical_ms(c.timestamp());
    // `behind` the client's clock, which the oracle follows within a few seconds.
    assert!(
        physical_ms(set.ts) + back + 3_000 >= before && physical_ms(set.ts) + back <= after + 3_000,
        "{set:?}, oracle {before}..{after}"
    );
    // A client made with `new` and the same options sets it on its first tick.
    let _ticking = TxnClient::new(
        c.cluster.router(),
        hold_config(4, Duration::from_millis(50)),
    );
    let mut first = None;
    for _ in 0..100 {
        first = hold_of(&observer, 4);
        if first.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let first = first.expect("set on the first heartbeat tick");
    std::thread::sleep(Duration::from_millis(600));
    let later = hold_of(&observer, 4).unwrap();
    assert!(later.ts > first.ts, "refreshed: {first:?} then {later:?}");
    assert!(later.expires_ms >= first.expires_ms + 400, "{later:?}");
}

#[test]
fn a_coordinators_hold_stays_at_a_prepare_its_journal_holds_open() {
    let c = cluster(Some(LIFE));
    let dir = tempfile::tempdir().unwrap();
    let config = hold_config(5, Duration::from_millis(50)).with_binlog(Some(
        BinlogOptions::new(dir.path()).with_large_commit_threshold(1 << 20),
    ));
    let coordinator = TxnClient::open(c.cluster.router(), config).unwrap();
    let observer = c.client(ClientConfig::default());
    let mut t = coordinator.begin(TxnMode::Optimistic).unwrap();
    let start_ts = t.start_ts();
    // Two regions: a two-phase commit, which pauses once both keys are prewritten.
    t.put(b"\x10j", b"1").unwrap();
    t.put(b"\xf0j", b"1").unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let during = {
        let (observer, seen) = (observer.clone(), seen.clone());
        move || {
            // Longer than the hold's distance behind the clock, with several refreshes.
            for _ in 0..10 {
                std::thread::sleep(Duration::from_millis(250));
                seen.lock().unwrap().push(hold_of(&observer, 5).unwrap());
            }
        }
    };
    t.__commit_pausing_after_prewrite(during).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|h| h.ts <= start_ts),
        "the hold passed the open prepare at {start_ts}: {seen:?}"
    );
    assert!(
        seen.last().unwrap().expires_ms > seen[0].expires_ms,
        "refreshed meanwhile: {seen:?}"
    );
    // Settled: the next refreshes follow the clock again.
    std::thread::sleep(Duration::from_millis(400));
    assert!(hold_of(&observer, 5).unwrap().ts > start_ts);
    // A clean stop with nothing in doubt removes it for good.
    assert!(coordinator.release_gc_hold().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(hold_of(&observer, 5), None);
    let mut t = coordinator.begin(TxnMode::Optimistic).unwrap();
    t.put(b"\x10k", b"2").unwrap();
    assert!(
        matches!(t.commit(), Err(TxnError::Binlog { .. })),
        "a released coordinator prepares nothing its hold would not cover"
    );
}

/// A transaction runs longer than the life time (TiDB's long transaction): its client's GC
/// hold stays at its start, so a collection meanwhile stays below it, and the nodes serve
/// its reads and locks down to that hold; it reads its snapshot and commits. The same
/// transaction from a client without a hold is refused as too old.
#[test]
fn a_transaction_longer_than_the_life_time_lives_while_its_clients_hold_covers_it() {
    let c = cluster(Some(LIFE));
    let held = TxnClient::open(
        c.cluster.router(),
        hold_config(9, Duration::from_millis(100)),
    )
    .unwrap();
    let plain = c.client(ClientConfig::default());
    for (k, v) in [(b"lt/a", b"a0"), (b"lt/b", b"b0")] {
        let mut t = plain.begin(TxnMode::Optimistic).unwrap();
        t.put(k, v).unwrap();
        t.commit().unwrap();
    }
    let mut long_txn = held.begin(TxnMode::Pessimistic).unwrap();
    let mut unheld = plain.begin(TxnMode::Pessimistic).unwrap();
    let start = long_txn.start_ts();
    assert_eq!(long_txn.get(b"lt/a").unwrap(), Some(b"a0".to_vec()));
    // Newer versions of `lt/a`, so that a collection past the start would remove a0.
    for i in 1..=3 {
        let mut t = plain.begin(TxnMode::Optimistic).unwrap();
        t.put(b"lt/a", format!("a{i}").as_bytes()).unwrap();
        t.commit().unwrap();
    }
    std::thread::sleep(LIFE + Duration::from_millis(1000));
    let hold = hold_of(&plain, 9).expect("the long transaction's client keeps its hold");
    assert!(
        hold.ts <= start,
        "hold {} above the open transaction's start {start}",
        hold.ts
    );
    let sp = plain
        .safe_point_older_than(LIFE + Duration::from_millis(200))
        .unwrap();
    assert!(
        sp <= start,
        "safe point {sp} above the open transaction's start {start}"
    );
    let report = plain.gc(sp).unwrap();
    println!("{report:?}");

    // Older than the life time, and still served: its snapshot, a lock, a commit.
    assert_eq!(long_txn.get(b"lt/a").unwrap(), Some(b"a0".to_vec()));
    assert_eq!(
        long_txn.get_for_update(b"lt/b").unwrap(),
        Some(b"b0".to_vec())
    );
    long_txn.put(b"lt/b", b"b1").unwrap();
    long_txn.commit().unwrap();
    assert_eq!(plain.get(b"lt/b").unwrap(), Some(b"b1".to_vec()));

    // Without a hold, the same age is refused.
    match unheld.get(b"lt/b") {
        Err(TxnError::Key(KeyError::TooOld { ts, .. })) => assert_eq!(ts, unheld.start_ts()),
        other => panic!("a read older than the life time without a hold: {other:?}"),
    }
    unheld.rollback();

    // Once no transaction is open, the hold moves on with the clock.
    std::thread::sleep(Duration::from_millis(400));
    let moved = hold_of(&plain, 9).unwrap();
    assert!(
        moved.ts > start,
        "hold {} still at the finished transaction",
        moved.ts
    );
}

/// An operator removes a live client's hold and a collection passes its open
/// transaction: the nodes that collected refuse the transaction's next read though it
/// still claims its old hold, and a hold set again below the safe point is set at it.
#[test]
fn a_hold_removed_under_an_open_transaction_never_lets_it_read_what_went() {
    let c = cluster(Some(LIFE));
    // No refresh within the test: the hold is the one `open` set.
    let held =
        TxnClient::open(c.cluster.router(), hold_config(9, Duration::from_secs(600))).unwrap();
    let plain = c.client(ClientConfig::default());
    let mut t = plain.begin(TxnMode::Optimistic).unwrap();
    t.put(b"rm/k", b"v0").unwrap();
    t.commit().unwrap();
    let mut open = held.begin(TxnMode::Optimistic).unwrap();
    let start = open.start_ts();
    assert_eq!(open.get(b"rm/k").unwrap(), Some(b"v0".to_vec()));
    for i in 1..=2 {
        let mut t = plain.begin(TxnMode::Optimistic).unwrap();
        t.put(b"rm/k", format!("v{i}").as_bytes()).unwrap();
        t.commit().unwrap();
    }
    std::thread::sleep(LIFE + Duration::from_millis(700));
    plain.remove_gc_hold(9).unwrap();
    let sp = plain
        .safe_point_older_than(LIFE + Duration::from_millis(200))
        .unwrap();
    assert!(sp > start);
    let report = plain.gc(sp).unwrap();
    assert_eq!(report.safe_point, sp);
    assert!(report.removed.records > 0, "{report:?}");
    match open.get(b"rm/k") {
        Err(TxnError::Key(KeyError::TooOld { ts, oldest })) => {
            assert_eq!(ts, start);
            assert!(oldest >= sp, "refused below {oldest}, collected below {sp}");
        }
        other => panic!("a read below what was collected: {other:?}"),
    }
    // Set again below the safe point: set at it.
    plain
        .set_gc_hold(9, start, Duration::from_secs(60))
        .unwrap();
    assert_eq!(hold_of(&plain, 9).unwrap().ts, sp);
}
