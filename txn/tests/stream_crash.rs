//! A coordinator killed (SIGKILL) in the middle of a commit leaves its stream record
//! locked (or not yet written); the stream watermark is held by it only until the record
//! is settled from its primary's status: committed when the primary was (once the record
//! is a second old), rolled back once its lock TTL ran out otherwise. Every acknowledged
//! transaction is in the stream exactly once.
//!
//! The child is this test binary re-run on `child_process` with the crash point in
//! [`TXN_CRASH_ENV`]: it runs the store (a `LocalCluster` with durable WALs) and one
//! coordinator, commits transactions printing `inflight <start_ts>` and `acked <start_ts>
//! <commit_ts>`, and stops at the point on its fourth commit. The parent kills it,
//! restarts the cluster from the same directory and follows the stream with another client
//! (the dead coordinator is not restarted: nobody but the resolver settles its record).

mod binlog_support;
mod stream_support;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use binlog_support::{cluster, key};
use stream_support::{Follower, config, coordinator};
use surge_testkit::CrashChild;
use surge_txn::{
    ClientConfig, StreamOptions, TXN_CRASH_ENV, TXN_CRASH_SKIP_ENV, TxnClient, TxnMode,
    txn_crash_points,
};

const DIR_ENV: &str = "SURGE_TXN_STREAM_CRASH_DIR";
/// The dead coordinator's lock TTL. Long enough to outlast the restart: the oracle resumes
/// from its durable limit, up to a few seconds ahead of the clock, and lock TTLs are
/// counted in oracle time.
const TTL_MS: u64 = 6000;

#[test]
fn child_process() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let c = cluster(&dir.join("cluster"));
    let client = coordinator(
        &c,
        &dir.join("binlog"),
        1,
        config(TTL_MS, StreamOptions::default()),
    );
    for i in 0u64.. {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        t.put(&key((i % 4) as u8, "a"), format!("v{i}").as_bytes())
            .expect("put");
        t.put(&key(((i + 1) % 4) as u8, "b"), format!("w{i}").as_bytes())
            .expect("put");
        let start_ts = t.start_ts();
        println!("inflight {start_ts}");
        let commit_ts = t.commit().expect("commit");
        println!("acked {start_ts} {commit_ts}");
    }
}

/// Runs the child until `point` on its fourth commit; returns the acknowledged
/// transactions (start_ts -> commit_ts) and the start_ts of the one in flight.
fn run_child(dir: &Path, point: &str) -> (BTreeMap<u64, u64>, u64) {
    let mut child = CrashChild::spawn(
        "child_process",
        [
            (DIR_ENV, dir.as_os_str()),
            (TXN_CRASH_ENV, OsStr::new(point)),
            (TXN_CRASH_SKIP_ENV, OsStr::new("3")),
        ],
    );
    let mut acked = BTreeMap::new();
    let mut inflight = None;
    child.wait_reached(|line| {
        let nums = |rest: &str| -> Vec<u64> {
            rest.split_whitespace()
                .map(|x| x.parse().expect("number"))
                .collect()
        };
        if let Some(rest) = line.strip_prefix("inflight ") {
            inflight = Some(nums(rest)[0]);
        } else if let Some(rest) = line.strip_prefix("acked ") {
            let n = nums(rest);
            acked.insert(n[0], n[1]);
        }
    });
    child.kill();
    (acked, inflight.expect("a transaction in flight"))
}

fn crash_at(point: &str, committed: bool) {
    let dir = tempfile::tempdir().expect("dir");
    let (acked, inflight) = run_child(dir.path(), point);
    assert_eq!(acked.len(), 3, "three commits before the crash point");
    let killed = Instant::now();
    let c = cluster(&dir.path().join("cluster"));
    let restarted = Instant::now();
    let reader = TxnClient::new(c.router(), ClientConfig::default());
    let first = reader.stream_resolved_ts().expect("watermark");
    println!("first watermark after the restart: {first:?}, in-flight txn {inflight}");
    match point {
        txn_crash_points::AFTER_PREPARE => {
            assert_eq!(first.locks_seen, 0, "nothing was prewritten");
        }
        // Held: below the oracle's T0 (at the record lock's record_ts, which is above the
        // in-flight txn's start_ts and below its commit_ts, were it to commit).
        txn_crash_points::AFTER_PREWRITE => assert!(
            first.resolved_ts < first.oracle_ts && first.locks_seen >= 1,
            "the dead coordinator's record lock must hold the watermark within its TTL: {first:?}"
        ),
        // The primary committed: the record lock is committed from it once the record is
        // a second old (which it may already be, by the oracle's clock, after a restart).
        _ => assert!(
            first.locks_seen >= 1
                && (first.resolved_ts < first.oracle_ts || first.locks_settled >= 1),
            "the record lock must be held or settled: {first:?}"
        ),
    }
    let mut follower = Follower::default();
    loop {
        follower.round(&reader);
        // Nothing else writes now: the watermark is free once it stands at the oracle.
        let w = reader.stream_resolved_ts().expect("watermark");
        if w.resolved_ts == w.oracle_ts && follower.resolved > inflight {
            break;
        }
        assert!(
            restarted.elapsed() < Duration::from_millis(TTL_MS + 8000),
            "the watermark stayed below the dead coordinator's txn for {:?}",
            restarted.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "crash at {point}: watermark passed the dead coordinator's txn {:?} after the restart \
         ({:?} after the kill; lock TTL {TTL_MS} ms, {} follower rounds)",
        restarted.elapsed(),
        killed.elapsed(),
        follower.rounds
    );
    follower.round(&reader);
    follower.check_against_full_scan(&reader);
    let streamed: BTreeMap<u64, u64> = follower
        .delivered
        .iter()
        .map(|t| (t.start_ts, t.commit_ts))
        .collect();
    assert_eq!(
        streamed.len(),
        follower.delivered.len(),
        "a txn streamed twice"
    );
    for (start, commit) in &acked {
        assert_eq!(
            streamed.get(start),
            Some(commit),
            "acknowledged txn {start}"
        );
    }
    assert_eq!(
        streamed.contains_key(&inflight),
        committed,
        "in-flight txn {inflight} streamed iff its primary committed (crash at {point})"
    );
    assert_eq!(streamed.len(), acked.len() + usize::from(committed));
}

#[test]
fn crash_after_prepare() {
    crash_at(txn_crash_points::AFTER_PREPARE, false);
}

#[test]
fn crash_after_prewrite() {
    crash_at(txn_crash_points::AFTER_PREWRITE, false);
}

#[test]
fn crash_after_primary_commit() {
    crash_at(txn_crash_points::AFTER_PRIMARY_COMMIT, true);
}
