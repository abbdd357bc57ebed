//! A scripted [`NodeRouter`] for unit tests of the client's retry and outcome rules: a
//! timestamp oracle and a fixed two-region map answered by every node, and a test-supplied
//! handler for every other request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use surge_raft_lite::NodeId;

use crate::{KvRequest, KvResponse, KvService, NodeRouter, RegionEpoch, RegionInfo, ServiceError};

type Handler = dyn Fn(NodeId, &KvRequest) -> Result<KvResponse, ServiceError> + Send + Sync;

/// Nodes 1..=3; regions `[, "m")` (id 2) and `["m", )` (id 3), led by node 1.
pub(crate) struct FakeRouter {
    ts: AtomicU64,
    /// While set, every node refuses timestamp requests as if the meta group were down.
    pub(crate) tso_down: AtomicBool,
    handler: Box<Handler>,
    /// Every data request seen: (node, request name, region id).
    pub(crate) log: Mutex<Vec<(NodeId, &'static str, u64)>>,
}

impl FakeRouter {
    pub(crate) fn new(
        handler: impl Fn(NodeId, &KvRequest) -> Result<KvResponse, ServiceError> + Send + Sync + 'static,
    ) -> Arc<FakeRouter> {
        Arc::new(FakeRouter {
            ts: AtomicU64::new(crate::compose_ts(1_000, 0)),
            tso_down: AtomicBool::new(false),
            handler: Box::new(handler),
            log: Mutex::new(Vec::new()),
        })
    }

    /// The two regions, with `version` as their epoch version.
    pub(crate) fn regions(version: u64) -> Vec<RegionInfo> {
        let epoch = RegionEpoch {
            version,
            conf_ver: 1,
        };
        vec![
            RegionInfo {
                id: 2,
                start: vec![],
                end: b"m".to_vec(),
                epoch,
                peers: vec![1, 2, 3],
            },
            RegionInfo {
                id: 3,
                start: b"m".to_vec(),
                end: vec![],
                epoch,
                peers: vec![1, 2, 3],
            },
        ]
    }

    /// How many requests named `name` were seen.
    pub(crate) fn count(&self, name: &str) -> usize {
        self.log
            .lock()
            .iter()
            .filter(|(_, n, _)| *n == name)
            .count()
    }
}

struct FakeNode {
    id: NodeId,
    router: Arc<FakeRouter>,
}

impl KvService for FakeNode {
    fn call(&self, req: KvRequest) -> Result<KvResponse, ServiceError> {
        match &req {
            KvRequest::GetTimestamp { .. } if self.router.tso_down.load(Ordering::SeqCst) => {
                Err(ServiceError::Unavailable {
                    node: self.id,
                    detail: "meta group down".into(),
                })
            }
            KvRequest::GetTimestamp { .. } => {
                let ts = self.router.ts.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(KvResponse::Timestamp { ts })
            }
            KvRequest::GetRegion { key } => Ok(KvResponse::Regions {
                regions: FakeRouter::regions(1)
                    .into_iter()
                    .filter(|r| r.contains(key))
                    .map(|r| (r, Some(1)))
                    .collect(),
            }),
            _ => {
                let region = req.context().map_or(0, |c| c.region_id);
                self.router.log.lock().push((self.id, req.name(), region));
                (self.router.handler)(self.id, &req)
            }
        }
    }
}

impl NodeRouter for Arc<FakeRouter> {
    fn nodes(&self) -> Vec<NodeId> {
        vec![1, 2, 3]
    }

    fn service(&self, node: NodeId) -> Result<Arc<dyn KvService>, ServiceError> {
        Ok(Arc::new(FakeNode {
            id: node,
            router: Arc::clone(self),
        }))
    }
}
