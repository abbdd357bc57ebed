//! A node that stops ends its lock waits (`KvNode::stop_lock_waits`): a request parked on a
//! lock with a long wait is answered the retryable `NodeStopping` at once and does not take
//! the lock, a later request that would have to wait is answered so at once, and the rest
//! is still served. A client on the stopping node itself gets the error back at once; one
//! elsewhere retries until the lock is free.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

mod support;

use support::{Layout, TestCluster};
use surge_txn::rpc::{KvRequest, KvResponse, KvService, LockKey, NodeRouter};
use surge_txn::{ClientConfig, KvNode, LockMode, RegionError, ServiceError, TxnError, TxnMode};

/// The wait the waiting requests ask for: far longer than any of these tests may take, so a
/// wait that ends in time was ended by the stop.
const LONG_WAIT: Duration = Duration::from_secs(60);

/// Well below [`LONG_WAIT`]: how long an ended wait may take to answer on a loaded machine.
const PROMPT: Duration = Duration::from_secs(10);

fn lock_req(
    ctx: surge_txn::rpc::Context,
    key: &[u8],
    start_ts: u64,
    wait: Option<Duration>,
) -> KvRequest {
    KvRequest::AcquirePessimisticLock {
        ctx,
        keys: vec![LockKey {
            key: key.to_vec(),
            should_not_exist: false,
        }],
        primary: key.to_vec(),
        start_ts,
        // Alive for the whole test: no wait ends by the holder's TTL.
        lock_ttl: 600_000,
        for_update_ts: start_ts,
        wait_timeout_ms: wait.map(|w| u64::try_from(w.as_millis()).expect("fits")),
        need_value: false,
        min_commit_ts: 0,
    }
}

/// Node `id` of the cluster.
fn node(t: &TestCluster, id: u64) -> Arc<KvNode> {
    t.cluster.node(id).expect("the node runs")
}

/// Blocks until node `id` has counted more lock waits than `before` (a wait was enqueued),
/// then gives the waiter a moment to park.
fn until_parked(t: &TestCluster, id: u64, before: u64) {
    let started = Instant::now();
    while node(t, id).counters().lock_waits <= before {
        assert!(started.elapsed() < PROMPT, "nobody waited on node {id}");
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(50));
}

/// Raw requests, in each lock mode: the parked waiter is answered `NodeStopping` at once and
/// holds no lock afterwards; a new waiting request is refused at once; a request that needs
/// no wait (the holder's rollback, a lock on a free key) is still served.
#[test]
fn stopping_lock_waits_answers_the_parked_waiter_and_refuses_new_waits() {
    for mode in [LockMode::InMemory, LockMode::Sync] {
        let t = TestCluster::start(Layout::new(2, mode));
        let key = b"k-held";
        let (leader, ctx) = t.leader_ctx(key);
        let holder_ts = t.timestamp();
        let r = t.call_leader(key, |ctx| lock_req(ctx, key, holder_ts, None));
        assert!(
            matches!(r, KvResponse::PessimisticLock { .. }),
            "{mode:?}: {r:?}"
        );

        let waiter_ts = t.timestamp();
        let before = node(&t, leader).counters().lock_waits;
        let waiter = {
            let leader_node = node(&t, leader);
            thread::spawn(move || {
                let asked = Instant::now();
                let answer = leader_node.call(lock_req(ctx, key, waiter_ts, Some(LONG_WAIT)));
                (answer, asked.elapsed())
            })
        };
        until_parked(&t, leader, before);
        assert!(!waiter.is_finished(), "{mode:?}: the waiter did not wait");

        assert_eq!(node(&t, leader).stop_lock_waits(), 1, "{mode:?}");
        let stopping = RegionError::NodeStopping {
            region_id: ctx.region_id,
            node: leader,
        };
        let (answer, waited) = waiter.join().unwrap();
        assert_eq!(
            answer,
            Ok(KvResponse::RegionError(stopping.clone())),
            "{mode:?}: the parked waiter's answer after {waited:?}"
        );
        assert!(waited < PROMPT, "{mode:?}: answered after {waited:?}");

        // A new request that would wait is refused without waiting.
        let late_ts = t.timestamp();
        let asked = Instant::now();
        let r = t.call_leader(key, |ctx| lock_req(ctx, key, late_ts, Some(LONG_WAIT)));
        assert_eq!(r, KvResponse::RegionError(stopping), "{mode:?}");
        assert!(asked.elapsed() < PROMPT, "{mode:?}");

        // The rest is served: the holder rolls back, and a lock on the now free key needs no
        // wait and is granted (a request may ask for a wait it does not need).
        let r = t.call_leader(key, |ctx| KvRequest::PessimisticRollback {
            ctx,
            keys: vec![key.to_vec()],
            start_ts: holder_ts,
            for_update_ts: holder_ts,
        });
        assert!(
            !matches!(r, KvResponse::RegionError(_) | KvResponse::KeyError(_)),
            "{r:?}"
        );
        let locks = t.scan_locks(key, u64::MAX);
        assert!(
            locks.is_empty(),
            "{mode:?}: the ended waiters took a lock: {locks:?}"
        );
        let free_ts = t.timestamp();
        let r = t.call_leader(key, |ctx| lock_req(ctx, key, free_ts, Some(LONG_WAIT)));
        assert!(
            matches!(r, KvResponse::PessimisticLock { .. }),
            "{mode:?}: {r:?}"
        );
        let holders: Vec<u64> = t
            .scan_locks(key, u64::MAX)
            .iter()
            .map(|l| l.lock_ts)
            .collect();
        assert_eq!(holders, [free_ts], "{mode:?}");
    }
}

/// A router that says which node its caller runs in (as a node's own coordinator's does).
struct RunsOn {
    inner: Arc<dyn NodeRouter>,
    node: Option<u64>,
}

impl NodeRouter for RunsOn {
    fn nodes(&self) -> Vec<u64> {
        self.inner.nodes()
    }

    fn service(&self, node: u64) -> Result<Arc<dyn KvService>, ServiceError> {
        self.inner.service(node)
    }

    fn local_node(&self) -> Option<u64> {
        self.node
    }
}

/// A client on the stopping node (its coordinator, say) gets `NodeStopping` back at once,
/// retryable: retrying would only come back to that node, which waits for it before it
/// stops. A client elsewhere retries instead, and takes the lock once the holder let go.
#[test]
#[allow(clippy::field_reassign_with_default)] // config structs are becoming #[non_exhaustive]
fn a_client_on_the_stopping_node_gives_up_and_one_elsewhere_retries() {
    let t = TestCluster::start(Layout::new(2, LockMode::InMemory));
    let key = b"k-held";
    let (leader, _) = t.leader_ctx(key);
    let holder_ts = t.timestamp();
    let r = t.call_leader(key, |ctx| lock_req(ctx, key, holder_ts, None));
    assert!(matches!(r, KvResponse::PessimisticLock { .. }), "{r:?}");
    let mut config = ClientConfig::default();
    config.wait_for_lock_timeout = Some(LONG_WAIT);
    let client_on = |node: Option<u64>| {
        let router = RunsOn {
            inner: t.cluster.router(),
            node,
        };
        surge_txn::TxnClient::new(Arc::new(router), config.clone())
    };

    let local = client_on(Some(leader));
    let before = node(&t, leader).counters().lock_waits;
    let waiter = thread::spawn(move || {
        let mut txn = local.begin(TxnMode::Pessimistic).unwrap();
        let asked = Instant::now();
        let got = txn.get_for_update(key);
        (got, asked.elapsed())
    });
    until_parked(&t, leader, before);
    assert!(!waiter.is_finished(), "the local client did not wait");
    node(&t, leader).stop_lock_waits();
    let (got, waited) = waiter.join().unwrap();
    match got {
        Err(e @ TxnError::Region(RegionError::NodeStopping { node, .. })) => {
            assert_eq!(node, leader);
            assert!(e.is_retryable());
        }
        other => panic!("the local client got {other:?} after {waited:?}"),
    }
    assert!(waited < PROMPT, "the local client gave up after {waited:?}");

    let remote = client_on(None);
    let waiter = thread::spawn(move || {
        let mut txn = remote.begin(TxnMode::Pessimistic).unwrap();
        let got = txn.get_for_update(key);
        (got, txn)
    });
    thread::sleep(Duration::from_millis(500));
    assert!(
        !waiter.is_finished(),
        "the client elsewhere did not retry: {:?}",
        waiter.join().unwrap().0
    );
    let r = t.call_leader(key, |ctx| KvRequest::PessimisticRollback {
        ctx,
        keys: vec![key.to_vec()],
        start_ts: holder_ts,
        for_update_ts: holder_ts,
    });
    assert!(
        !matches!(r, KvResponse::RegionError(_) | KvResponse::KeyError(_)),
        "{r:?}"
    );
    let (got, txn) = waiter.join().unwrap();
    assert_eq!(
        got.unwrap(),
        None,
        "the client elsewhere took the freed lock"
    );
    let holders: Vec<u64> = t
        .scan_locks(key, u64::MAX)
        .iter()
        .map(|l| l.lock_ts)
        .collect();
    assert_eq!(holders, [txn.start_ts()]);
}
