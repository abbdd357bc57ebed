//! A node stopped by SIGTERM while a client waits on a lock with a long wait of its own
//! choosing: the wait must not hold the node's shutdown.
//!
//! Each connection's requests run on its own thread, and the shutdown waits for those
//! threads (up to `server::SHUTDOWN_WAIT`, 10 s) so that no session still uses the
//! coordinator or Raft when they close. A lock wait of 60 s would keep its thread, and so the
//! shutdown, for that whole budget. The node wakes its parked lock waiters first, with a
//! retryable region error, and refuses new waits.
#![allow(clippy::unwrap_used)] // Test code: a failure is the test failing.

mod common;

use std::time::{Duration, Instant};

use common::SoloNode;
use surge_txn::rpc::{Context, KvRequest, KvResponse, KvService, LockKey};
use surge_txn::{RegionError, TxnError, TxnMode};
use surgedb::local::signal;
use surgedb::{Client, ClientError, RemoteConfig, RemoteService};

/// How long the node may take from SIGTERM to exit. Its own steps (notice the signal, end the
/// lock waits, end the connection threads, close the binlog, stop Raft after its last write)
/// took 20 to 70 ms here; 2 s leaves room for a loaded machine, and is far below the 10 s
/// (`SHUTDOWN_WAIT`) that a node whose shutdown waits for the lock wait takes.
const EXIT_BOUND: Duration = Duration::from_secs(2);

/// The lock wait the waiting client asks for: longer than the shutdown's whole budget.
const LONG_WAIT_MS: u64 = 60_000;

/// A service for node 1 whose answers may take longer than the long wait.
#[allow(clippy::field_reassign_with_default)] // config structs are becoming #[non_exhaustive]
fn service(addr: &str) -> RemoteService {
    let mut config = RemoteConfig::default();
    config.request_timeout = Duration::from_millis(LONG_WAIT_MS) + Duration::from_secs(30);
    RemoteService::new(1, RemoteService::resolve(1, addr).unwrap(), config)
}

/// The context of `key`'s region, as node 1 reports it.
fn context_of(client: &Client, key: &[u8]) -> Context {
    let status = client.node_status(1).unwrap();
    let region = status
        .regions
        .iter()
        .find(|r| r.region.contains(key))
        .expect("node 1 hosts the key's region");
    Context {
        region_id: region.region.id,
        epoch: region.region.epoch,
        gc_hold_ts: 0,
    }
}

fn lock_request(ctx: Context, key: &[u8], start_ts: u64, wait_ms: Option<u64>) -> KvRequest {
    KvRequest::AcquirePessimisticLock {
        ctx,
        keys: vec![LockKey {
            key: key.to_vec(),
            should_not_exist: false,
        }],
        primary: key.to_vec(),
        start_ts,
        // Alive for the whole test: the waiter's wait is never ended by the holder's TTL.
        lock_ttl: 600_000,
        for_update_ts: start_ts,
        wait_timeout_ms: wait_ms,
        need_value: false,
        min_commit_ts: 0,
    }
}

/// A lock wait longer than the transport's request timeout (1 s here, 10 s by default) is
/// answered by the node (`LockWaitTimeout`, the transaction did not lock), not cut short by
/// the transport as a timeout after the request was sent (an unknown outcome to the
/// client). Before the fix the waiter got `Timeout` after 1 s.
#[test]
#[allow(clippy::field_reassign_with_default)] // config structs are #[non_exhaustive]
fn a_lock_wait_longer_than_the_request_timeout_is_answered_by_the_node() {
    let tmp = tempfile::tempdir().unwrap();
    let node = SoloNode::spawn(&tmp.path().join("n1"), &[]);
    let client = node.wait_serving();
    let key = b"k/slow";
    let ctx = context_of(&client, key);
    let holder_ts = client.txn().current_ts().unwrap();
    match service(&node.addr)
        .call(lock_request(ctx, key, holder_ts, None))
        .unwrap()
    {
        KvResponse::PessimisticLock { .. } => {}
        other => panic!("the holder did not get its lock: {other:?}"),
    }
    let mut config = RemoteConfig::default();
    config.request_timeout = Duration::from_secs(1);
    let waiter = RemoteService::new(1, RemoteService::resolve(1, &node.addr).unwrap(), config);
    let waiter_ts = client.txn().current_ts().unwrap();
    let asked = Instant::now();
    let answer = waiter.call(lock_request(ctx, key, waiter_ts, Some(2_500)));
    let waited = asked.elapsed();
    match answer {
        Ok(KvResponse::KeyError(surgedb::txn::KeyError::LockWaitTimeout { .. })) => {}
        other => panic!("a 2.5 s lock wait over a 1 s request timeout: {other:?} after {waited:?}"),
    }
    assert!(
        waited >= Duration::from_millis(2_400),
        "answered after {waited:?}, before the wait ran out"
    );
}

/// One client holds a pessimistic lock on `k`; another connection waits on `k` with a 60 s
/// wait; SIGTERM. The node exits within [`EXIT_BOUND`] and the waiter is answered with the
/// retryable `NodeStopping` region error (neither left hanging nor granted the lock).
#[test]
fn a_sigterm_wakes_a_long_lock_wait_and_the_node_exits_promptly() {
    let tmp = tempfile::tempdir().unwrap();
    let node = SoloNode::spawn(&tmp.path().join("n1"), &[]);
    let client = node.wait_serving();
    let key = b"k/held";
    let ctx = context_of(&client, key);

    let holder = service(&node.addr);
    let holder_ts = client.txn().current_ts().unwrap();
    match holder
        .call(lock_request(ctx, key, holder_ts, None))
        .unwrap()
    {
        KvResponse::PessimisticLock { .. } => {}
        other => panic!("the holder did not get its lock: {other:?}"),
    }

    let waits_before = client.node_status(1).unwrap().counters.lock_waits;
    let waiter_ts = client.txn().current_ts().unwrap();
    let waiter = std::thread::spawn({
        let waiter = service(&node.addr);
        move || {
            let asked = Instant::now();
            let answer = waiter.call(lock_request(ctx, key, waiter_ts, Some(LONG_WAIT_MS)));
            (answer, asked.elapsed())
        }
    });
    // The waiter has queued (the counter moves once its wait is enqueued).
    common::wait_until(Duration::from_secs(10), || {
        client.node_status(1).unwrap().counters.lock_waits > waits_before
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(!waiter.is_finished(), "the waiter did not wait");

    let stopped_at = Instant::now();
    assert!(signal(node.child.id(), "TERM"));
    let (status, stderr) = exit_of(node);
    let took = stopped_at.elapsed();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        took < EXIT_BOUND,
        "the node took {took:?} to exit after SIGTERM (bound {EXIT_BOUND:?}) with a \
         {LONG_WAIT_MS} ms lock wait parked\n{stderr}"
    );
    assert!(
        !stderr.contains("still running after") && !stderr.contains("did not close cleanly"),
        "the shutdown was not clean:\n{stderr}"
    );
    assert!(
        stderr.contains("surgedb node 1: stopping: 1 lock wait(s) ended"),
        "the node did not say it ended the wait:\n{stderr}"
    );

    let (answer, waited) = waiter.join().unwrap();
    match answer {
        Ok(KvResponse::RegionError(e @ RegionError::NodeStopping { .. })) => {
            assert_eq!(
                e,
                RegionError::NodeStopping {
                    region_id: ctx.region_id,
                    node: 1,
                }
            );
        }
        other => panic!("the waiter was answered {other:?} after {waited:?}, not NodeStopping"),
    }
    assert!(
        waited < Duration::from_secs(10),
        "the waiter's answer took {waited:?}"
    );
    eprintln!(
        "the node exited {took:?} after SIGTERM; the waiter was answered {waited:?} after it asked"
    );
}

/// A session on the node's own coordinator waits on `k` (the coordinator's lock waits last
/// 1 s each: it asks again after each); SIGTERM while it waits. The coordinator, which runs
/// on the stopping node, gets `NodeStopping` back at once instead of retrying (a retry
/// would come back to this node, which waits for the session before it stops, until the
/// coordinator's 20 s backoff budget ran out): the node exits within [`EXIT_BOUND`] and
/// the session's operation fails with that retryable error.
#[test]
fn a_sigterm_ends_a_lock_wait_of_the_nodes_own_coordinator() {
    let tmp = tempfile::tempdir().unwrap();
    let node = SoloNode::spawn(&tmp.path().join("n1"), &[]);
    let client = node.wait_serving();
    let key = b"k/held";
    let ctx = context_of(&client, key);
    let holder_ts = client.txn().current_ts().unwrap();
    match service(&node.addr)
        .call(lock_request(ctx, key, holder_ts, None))
        .unwrap()
    {
        KvResponse::PessimisticLock { .. } => {}
        other => panic!("the holder did not get its lock: {other:?}"),
    }

    let waits_before = client.node_status(1).unwrap().counters.lock_waits;
    let session = std::thread::spawn({
        let client = client.clone();
        move || {
            let mut txn = client.begin_on(1, TxnMode::Pessimistic).unwrap();
            let mut timeouts = 0u32;
            loop {
                match txn.get_for_update(key) {
                    Err(ClientError::Txn(TxnError::LockWaitTimeout { .. })) => timeouts += 1,
                    other => return (other, timeouts),
                }
            }
        }
    });
    // SIGTERM as soon as the coordinator's first wait is queued: it has 1 s to run.
    common::wait_until(Duration::from_secs(30), || {
        client.node_status(1).unwrap().counters.lock_waits > waits_before
    });
    let stopped_at = Instant::now();
    assert!(signal(node.child.id(), "TERM"));
    let (status, stderr) = exit_of(node);
    let took = stopped_at.elapsed();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        took < EXIT_BOUND,
        "the node took {took:?} to exit after SIGTERM (bound {EXIT_BOUND:?}) with its \
         coordinator waiting on a lock\n{stderr}"
    );
    assert!(
        !stderr.contains("still running after") && !stderr.contains("did not close cleanly"),
        "the shutdown was not clean:\n{stderr}"
    );
    let (got, timeouts) = session.join().unwrap();
    match got {
        Err(ClientError::Txn(e @ TxnError::Region(RegionError::NodeStopping { node: 1, .. }))) => {
            assert!(e.is_retryable());
        }
        other => panic!("the session's lock ended {other:?} after {timeouts} lock wait timeouts"),
    }
    eprintln!("the node exited {took:?} after SIGTERM");
}

/// Waits (at most 30 s) for the node's process to exit; returns its status and stderr.
fn exit_of(node: SoloNode) -> (std::process::ExitStatus, String) {
    let out = node.wait_exit();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
