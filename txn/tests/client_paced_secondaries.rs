//! Paced background secondaries (`ClientConfig::secondary_batch_keys`,
//! `secondary_batch_bytes`, `secondary_pace`): a transaction's secondaries are committed in
//! bounded batches with a pause between two, every one ends committed, readers meeting one
//! not yet reached get the committed value, and other transactions' commits (and their own
//! background secondaries) are not held behind the whole set.

mod client_support;

use std::time::{Duration, Instant};

use client_support::{config, key, start};
use surge_txn::{ClientConfig, TxnClient, TxnMode};

/// Regions (of 16) the large transaction writes to; the primary (its smallest key) is in the
/// first, which therefore has one secondary fewer.
const REGIONS: [u8; 4] = [2, 5, 9, 13];

/// Rows per region.
const ROWS: usize = 10;

fn paced(batch_keys: usize, batch_bytes: usize, pace: Option<Duration>) -> ClientConfig {
    // Long enough that no lock expires during a test: a reader resolves a secondary
    // because its primary committed, not because it timed out.
    config(60_000)
        .with_async_secondaries(true)
        .with_secondary_batch_keys(batch_keys)
        .with_secondary_batch_bytes(batch_bytes)
        .with_secondary_pace(pace)
}

/// The large transaction's keys, in key order (4 bytes each).
fn big_keys() -> Vec<Vec<u8>> {
    REGIONS
        .iter()
        .flat_map(|&r| (0..ROWS).map(move |i| key(r, &format!("k{i:02}"))))
        .collect()
}

/// Commits `value` at every key of [`big_keys`] with `client`; returns its `start_ts`.
fn commit_big(client: &TxnClient, value: &[u8]) -> u64 {
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    for k in big_keys() {
        t.put(&k, value).expect("put");
    }
    let start_ts = t.start_ts();
    t.commit().expect("commit");
    start_ts
}

/// Waits until `client` finished `n` paced transactions; returns how long that took.
fn wait_paced(client: &TxnClient, n: u64, within: Duration) -> Duration {
    let started = Instant::now();
    while client.counters().secondary_paced_txns < n {
        assert!(
            started.elapsed() < within,
            "paced secondaries not done within {within:?}: {:?}",
            client.counters()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    started.elapsed()
}

/// Background batches of transactions that were not paced (one batch each).
fn unpaced_batches(client: &TxnClient) -> u64 {
    let c = client.counters();
    c.secondary_batches - c.secondary_paced_batches
}

#[test]
fn every_secondary_commits_in_the_configured_batches_with_the_pace_between_them() {
    let env = start(config(60_000));
    let key_len = big_keys()[0].len();
    // (batch keys, batch bytes, value length, pace, expected batches)
    let cases: [(usize, usize, usize, Option<Duration>, u64); 3] = [
        // 9 + 10 + 10 + 10 secondaries by 4 keys: 3 batches per region.
        (4, 1 << 20, 1, Some(Duration::from_millis(60)), 12),
        // By bytes: 100-byte short values, 3 keys per batch: 3 + 4 + 4 + 4.
        (1000, 3 * (key_len + 100), 100, None, 15),
        // Values too long to sit in the lock cost a commit nothing: only keys count.
        (1000, 5 * key_len, 300, Some(Duration::from_millis(10)), 8),
    ];
    for (round, (batch_keys, batch_bytes, value_len, pace, batches)) in
        cases.into_iter().enumerate()
    {
        let client = env.other_client(paced(batch_keys, batch_bytes, pace));
        let value = vec![round as u8; value_len];
        commit_big(&client, &value);
        let took = wait_paced(&client, 1, Duration::from_secs(30));
        let counters = client.counters();
        assert_eq!(counters.secondary_batches, batches, "case {round}");
        assert_eq!(counters.secondary_paced_batches, batches, "case {round}");
        let pauses = pace.unwrap_or_default() * (batches as u32 - 1);
        assert!(
            took >= pauses,
            "case {round}: {batches} batches with {pace:?} between them took {took:?}"
        );
        assert!(
            Duration::from_micros(counters.secondary_pause_us) >= pauses,
            "case {round}: {counters:?}"
        );
        if pace.is_none() {
            assert_eq!(counters.secondary_pause_us, 0, "case {round}");
        }
        // Every secondary was committed by the paced path: a fresh reader reads every row
        // without meeting (and resolving) a lock.
        let reader = env.other_client(config(60_000));
        let mut t = reader.begin(TxnMode::Optimistic).expect("begin");
        for k in big_keys() {
            assert_eq!(t.get(&k).expect("get"), Some(value.clone()), "case {round}");
        }
        assert_eq!(reader.counters().locks_resolved, 0, "case {round}");
    }
}

#[test]
fn a_transaction_whose_secondaries_fit_in_one_batch_is_not_paced() {
    let env = start(config(60_000));
    // A 5 s pace that a transaction of one batch must never wait for.
    let client = env.other_client(paced(64, 1 << 20, Some(Duration::from_secs(5))));
    // The primary in region 3, its one secondary in region 7: one batch.
    let before = client.counters();
    let mut t = client.begin(TxnMode::Optimistic).expect("begin");
    t.put(&key(3, "a"), b"1").expect("put");
    t.put(&key(7, "b"), b"1").expect("put");
    t.commit().expect("commit");
    let started = Instant::now();
    while client.counters().secondary_batches == before.secondary_batches {
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "the one-batch secondaries waited for a pace"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let after = client.counters();
    assert_eq!(after.secondary_batches, before.secondary_batches + 1);
    assert_eq!(after.secondary_paced_txns, before.secondary_paced_txns);
    assert_eq!(after.secondary_paced_batches, 0);
    assert_eq!(after.secondary_pause_us, before.secondary_pause_us);
}

#[test]
fn a_reader_meeting_a_secondary_not_yet_committed_gets_the_committed_value() {
    let env = start(config(60_000));
    let writer = env.other_client(paced(4, 1 << 20, Some(Duration::from_millis(250))));
    commit_big(&writer, b"old");
    wait_paced(&writer, 1, Duration::from_secs(30));
    // 12 batches, 250 ms apart: the last key is reached after about 2.75 s.
    commit_big(&writer, b"new");
    let last = big_keys().pop().expect("keys");
    let reader = env.other_client(config(60_000));
    assert_eq!(reader.get(&last).expect("get"), Some(b"new".to_vec()));
    assert_eq!(
        writer.counters().secondary_paced_txns,
        1,
        "the read happened while the secondaries were in flight"
    );
    assert_eq!(
        reader.counters().locks_resolved,
        1,
        "the reader met the secondary's lock and resolved it from the primary"
    );
    // The paced commit then finds that key committed and still finishes the rest.
    wait_paced(&writer, 2, Duration::from_secs(30));
    // No lock is left: reading every row resolves nothing more.
    let mut t = reader.begin(TxnMode::Optimistic).expect("begin");
    for k in big_keys() {
        assert_eq!(t.get(&k).expect("get"), Some(b"new".to_vec()));
    }
    assert_eq!(reader.counters().locks_resolved, 1);
}

#[test]
fn small_transactions_commit_while_a_large_ones_secondaries_are_in_flight() {
    let env = start(config(60_000));
    let client = env.other_client(paced(4, 1 << 20, Some(Duration::from_millis(500))));
    commit_big(&client, b"big");
    let big_committed = Instant::now();
    // 12 batches 500 ms apart: in flight for at least 5.5 s. Meanwhile small transactions
    // of the same client, in regions the large one does not touch, commit, and their own
    // background secondaries do not wait behind the large set.
    let (a, b) = (key(3, "small"), key(7, "small"));
    for i in 0..5u8 {
        let mut t = client.begin(TxnMode::Optimistic).expect("begin");
        t.put(&a, &[i]).expect("put");
        t.put(&b, &[i]).expect("put");
        let at = Instant::now();
        t.commit().expect("commit");
        assert!(
            at.elapsed() < Duration::from_millis(1500),
            "small commit {i} took {:?}",
            at.elapsed()
        );
        // Its secondary's batch (one, not paced) is done soon, not after the large set.
        let deadline = Instant::now() + Duration::from_millis(1500);
        while unpaced_batches(&client) < u64::from(i) + 1 {
            assert!(
                Instant::now() < deadline,
                "small transaction {i}'s secondary waited behind the large one"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert_eq!(
        client.counters().secondary_paced_txns,
        0,
        "the small transactions finished while the large one's secondaries were in flight \
         ({:?} after its commit)",
        big_committed.elapsed()
    );
    wait_paced(&client, 1, Duration::from_secs(30));
    // The small transactions' secondaries were committed by the background, not resolved.
    let reader = env.other_client(config(60_000));
    assert_eq!(reader.get(&b).expect("get"), Some(vec![4]));
    assert_eq!(reader.counters().locks_resolved, 0);
    assert_eq!(unpaced_batches(&client), 5);
}
