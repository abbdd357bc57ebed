//! Hot-row updates with a coordinator binlog: a group is logged as one binlog transaction
//! per kept member (AliSQL's hot-row group commit: `BEGIN` / `Update_rows` / `COMMIT` per
//! member, in arrival order), each with its own xid, and nothing for refused members; all
//! of a group's members in one binlog group commit (one fsync).
//! Checked by reading the binlog back with `surge-binlog`'s reader, replaying it with
//! MariaDB's STRICT rules, and (when installed) with `mariadb-binlog
//! --verify-binlog-checksum -v` (required when `SURGE_REQUIRE_MARIADB_BINLOG=1`, as in CI).

mod binlog_support;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use binlog_support::{check_binlog, cluster, coordinator, key, store_table};
use surge_binlog::{CRASH_ENV, EventBody, LogReader, RowsKind, crash_points};
use surge_testkit::CrashChild;
use surge_testkit::mariadb_binlog;
use surge_txn::{HotGroupRecord, HotHints, HotOp, TxnError, TxnMode};

/// Threads updating the hot key at once.
const THREADS: u64 = 64;
/// Updates per thread.
const UPDATES: u64 = 10;

/// One logged row: its statement kind, key and value after.
type LoggedRow = (RowsKind, Vec<u8>, Option<Vec<u8>>);

/// The binlog's transactions in log order: the xid and rows of each.
fn logged(dir: &std::path::Path) -> Vec<(u64, Vec<LoggedRow>)> {
    let reader = LogReader::open(dir, "surge-bin", None).expect("open the binlog");
    let mut out = Vec::new();
    for t in reader.transactions() {
        let t = t.expect("a whole transaction");
        let xid = t.xid.expect("an xid");
        let mut rows = Vec::new();
        for (_, ev) in &t.events {
            let EventBody::Rows(r) = &ev.body else {
                continue;
            };
            let kv = r.kv_rows().expect("kv rows");
            if r.kind == RowsKind::Update {
                for pair in kv.chunks(2) {
                    rows.push((r.kind, pair[1].key.clone(), pair[1].value.clone()));
                }
            } else {
                for row in kv {
                    rows.push((r.kind, row.key, row.value));
                }
            }
        }
        out.push((xid, rows));
    }
    out
}

#[test]
fn every_acknowledged_member_is_its_own_binlog_transaction_in_arrival_order() {
    let dir = tempfile::tempdir().expect("dir");
    let c = cluster(&dir.path().join("cluster"));
    let bin_dir = dir.path().join("binlog");
    let client = coordinator(&c, &bin_dir);
    let hot = key(0, "stock");
    let initial = 20i64;
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&hot, &HotOp::encode(initial)).expect("put");
    let insert_ts = t.start_ts();
    t.commit().expect("commit the row");

    let stats_before = client.binlog().expect("binlog").stats();
    let records: Arc<Mutex<Vec<HotGroupRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    client.set_hot_group_observer(Some(Arc::new(move |r: &HotGroupRecord| {
        sink.lock().expect("not poisoned").push(r.clone())
    })));
    let acked: Arc<Mutex<Vec<i64>>> = Arc::default();
    let refused = Arc::new(Mutex::new(0usize));
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (client, hot) = (client.clone(), hot.clone());
            let (acked, refused) = (Arc::clone(&acked), Arc::clone(&refused));
            s.spawn(move || {
                for i in 0..UPDATES {
                    // A walk between tight bounds (members at either bound are refused),
                    // and every 8th member past any value the walk can reach (refused).
                    let op = if (th + i) % 8 == 0 {
                        HotOp::add(1000).at_most(100)
                    } else if (th + i) % 3 == 0 {
                        HotOp::add(2).at_most(30)
                    } else {
                        HotOp::add(-1).at_least(10)
                    };
                    match client.hot_update(&hot, op, HotHints::hot_update()) {
                        Ok(out) => acked
                            .lock()
                            .expect("not poisoned")
                            .push(out.value.expect("the row exists")),
                        Err(TxnError::HotUpdateRejected { .. }) => {
                            *refused.lock().expect("not poisoned") += 1
                        }
                        Err(e) => panic!("hot update failed: {e}"),
                    }
                }
            });
        }
    });
    let acked = acked.lock().expect("not poisoned").clone();
    let refused = *refused.lock().expect("not poisoned");
    assert_eq!(acked.len() + refused, (THREADS * UPDATES) as usize);
    assert!(refused > 0, "the bounds refused no member");

    // Each group that kept k >= 1 members cost one binlog group commit and one fsync, not
    // k: the groups of one key are logged one at a time (sequencer turns), so none shares
    // a binlog group with another.
    let stats = client.binlog().expect("binlog").stats();
    let kept_groups: Vec<usize> = records
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|g| g.changes.len())
        .filter(|&k| k > 0)
        .collect();
    eprintln!(
        "{} members in {} hot-row groups: binlog commits +{}, groups +{}, fsyncs +{}",
        acked.len(),
        kept_groups.len(),
        stats.commits - stats_before.commits,
        stats.groups - stats_before.groups,
        stats.syncs - stats_before.syncs
    );
    assert!(
        kept_groups.iter().any(|&k| k > 1),
        "no group kept two members"
    );
    assert_eq!(
        stats.commits - stats_before.commits,
        acked.len() as u64,
        "one binlog transaction per kept member"
    );
    assert_eq!(
        stats.groups - stats_before.groups,
        kept_groups.len() as u64,
        "one binlog group commit per hot-row group ({} members in {} groups)",
        acked.len(),
        kept_groups.len()
    );
    assert_eq!(stats.syncs - stats_before.syncs, kept_groups.len() as u64);

    // The store's table and the binlog replayed with STRICT rules agree; no xid twice.
    let store = store_table(&client);
    check_binlog(&bin_dir, &BTreeSet::from([insert_ts]), &store);

    // One Update_rows transaction per acknowledged member, and nothing else on the key.
    let txns = logged(&bin_dir);
    assert_eq!(
        txns.len(),
        1 + acked.len(),
        "the insert, then one per member"
    );
    assert_eq!(txns[0].0, insert_ts);
    let updates: Vec<(u64, i64)> = txns[1..]
        .iter()
        .map(|(xid, rows)| {
            assert_eq!(rows.len(), 1, "txn {xid}: one row per member");
            let (kind, k, v) = &rows[0];
            assert_eq!((*kind, k), (RowsKind::Update, &hot), "txn {xid}");
            let v = v.as_deref().expect("an after value");
            (*xid, HotOp::decode(v).expect("an integer"))
        })
        .collect();

    // In commit order, the groups' members in arrival order are exactly the binlog's
    // transactions, and each member's before image is the value the replay has then.
    let mut groups = records.lock().expect("not poisoned").clone();
    groups.sort_by_key(|g| g.commit_ts);
    assert!(
        groups.iter().any(|g| g.changes.len() > 1),
        "no group had two members"
    );
    let group_ts: BTreeSet<u64> = groups.iter().map(|g| g.start_ts).collect();
    // Each member with the start_ts of its group (whose lone member takes it as its xid).
    let members: Vec<_> = groups
        .iter()
        .flat_map(|g| g.changes.iter().map(move |c| (c, g)))
        .collect();
    assert_eq!(members.len(), updates.len());
    let mut current = initial;
    for ((m, g), (xid, after)) in members.iter().zip(&updates) {
        assert_eq!(m.before, current, "txn {xid}: before image");
        assert_eq!(m.after, *after, "txn {xid}: after image");
        if g.changes.len() == 1 {
            assert_eq!(
                *xid, g.start_ts,
                "a lone member's xid is its group's start_ts"
            );
        } else {
            assert!(
                !group_ts.contains(xid),
                "member xid {xid} is a group's start_ts"
            );
        }
        current = *after;
    }
    let final_value = store.get(&hot).and_then(|v| HotOp::decode(v));
    assert_eq!(
        final_value,
        Some(current),
        "the chain ends at the store's value"
    );

    // Every acknowledged member's own value is one logged member's after value.
    let mut got = acked.clone();
    got.sort_unstable();
    let mut logged_afters: Vec<i64> = updates.iter().map(|(_, v)| *v).collect();
    logged_afters.sort_unstable();
    assert_eq!(got, logged_afters);

    let files = client.binlog().expect("binlog").file_paths();
    let Some(text) = mariadb_binlog::verify(&files, "-v") else {
        return;
    };
    assert_eq!(
        text.matches("### UPDATE `surgedb`.`kv`").count(),
        acked.len()
    );
    assert_eq!(text.matches("Xid = ").count(), 1 + acked.len());
}

const DIR_ENV: &str = "SURGE_TXN_HOT_BINLOG_CRASH_DIR";
/// The hot key's value before the crash test's updates.
const CRASH_INITIAL: i64 = 1000;

/// The crash test's child (inert unless [`DIR_ENV`] is set): a store and a coordinator
/// with a binlog, the hot key inserted (`ready <start_ts>`), then 16 threads adding 1 to it
/// (`acked <value>` each) until a group's batch of members stops in `surge-binlog` after
/// its first member's transaction reached the binlog file, the others not, nothing fsynced
/// (crash point `binlog.copy.between_txns`, `reached`), where the parent kills it.
#[test]
fn child_process() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let c = cluster(&dir.join("cluster"));
    let client = coordinator(&c, &dir.join("binlog"));
    let hot = key(0, "stock");
    let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
    t.put(&hot, &HotOp::encode(CRASH_INITIAL)).expect("put");
    let ts = t.start_ts();
    t.commit().expect("commit the row");
    println!("ready {ts}");
    std::thread::scope(|s| {
        for _ in 0..16 {
            let (client, hot) = (client.clone(), hot.clone());
            s.spawn(move || {
                loop {
                    let out = client
                        .hot_update(&hot, HotOp::add(1), HotHints::hot_update())
                        .expect("hot update");
                    println!("acked {}", out.value.expect("the row exists"));
                }
            });
        }
    });
}

#[test]
fn a_crash_between_two_members_is_completed_by_recovery_exactly_once() {
    let dir = tempfile::tempdir().expect("dir");
    let mut child = CrashChild::spawn(
        "child_process",
        [
            (DIR_ENV, dir.path().as_os_str()),
            (CRASH_ENV, OsStr::new(crash_points::COPY_BETWEEN_TXNS)),
        ],
    );
    let mut acked = Vec::new();
    let mut insert_ts = None;
    child.wait_reached(|line| {
        if let Some(v) = line.strip_prefix("acked ") {
            acked.push(v.trim().parse::<i64>().expect("a value"));
        } else if let Some(v) = line.strip_prefix("ready ") {
            insert_ts = Some(v.trim().parse::<u64>().expect("a start_ts"));
        }
    });
    child.kill();
    let insert_ts = insert_ts.expect("the row was inserted");

    let c = cluster(&dir.path().join("cluster"));
    let bin_dir = dir.path().join("binlog");
    let before = logged(&bin_dir).len();
    let client = coordinator(&c, &bin_dir);
    let report = client.binlog_recovery().expect("binlog");
    // The stopped group, and any later group that committed in the store and waited for
    // its turn behind it, are logged now.
    assert!(
        !report.logged_now.is_empty(),
        "the group stopped mid-way: {report:?}"
    );
    let store = store_table(&client);
    // Every xid once, and the replay (STRICT rules) reaches the store's table.
    check_binlog(&bin_dir, &BTreeSet::from([insert_ts]), &store);
    let txns = logged(&bin_dir);
    assert!(txns.len() > before, "recovery wrote the missing members");
    // The crash came inside one group's batch: its first member is the last transaction
    // the killed coordinator left, and recovery's first is that group's next member (a
    // group's member xids are consecutive timestamps).
    assert!(before >= 2, "the insert and a member before the crash");
    assert_eq!(
        txns[before].0,
        txns[before - 1].0 + 1,
        "recovery continued the stopped group with its next member"
    );
    // Each member added 1: the logged after values are exactly initial+1 ..= final, in
    // order, so no member is missing or logged twice.
    let final_value = store
        .get(&key(0, "stock"))
        .and_then(|v| HotOp::decode(v))
        .expect("an integer");
    let afters: Vec<i64> = txns[1..]
        .iter()
        .map(|(_, rows)| HotOp::decode(rows[0].2.as_deref().expect("a value")).expect("int"))
        .collect();
    let want: Vec<i64> = (CRASH_INITIAL + 1..=final_value).collect();
    assert_eq!(afters, want);
    for v in &acked {
        assert!(afters.contains(v), "acknowledged {v} not logged");
    }
}
