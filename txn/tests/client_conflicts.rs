//! Concurrency outcomes the caller acts on: optimistic write conflicts, pessimistic lock
//! waits that then proceed, lock wait timeouts and deadlock victims.

mod client_support;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use client_support::{config, key, start};
use surge_txn::{TxnError, TxnMode};

#[test]
fn optimistic_concurrent_writers_conflict_at_commit() {
    let env = start(config(3000));
    let k = key(5, "conflict");
    let mut a = env.client.begin(TxnMode::Optimistic).expect("begin");
    let mut b = env.client.begin(TxnMode::Optimistic).expect("begin");
    a.put(&k, b"a").expect("put");
    b.put(&k, b"b").expect("put");
    b.put(&key(11, "other"), b"b").expect("put"); // two regions: the two-phase path too
    a.commit().expect("first committer wins");
    let b_start_ts = b.start_ts();
    match b.commit() {
        Err(TxnError::WriteConflict {
            key: ck, start_ts, ..
        }) => {
            assert_eq!(ck, k);
            assert_eq!(start_ts, b_start_ts);
        }
        other => panic!("expected a write conflict, got {other:?}"),
    }
    assert_eq!(env.client.counters().aborts_write_conflict, 1);
    assert_eq!(env.client.get(&k).expect("get"), Some(b"a".to_vec()));
    assert_eq!(
        env.client.get(&key(11, "other")).expect("get"),
        None,
        "the loser wrote nothing"
    );
}

#[test]
fn pessimistic_writer_waits_for_the_holder_then_proceeds() {
    let env = start(config(3000));
    let k = key(6, "wait");
    let mut holder = env.client.begin(TxnMode::Pessimistic).expect("begin");
    assert_eq!(holder.get_for_update(&k).expect("lock"), None);
    holder.put(&k, b"1").expect("put");
    let client = env.client.clone();
    let k2 = k.clone();
    let waiter = std::thread::spawn(move || {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        let seen = t
            .get_for_update(&k2)
            .expect("lock after the holder commits");
        let granted_at = Instant::now();
        t.put(&k2, b"2").expect("put");
        t.commit().expect("commit");
        (seen, granted_at)
    });
    std::thread::sleep(Duration::from_millis(300));
    let committing_at = Instant::now();
    holder.commit().expect("holder commits");
    let (seen, granted_at) = waiter.join().expect("waiter");
    assert_eq!(
        seen,
        Some(b"1".to_vec()),
        "a current read sees the holder's commit"
    );
    assert!(
        granted_at >= committing_at,
        "the lock was granted only after the holder committed"
    );
    assert_eq!(env.client.get(&k).expect("get"), Some(b"2".to_vec()));
}

#[test]
fn pessimistic_increments_from_many_threads_are_not_lost() {
    let env = start(config(3000));
    let k = key(8, "counter");
    let threads = 4;
    let per_thread = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let client = env.client.clone();
            let barrier = Arc::clone(&barrier);
            let k = k.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..per_thread {
                    loop {
                        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
                        let n = t.get_for_update(&k).map(|v| {
                            v.map_or(0, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
                        });
                        let result = n.and_then(|n| {
                            t.put(&k, &(n + 1).to_be_bytes())?;
                            t.commit()
                        });
                        match result {
                            Ok(_) => break,
                            Err(e) if e.is_retryable() => continue,
                            Err(e) => panic!("increment failed: {e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let v = env.client.get(&k).expect("get").expect("value");
    assert_eq!(
        u64::from_be_bytes(v.try_into().expect("8 bytes")),
        (threads * per_thread) as u64
    );
}

#[test]
fn a_live_holder_makes_the_waiter_time_out() {
    let env = start(config(3000));
    let k = key(10, "timeout");
    let mut holder = env.client.begin(TxnMode::Pessimistic).expect("begin");
    holder.put(&k, b"h").expect("lock");
    let mut waiter = env.client.begin(TxnMode::Pessimistic).expect("begin");
    let started = Instant::now();
    match waiter.put(&k, b"w") {
        Err(TxnError::LockWaitTimeout { key: tk, lock_ts }) => {
            assert_eq!(tk, k);
            assert_eq!(lock_ts, holder.start_ts());
        }
        other => panic!("expected a lock wait timeout, got {other:?}"),
    }
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited the 1 s timeout"
    );
    assert_eq!(env.client.counters().lock_wait_timeouts, 1);
    // The failed statement leaves the waiter usable; the holder is unaffected.
    waiter.put(&key(10, "free"), b"w").expect("another key");
    waiter.commit().expect("waiter commits its other key");
    holder.commit().expect("holder commits");
    assert_eq!(env.client.get(&k).expect("get"), Some(b"h".to_vec()));
}

#[test]
fn crossing_lock_orders_make_one_deadlock_victim() {
    let env = start(config(3000));
    let (ka, kb) = (key(1, "dl"), key(14, "dl"));
    let mut t1 = env.client.begin(TxnMode::Pessimistic).expect("begin");
    let mut t2 = env.client.begin(TxnMode::Pessimistic).expect("begin");
    t1.put(&ka, b"1").expect("t1 locks a");
    t2.put(&kb, b"2").expect("t2 locks b");
    let kb2 = kb.clone();
    let first = std::thread::spawn(move || {
        let r = t1.put(&kb2, b"1");
        (t1, r)
    });
    std::thread::sleep(Duration::from_millis(100));
    let r2 = t2.put(&ka, b"2");
    let (t1, r1) = first.join().expect("t1 thread");
    let deadlocked = [&r1, &r2]
        .iter()
        .filter(|r| matches!(r, Err(TxnError::Deadlock { .. })))
        .count();
    assert_eq!(deadlocked, 1, "exactly one victim: t1 {r1:?}, t2 {r2:?}");
    let victim = if r1.is_err() { &r1 } else { &r2 };
    if let Err(TxnError::Deadlock { chain }) = victim {
        assert!(!chain.is_empty(), "the chain names the cycle");
    }
    // The victim rolls back; the survivor then gets its lock and commits.
    if r1.is_err() {
        t1.rollback();
        t2.commit().expect("survivor commits");
    } else {
        t2.rollback();
        t1.commit().expect("survivor commits");
    }
    assert_eq!(env.client.counters().deadlocks, 1);
}

#[test]
fn a_transactions_own_lock_wait_timeout_overrides_the_clients() {
    let env = start(config(5000));
    let k = key(10, "own-timeout");
    let mut holder = env.client.begin(TxnMode::Pessimistic).expect("begin");
    holder.put(&k, b"h").expect("lock");

    // Longer than the client's 1 s: the waiter is still waiting after 1 s.
    let mut patient = env.client.begin(TxnMode::Pessimistic).expect("begin");
    assert_eq!(patient.lock_wait_timeout(), Some(Duration::from_secs(1)));
    patient.set_lock_wait_timeout(Some(Duration::from_millis(2500)));
    let started = Instant::now();
    assert!(matches!(
        patient.put(&k, b"p"),
        Err(TxnError::LockWaitTimeout { .. })
    ));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(2300),
        "a 2.5 s wait ended after {waited:?}"
    );

    // Shorter than the client's: refused before 1 s.
    let mut hasty = env.client.begin(TxnMode::Pessimistic).expect("begin");
    hasty.set_lock_wait_timeout(Some(Duration::from_millis(200)));
    let started = Instant::now();
    assert!(matches!(
        hasty.put(&k, b"x"),
        Err(TxnError::LockWaitTimeout { .. })
    ));
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "a 200 ms wait took {:?}",
        started.elapsed()
    );
    holder.commit().expect("holder commits");
    assert_eq!(env.client.get(&k).expect("get"), Some(b"h".to_vec()));
}

/// `batch_get_for_update` locks keys of several regions in one request per region, and a
/// key held by another transaction (whose batch then falls back to one lock at a time)
/// is waited for: the batch returns the holder's committed value, and increments made
/// through batches from several threads are not lost.
#[test]
fn batch_locking_reads_wait_for_holders_and_lose_no_increment() {
    let env = start(config(3000));
    let keys: Vec<Vec<u8>> = [2u8, 7, 12, 3, 9]
        .iter()
        .map(|r| key(*r, "batch"))
        .collect();
    let mut setup = env.client.begin(TxnMode::Pessimistic).expect("begin");
    for k in &keys {
        setup.put(k, b"0").expect("put");
    }
    setup.commit().expect("commit");

    let mut holder = env.client.begin(TxnMode::Pessimistic).expect("begin");
    holder.get_for_update(&keys[3]).expect("lock");
    holder.put(&keys[3], b"100").expect("put");
    let client = env.client.clone();
    let waiting_keys = keys.clone();
    let waiter = std::thread::spawn(move || {
        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
        // A first lock makes the primary; the batch then goes out per region.
        t.get_for_update(&waiting_keys[0]).expect("primary");
        let seen = t.batch_get_for_update(&waiting_keys).expect("batch");
        t.commit().expect("commit");
        seen
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiter.is_finished(), "the batch waits for the held key");
    holder.commit().expect("holder commits");
    let seen = waiter.join().expect("waiter");
    let want: Vec<Option<Vec<u8>>> = keys
        .iter()
        .enumerate()
        .map(|(i, _)| {
            Some(if i == 3 {
                b"100".to_vec()
            } else {
                b"0".to_vec()
            })
        })
        .collect();
    assert_eq!(seen, want, "the held key's value is the holder's commit");

    let threads = 4;
    let rounds = 10;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (client, keys, barrier) = (env.client.clone(), keys.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..rounds {
                    loop {
                        let mut t = client.begin(TxnMode::Pessimistic).expect("begin");
                        let attempt = (|| {
                            t.get_for_update(&keys[0])?;
                            let values = t.batch_get_for_update(&keys)?;
                            for (k, v) in keys.iter().zip(values) {
                                let n: u64 = String::from_utf8(v.unwrap_or_default())
                                    .expect("utf8")
                                    .parse()
                                    .expect("number");
                                t.put(k, (n + 1).to_string().as_bytes())?;
                            }
                            Ok::<(), TxnError>(())
                        })();
                        match attempt.and_then(|()| t.commit().map(|_| ())) {
                            Ok(()) => break,
                            Err(TxnError::Deadlock { .. } | TxnError::WriteConflict { .. }) => {}
                            Err(e) => panic!("increment failed: {e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let total = u64::try_from(threads * rounds).expect("fits");
    for (i, k) in keys.iter().enumerate() {
        let base = if i == 3 { 100 } else { 0 };
        assert_eq!(
            env.client.get(k).expect("get"),
            Some((base + total).to_string().into_bytes()),
            "key {i}"
        );
    }
}
