//! Raw `KvRequest`s to a `LocalCluster`'s nodes, without the client: a timestamp, a region's
//! leader and context, a read at a chosen version, a region's locks, and the writes of one
//! transaction (pessimistic lock, prewrite, commit). `TestCluster`'s methods of the same names
//! are these on its cluster.

use std::time::{Duration, Instant};

use surge_txn::actions::{CommitKind, Mutation, PessimisticAction, TxnProps};
use surge_txn::rpc::{Context, KvRequest, KvResponse, LockKey};
use surge_txn::{ClusterConfig, LocalCluster, LockInfo, LockMode};

/// How long a helper waits for an oracle or a leader (elections after a fault).
const WAIT: Duration = Duration::from_secs(30);

/// A cluster of one region in `dir` with `mode` locks, never split by size: the raw
/// requests' tests place every key in it and split it themselves when they need to.
pub fn one_region_cluster(dir: &std::path::Path, mode: LockMode) -> LocalCluster {
    let mut config = ClusterConfig::new(dir).with_regions(1).with_lock_mode(mode);
    config.split_size = None;
    LocalCluster::start(config).expect("cluster")
}

/// A fresh timestamp from whichever node's oracle answers (the meta leader), retrying across
/// elections for up to 30 s.
pub fn timestamp(c: &LocalCluster) -> u64 {
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        for id in c.node_ids() {
            if let Ok(KvResponse::Timestamp { ts }) =
                c.call(*id, KvRequest::GetTimestamp { count: 1 })
            {
                return ts;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no timestamp oracle answered within 30 s");
}

/// The leader of `key`'s region and the region's context (id and epoch) as the cluster sees
/// them now, waiting up to 30 s for a leader.
pub fn leader_and_ctx(c: &LocalCluster, key: &[u8]) -> (u64, Context) {
    let region = c.region_of(key).expect("a region holds every key");
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(leader) = c.leader_of_group(region.id) {
            let ctx = Context {
                region_id: region.id,
                epoch: region.epoch,
                gc_hold_ts: 0,
            };
            return (leader, ctx);
        }
        assert!(
            Instant::now() < deadline,
            "region {} has no leader",
            region.id
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The value of `key` at `version`, read on its region's leader.
pub fn get_at(c: &LocalCluster, key: &[u8], version: u64) -> Option<Vec<u8>> {
    let (leader, ctx) = leader_and_ctx(c, key);
    let req = KvRequest::Get {
        ctx,
        key: key.to_vec(),
        version,
        bypass_locks: Vec::new(),
    };
    match c.call(leader, req) {
        Ok(KvResponse::Get { value }) => value,
        other => panic!("get {key:?} at {version} on node {leader}: {other:?}"),
    }
}

/// Every lock of the region holding `key`, as `ScanLock` on its leader sees them (memory and
/// replicated, each once).
pub fn locks_in_region_of(c: &LocalCluster, key: &[u8]) -> Vec<LockInfo> {
    let r = c.region_of(key).expect("region");
    let leader = c.leader_of_group(r.id).expect("leader");
    match c
        .call(
            leader,
            KvRequest::ScanLock {
                ctx: Context {
                    region_id: r.id,
                    epoch: r.epoch,
                    gc_hold_ts: 0,
                },
                max_ts: u64::MAX,
                start: r.start.clone(),
                end: None,
                limit: 0,
            },
        )
        .expect("scan lock call")
    {
        KvResponse::Locks { locks } => locks,
        other => panic!("scan lock: {other:?}"),
    }
}

/// A prewrite of `puts` (one region's keys) for the transaction `props`, every key checked
/// for its pessimistic lock when `props.for_update_ts` is set.
pub fn prewrite_request(ctx: Context, puts: &[(&[u8], &[u8])], props: TxnProps) -> KvRequest {
    let action = if props.for_update_ts != 0 {
        PessimisticAction::DoPessimisticCheck
    } else {
        PessimisticAction::SkipPessimisticCheck
    };
    KvRequest::Prewrite {
        ctx,
        mutations: puts
            .iter()
            .map(|(key, value)| {
                (
                    Mutation::Put {
                        key: key.to_vec(),
                        value: value.to_vec(),
                    },
                    action,
                )
            })
            .collect(),
        props,
    }
}

/// The properties of a transaction started at `start_ts` with `primary`: pessimistic at
/// `for_update_ts` (0: optimistic), TTL 3 s, committed as `commit_kind`.
pub fn txn_props(
    primary: &[u8],
    start_ts: u64,
    for_update_ts: u64,
    commit_kind: CommitKind,
) -> TxnProps {
    TxnProps {
        start_ts,
        primary: primary.to_vec(),
        lock_ttl: 3000,
        for_update_ts,
        txn_size: 1,
        min_commit_ts: 0,
        commit_kind,
    }
}

/// Locks `key` pessimistically for `start_ts` at `for_update_ts` (primary `primary`) on its
/// region's leader, and returns the reply.
pub fn lock_pessimistic(
    c: &LocalCluster,
    key: &[u8],
    primary: &[u8],
    start_ts: u64,
    for_update_ts: u64,
) -> KvResponse {
    let (leader, ctx) = leader_and_ctx(c, key);
    c.call(
        leader,
        KvRequest::AcquirePessimisticLock {
            ctx,
            keys: vec![LockKey {
                key: key.to_vec(),
                should_not_exist: false,
            }],
            primary: primary.to_vec(),
            start_ts,
            lock_ttl: 3000,
            for_update_ts,
            wait_timeout_ms: None,
            need_value: false,
            min_commit_ts: 0,
        },
    )
    .expect("pessimistic lock call")
}

/// Commits `keys` (all in `key`'s region) of `start_ts` at `commit_ts` on the region's
/// leader, and returns the reply.
pub fn commit_keys(c: &LocalCluster, keys: &[&[u8]], start_ts: u64, commit_ts: u64) -> KvResponse {
    let (leader, ctx) = leader_and_ctx(c, keys[0]);
    c.call(
        leader,
        KvRequest::Commit {
            ctx,
            keys: keys.iter().map(|k| k.to_vec()).collect(),
            start_ts,
            commit_ts,
        },
    )
    .expect("commit call")
}
