//! Region-error retry rules over a scripted router: leader hints, peers tried in turn,
//! epoch changes, retries that run out.

use std::sync::Arc;
use std::time::Duration;

use super::fake_router::FakeRouter;
use crate::{ClientConfig, KvRequest, KvResponse, RegionError, ServiceError, TxnClient, TxnError};

fn client(router: &Arc<FakeRouter>) -> TxnClient {
    let config = ClientConfig {
        max_backoff: Duration::from_millis(100),
        heartbeat_interval: Duration::from_secs(3600),
        ..ClientConfig::default()
    };
    TxnClient::new(Arc::new(Arc::clone(router)), config)
}

fn get_nodes(router: &FakeRouter) -> Vec<u64> {
    router
        .log
        .lock()
        .iter()
        .filter(|(_, n, _)| *n == "get")
        .map(|(node, _, _)| *node)
        .collect()
}

#[test]
fn a_leader_hint_is_followed_and_cached() {
    let router = FakeRouter::new(|node, req| match (node, req) {
        (3, KvRequest::Get { .. }) => Ok(KvResponse::Get {
            value: Some(b"v".to_vec()),
        }),
        (_, KvRequest::Get { ctx, .. }) => Ok(KvResponse::RegionError(RegionError::NotLeader {
            region_id: ctx.region_id,
            leader: Some(3),
        })),
        _ => Ok(KvResponse::Done),
    });
    let c = client(&router);
    assert_eq!(c.get(b"k").expect("get"), Some(b"v".to_vec()));
    assert_eq!(c.get(b"k").expect("get"), Some(b"v".to_vec()));
    assert_eq!(
        get_nodes(&router),
        vec![1, 3, 3],
        "the hint is cached for the next request"
    );
    assert_eq!(c.counters().region_error_retries, 1);
}

#[test]
fn a_down_node_makes_the_client_try_the_next_peer() {
    let router = FakeRouter::new(|node, req| match (node, req) {
        (1, _) => Err(ServiceError::Unavailable {
            node,
            detail: "down".into(),
        }),
        (_, KvRequest::Get { .. }) => Ok(KvResponse::Get { value: None }),
        _ => Ok(KvResponse::Done),
    });
    let c = client(&router);
    assert_eq!(c.get(b"k").expect("get"), None);
    assert_eq!(get_nodes(&router), vec![1, 2]);
}

/// A node that holds no replica of the region (it missed the split that made it) sends
/// the client on to the next peer, not back to itself after a reload from the meta group.
#[test]
fn a_node_without_the_region_makes_the_client_try_the_next_peer() {
    let router = FakeRouter::new(|node, req| match (node, req) {
        (1, KvRequest::Get { ctx, .. }) => {
            Ok(KvResponse::RegionError(RegionError::RegionNotFound {
                region_id: ctx.region_id,
            }))
        }
        (_, KvRequest::Get { .. }) => Ok(KvResponse::Get {
            value: Some(b"v".to_vec()),
        }),
        _ => Ok(KvResponse::Done),
    });
    let c = client(&router);
    assert_eq!(c.get(b"k").expect("get"), Some(b"v".to_vec()));
    assert_eq!(get_nodes(&router), vec![1, 2]);
}

#[test]
fn an_epoch_change_reloads_the_region_and_retries_with_the_new_epoch() {
    let router = FakeRouter::new(|_, req| match req {
        KvRequest::Get { ctx, .. } if ctx.epoch.version == 1 => {
            Ok(KvResponse::RegionError(RegionError::EpochNotMatch {
                region_id: ctx.region_id,
                current: FakeRouter::regions(2),
            }))
        }
        KvRequest::Get { .. } => Ok(KvResponse::Get {
            value: Some(b"new".to_vec()),
        }),
        _ => Ok(KvResponse::Done),
    });
    let c = client(&router);
    assert_eq!(c.get(b"k").expect("get"), Some(b"new".to_vec()));
    assert_eq!(get_nodes(&router).len(), 2);
    assert_eq!(
        c.region_cache_len(),
        2,
        "both regions of the answer are cached"
    );
}

#[test]
fn region_errors_reach_the_caller_only_when_retries_run_out() {
    let router = FakeRouter::new(|_, req| match req {
        KvRequest::Get { ctx, .. } => Ok(KvResponse::RegionError(RegionError::StaleCommand {
            region_id: ctx.region_id,
        })),
        _ => Ok(KvResponse::Done),
    });
    let c = client(&router);
    let started = std::time::Instant::now();
    match c.get(b"k") {
        Err(TxnError::Region(RegionError::StaleCommand { region_id: 2 })) => {}
        other => panic!("expected the last region error, got {other:?}"),
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(40),
        "it backed off first ({elapsed:?})"
    );
    assert!(
        elapsed < Duration::from_secs(2),
        "within the 100 ms budget ({elapsed:?})"
    );
    assert!(get_nodes(&router).len() >= 3, "several attempts");
}
