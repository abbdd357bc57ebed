//! Sending requests: to the meta leader, to the leader of one key's region, and in region
//! batches, with the region-error retry rules of TiKV's client.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use surge_raft_lite::NodeId;

use super::backoff::Backoff;
use super::batch_pool::Task;
use super::core::ClientCore;
use super::counters::bump;
use super::error::TxnError;
use super::region_cache::CachedRegion;
use crate::{Context, KvRequest, KvResponse, RegionError, ServiceError};

/// What a batch's reply handler wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The batch is finished.
    Done,
    /// Send the batch again (after the handler resolved a lock or backed off).
    Retry,
}

/// One request kind sent in region batches (prewrite, commit, rollback, batch get).
pub(crate) trait RegionBatch {
    /// What a batch holds (keys, mutations).
    type Item: Clone;

    /// The key an item touches.
    fn key_of(item: &Self::Item) -> &[u8];

    /// About how many bytes an item adds to a request (and to its Raft proposal): its key
    /// by default; a mutation adds its value.
    fn item_bytes(&self, item: &Self::Item) -> usize {
        Self::key_of(item).len() + ITEM_OVERHEAD
    }

    /// The request for `batch`, all of whose keys are in the region of `ctx`.
    fn request(&self, ctx: Context, batch: &[Self::Item]) -> KvRequest;

    /// Handles a reply that is not a region error.
    ///
    /// # Errors
    /// Whatever ends the whole operation.
    fn on_reply(
        &mut self,
        core: &ClientCore,
        batch: &[Self::Item],
        reply: KvResponse,
        bo: &mut Backoff,
    ) -> Result<Reply, TxnError>;

    /// The items go out as several requests from now on: they span more than one region
    /// (a split the caller's grouping did not know of), or one region's items are more
    /// than one request may carry ([`MAX_BATCH_BYTES`], [`MAX_BATCH_ITEMS`]). Called before any of the parts
    /// is sent (at most one request holding all the items went out before). An operation
    /// that must be one request (a one-phase commit) changes what it sends here.
    fn on_split(&mut self, _core: &ClientCore) {}
}

/// The outcome of one attempt at a region request.
enum Attempt {
    /// The node answered with something other than a region error.
    Reply(KvResponse),
    /// The cache was updated (and a sleep taken when due): try again.
    Retry,
}

/// Bytes an item adds to a request beyond its key (encoding, lock fields): a rough bound.
pub(crate) const ITEM_OVERHEAD: usize = 16;

/// The most bytes of items one region request carries. A region's Raft proposal must stay
/// under raft-lite's proposal limit (`Config::max_proposal_bytes`, 64 MiB); TiKV's client sends prewrites of 16 KiB and
/// lock requests of 16 Ki keys. A 1M-row `UPDATE`'s prewrite of one region was one
/// proposal of 166 MB, refused, and the statement could never commit.
pub(crate) const MAX_BATCH_BYTES: usize = 8 << 20;

/// The most items one region request carries.
pub(crate) const MAX_BATCH_ITEMS: usize = 16 * 1024;

/// `batch` (one region's) cut into requests of at most [`MAX_BATCH_BYTES`] and
/// [`MAX_BATCH_ITEMS`] for `op`, in order (an item larger than the bound goes alone).
pub(crate) fn bounded_batches<B: RegionBatch>(op: &B, batch: Vec<B::Item>) -> Vec<Vec<B::Item>> {
    let limits = super::pacing::BatchLimits {
        keys: MAX_BATCH_ITEMS,
        bytes: MAX_BATCH_BYTES,
    };
    let mut out = super::pacing::cut_in_order(batch, |item| op.item_bytes(item), limits);
    if out.is_empty() {
        out.push(Vec::new());
    }
    out
}

impl ClientCore {
    fn call(&self, node: NodeId, req: KvRequest) -> Result<KvResponse, ServiceError> {
        self.router.service(node)?.call(req)
    }

    /// Sends a placement or detector request to the meta leader, following leader hints
    /// and trying every node in turn when none is known.
    ///
    /// Placement, oracle and detector requests only: none of them changes a transaction's
    /// data, so a failure after sending needs no outcome-unknown mark (a lost timestamp or
    /// region answer is simply asked again).
    ///
    /// # Errors
    /// The last region or service error once the backoff budget is spent; `Protocol` for an
    /// undecodable answer.
    pub(crate) fn meta_call(
        &self,
        req: &KvRequest,
        bo: &mut Backoff,
    ) -> Result<KvResponse, TxnError> {
        let nodes = self.router.nodes();
        let Some(&first) = nodes.first() else {
            return Err(TxnError::Unavailable(ServiceError::Unavailable {
                node: 0,
                detail: "the router knows no nodes".to_string(),
            }));
        };
        let mut next_guess = first;
        loop {
            let target = self.meta_leader.lock().unwrap_or(next_guess);
            let after = |n: NodeId| {
                let i = nodes.iter().position(|&x| x == n).map_or(0, |i| i + 1);
                nodes[i % nodes.len()]
            };
            match self.call(target, req.clone()) {
                Ok(KvResponse::RegionError(e)) => {
                    bump(&self.counters.region_error_retries);
                    match &e {
                        RegionError::NotLeader {
                            leader: Some(l), ..
                        } if *l != target => {
                            *self.meta_leader.lock() = Some(*l);
                            bo.note(TxnError::Region(e));
                            bo.retry_now()?;
                        }
                        _ => {
                            *self.meta_leader.lock() = None;
                            next_guess = after(target);
                            bo.note(TxnError::Region(e));
                            bo.sleep()?;
                        }
                    }
                }
                Ok(resp) => {
                    *self.meta_leader.lock() = Some(target);
                    return Ok(resp);
                }
                Err(ServiceError::Protocol { node, detail }) => {
                    return Err(TxnError::Protocol {
                        detail: format!("node {node}: {detail}"),
                    });
                }
                Err(e) => {
                    bump(&self.counters.region_error_retries);
                    *self.meta_leader.lock() = None;
                    next_guess = after(target);
                    bo.note(TxnError::Unavailable(e));
                    bo.sleep()?;
                }
            }
        }
    }

    /// A fresh timestamp from the oracle.
    ///
    /// # Errors
    /// As [`ClientCore::meta_call`].
    pub(crate) fn get_ts(&self) -> Result<u64, TxnError> {
        let mut bo = Backoff::new(&self.config);
        let req = KvRequest::GetTimestamp { count: 1 };
        match self.meta_call(&req, &mut bo)? {
            KvResponse::Timestamp { ts } => Ok(ts),
            other => Err(TxnError::unexpected(req.name(), &other)),
        }
    }

    /// The region holding `key`, from the cache or else from the meta group.
    ///
    /// # Errors
    /// As [`ClientCore::meta_call`].
    pub(crate) fn locate(&self, key: &[u8], bo: &mut Backoff) -> Result<CachedRegion, TxnError> {
        loop {
            if let Some(r) = self.cache.read().locate(key) {
                return Ok(r.clone());
            }
            let req = KvRequest::GetRegion { key: key.to_vec() };
            match self.meta_call(&req, bo)? {
                KvResponse::Regions { regions } => {
                    let found = regions.iter().any(|(r, _)| r.contains(key));
                    let mut cache = self.cache.write();
                    for (info, leader) in regions {
                        cache.insert(info, leader);
                    }
                    drop(cache);
                    if !found {
                        // The meta group has no region for the key yet (still starting).
                        bo.note(TxnError::Region(RegionError::KeyNotInRegion {
                            key: key.to_vec(),
                            region_id: 0,
                        }));
                        bo.sleep()?;
                    }
                }
                other => return Err(TxnError::unexpected(req.name(), &other)),
            }
        }
    }

    /// Sends `build(ctx)` to the leader of `key`'s region until a node answers with
    /// something other than a region error.
    ///
    /// Every failure of a request handed to a node's service (timeout, unreachable,
    /// protocol error) marks `bo` outcome-unknown: the request may have run there. Only a
    /// region error (the node refused it) and a node the router knows to be down (nothing
    /// sent) leave it unmarked.
    ///
    /// # Errors
    /// The last region or service error once `bo` is spent; `Protocol` at once for an
    /// answer that does not decode (outcome unknown).
    pub(crate) fn send_key(
        &self,
        key: &[u8],
        bo: &mut Backoff,
        mut build: impl FnMut(Context) -> KvRequest,
    ) -> Result<KvResponse, TxnError> {
        loop {
            let region = self.locate(key, bo)?;
            if let Attempt::Reply(resp) =
                self.send_once(&region, build(self.context(&region)), bo)?
            {
                return Ok(resp);
            }
        }
    }

    /// Sends one request to `region` and returns its reply, or `None` after a region error
    /// or an unreachable node (the cache updated and a sleep taken when due).
    ///
    /// # Errors
    /// As [`ClientCore::send_key`].
    pub(crate) fn send_region(
        &self,
        region: &CachedRegion,
        req: KvRequest,
        bo: &mut Backoff,
    ) -> Result<Option<KvResponse>, TxnError> {
        Ok(match self.send_once(region, req, bo)? {
            Attempt::Reply(resp) => Some(resp),
            Attempt::Retry => None,
        })
    }

    /// Runs `op` over `items` in region batches: groups the items by region, sends each
    /// group, regroups a batch whose region changed, and retries on region errors.
    ///
    /// # Errors
    /// The first error `op` returns, or the last region error once `bo` is spent.
    pub(crate) fn run_batches<B: RegionBatch>(
        &self,
        op: &mut B,
        items: Vec<B::Item>,
        bo: &mut Backoff,
    ) -> Result<(), TxnError> {
        let mut queue: VecDeque<Vec<B::Item>> = self
            .group_by_region(items, B::key_of, bo)?
            .into_iter()
            .flat_map(|(_, batch)| bounded_batches(op, batch))
            .collect();
        if queue.len() > 1 {
            op.on_split(self);
        }
        while let Some(batch) = queue.pop_front() {
            let Some(first) = batch.first() else { continue };
            let region = self.locate(B::key_of(first), bo)?;
            if !batch
                .iter()
                .all(|item| region.info.contains(B::key_of(item)))
            {
                // The region split or moved since grouping: regroup this batch (each part,
                // a part of a bounded batch, is within the bounds too).
                let regrouped: Vec<Vec<B::Item>> = self
                    .group_by_region(batch, B::key_of, bo)?
                    .into_iter()
                    .map(|(_, part)| part)
                    .collect();
                if regrouped.len() > 1 {
                    op.on_split(self);
                }
                for part in regrouped.into_iter().rev() {
                    queue.push_front(part);
                }
                continue;
            }
            let req = op.request(self.context(&region), &batch);
            match self.send_once(&region, req, bo)? {
                Attempt::Reply(resp) => {
                    if op.on_reply(self, &batch, resp, bo)? == Reply::Retry {
                        queue.push_front(batch);
                    }
                }
                Attempt::Retry => queue.push_front(batch),
            }
        }
        Ok(())
    }

    /// Runs `op` over each of `groups` at once, each with a fresh backoff of `budget`, so a
    /// transaction's regions are written concurrently (each region batch still waits for
    /// its own Raft round): the first group on the caller's thread, the others on the
    /// client's [`BatchPool`](super::batch_pool::BatchPool) (taken back by the caller when
    /// no worker started them). Returns the first error after every group finished.
    ///
    /// # Errors
    /// The first error of a group.
    pub(crate) fn run_groups_concurrently<B>(
        &self,
        op: &B,
        groups: Vec<Vec<B::Item>>,
        budget: Duration,
    ) -> Result<(), TxnError>
    where
        B: RegionBatch + Clone + Send + 'static,
        B::Item: Send + 'static,
    {
        let mut groups = groups.into_iter();
        let Some(first) = groups.next() else {
            return Ok(());
        };
        let (done, results) = crossbeam_channel::unbounded();
        let tasks: Vec<_> = groups
            .map(|group| {
                let mut op = op.clone();
                let done = done.clone();
                let task = Task::new(Box::new(move |core: &ClientCore| {
                    let mut bo = Backoff::with_budget(&core.config, budget);
                    let _ = done.send(core.run_batches(&mut op, group, &mut bo));
                }));
                self.pool.offer(Arc::clone(&task));
                task
            })
            .collect();
        // Only the tasks' clones are left: once they all ran (or panicked), `recv` ends.
        drop(done);
        let mut bo = Backoff::with_budget(&self.config, budget);
        let mine = self.run_batches(&mut op.clone(), first, &mut bo);
        for task in &tasks {
            task.run(self);
        }
        let mut outcome = mine;
        for _ in &tasks {
            let result = results.recv().unwrap_or_else(|_| {
                Err(TxnError::Protocol {
                    detail: "a region batch did not run to its end".to_string(),
                })
            });
            if outcome.is_ok() {
                outcome = result;
            }
        }
        outcome
    }

    /// `items` grouped by the region of their keys, in key order of the regions.
    ///
    /// # Errors
    /// As [`ClientCore::locate`].
    pub(crate) fn group_by_region<T>(
        &self,
        items: Vec<T>,
        key_of: fn(&T) -> &[u8],
        bo: &mut Backoff,
    ) -> Result<Vec<(CachedRegion, Vec<T>)>, TxnError> {
        group_by_region(items, key_of, |key| self.locate(key, bo))
    }

    fn send_once(
        &self,
        region: &CachedRegion,
        req: KvRequest,
        bo: &mut Backoff,
    ) -> Result<Attempt, TxnError> {
        let id = region.info.id;
        let Some(target) = region.target() else {
            self.cache.write().invalidate(id);
            bo.note(TxnError::Region(RegionError::RegionNotFound {
                region_id: id,
            }));
            bo.sleep()?;
            return Ok(Attempt::Retry);
        };
        let name = req.name();
        let _span =
            tracing::trace_span!("region_request", request = name, region = id, node = target)
                .entered();
        let service = match self.router.service(target) {
            Ok(s) => s,
            Err(e) => {
                // Not delivered: the node is known to be down.
                bump(&self.counters.region_error_retries);
                self.cache.write().switch_peer(id, target);
                bo.note(TxnError::Unavailable(e));
                bo.sleep()?;
                return Ok(Attempt::Retry);
            }
        };
        match service.call(req) {
            Ok(KvResponse::RegionError(e)) => {
                bump(&self.counters.region_error_retries);
                tracing::debug!(request = name, region = id, node = target, error = %e, "region error");
                self.on_region_error(id, target, e, bo)?;
                Ok(Attempt::Retry)
            }
            Ok(resp) => {
                if region.leader != Some(target) {
                    self.cache.write().update_leader(id, target);
                }
                Ok(Attempt::Reply(resp))
            }
            Err(ServiceError::Protocol { node, detail }) => {
                // Handed to the node's service, which may have run it before its answer
                // failed to decode or fit (over TCP: an undecodable or oversized answer, a
                // refusal without a request id). Not retried (the peer may speak another
                // protocol), but a write's caller must not take it as "did not run".
                bo.mark_outcome_unknown();
                Err(TxnError::Protocol {
                    detail: format!("node {node}: {detail}"),
                })
            }
            Err(e) => {
                // The request reached the node (or may have): it may have run.
                bump(&self.counters.region_error_retries);
                bo.mark_outcome_unknown();
                if matches!(e, ServiceError::Unavailable { .. }) {
                    self.cache.write().switch_peer(id, target);
                }
                bo.note(TxnError::Unavailable(e));
                bo.sleep()?;
                Ok(Attempt::Retry)
            }
        }
    }

    fn on_region_error(
        &self,
        id: u64,
        target: NodeId,
        e: RegionError,
        bo: &mut Backoff,
    ) -> Result<(), TxnError> {
        match &e {
            RegionError::NotLeader {
                leader: Some(l), ..
            } if *l != target => {
                self.cache.write().update_leader(id, *l);
                bo.note(TxnError::Region(e));
                bo.retry_now()
            }
            RegionError::NotLeader { .. } => {
                let mut cache = self.cache.write();
                if cache.switch_peer(id, target) {
                    // Every peer said "not me" without a hint: the membership may have
                    // changed; reload the region.
                    cache.invalidate(id);
                }
                drop(cache);
                bo.note(TxnError::Region(e));
                bo.sleep()
            }
            RegionError::EpochNotMatch { current, .. } => {
                let mut cache = self.cache.write();
                cache.invalidate(id);
                for info in current {
                    let leader = info.peers.contains(&target).then_some(target);
                    cache.insert(info.clone(), leader);
                }
                drop(cache);
                bo.note(TxnError::Region(e));
                bo.retry_now()
            }
            RegionError::KeyNotInRegion { .. } => {
                self.cache.write().invalidate(id);
                bo.note(TxnError::Region(e));
                bo.retry_now()
            }
            RegionError::RegionNotFound { .. } => {
                // This node holds no replica of the region (it missed the split or merge
                // that made it, and may never catch up while a peer leads): try the next
                // peer. Reloading from the meta group alone sent every retry back to the
                // first peer, the same node (the final read of
                // `workload_snapshot_isolation` failed for 30 s so). Reload once every
                // peer said so.
                let mut cache = self.cache.write();
                if cache.switch_peer(id, target) {
                    cache.invalidate(id);
                }
                drop(cache);
                bo.note(TxnError::Region(e));
                bo.sleep()
            }
            RegionError::ProposalFailed {
                outcome_unknown, ..
            } => {
                if *outcome_unknown {
                    bo.mark_outcome_unknown();
                }
                bo.note(TxnError::Region(e));
                bo.sleep()
            }
            RegionError::StaleCommand { .. } => {
                // The proposal was made in an older term: it may still be committed.
                bo.mark_outcome_unknown();
                bo.note(TxnError::Region(e));
                bo.sleep()
            }
            RegionError::NodeStopping { node, .. } => {
                if self.router.local_node() == Some(*node) {
                    // The node stops once its callers, this one included, have finished.
                    return Err(TxnError::Region(e));
                }
                // Its leadership ends with it: try the next peer, as after `NotLeader`
                // without a hint (a hint back to it is followed until it has stopped).
                self.cache.write().switch_peer(id, target);
                bo.note(TxnError::Region(e));
                bo.sleep()
            }
            _ => {
                bo.note(TxnError::Region(e));
                bo.sleep()
            }
        }
    }
}

/// The context of a request for `region`.
impl ClientCore {
    /// The context of a request to `region`: its id and epoch as cached, and this client's
    /// GC hold in force.
    pub(crate) fn context(&self, region: &CachedRegion) -> Context {
        Context {
            region_id: region.info.id,
            epoch: region.info.epoch,
            gc_hold_ts: self.claimed_gc_hold(),
        }
    }
}

/// `items` grouped by the region `locate` gives for their keys, in key order of the
/// regions; items keep their order within a group.
///
/// # Errors
/// The first error of `locate`.
pub(crate) fn group_by_region<T>(
    items: Vec<T>,
    key_of: fn(&T) -> &[u8],
    mut locate: impl FnMut(&[u8]) -> Result<CachedRegion, TxnError>,
) -> Result<Vec<(CachedRegion, Vec<T>)>, TxnError> {
    let mut groups: BTreeMap<Vec<u8>, (CachedRegion, Vec<T>)> = BTreeMap::new();
    for item in items {
        let region = locate(key_of(&item))?;
        groups
            .entry(region.info.start.clone())
            .or_insert_with(|| (region, Vec::new()))
            .1
            .push(item);
    }
    Ok(groups.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::region_cache::RegionCache;
    use crate::{RegionEpoch, RegionInfo};

    fn cache() -> RegionCache {
        let mut c = RegionCache::default();
        for (id, start, end) in [(2, &b""[..], &b"g"[..]), (3, b"g", b"p"), (4, b"p", b"")] {
            let info = RegionInfo {
                id,
                start: start.to_vec(),
                end: end.to_vec(),
                epoch: RegionEpoch::default(),
                peers: vec![1, 2, 3],
            };
            c.insert(info, None);
        }
        c
    }

    /// Keys only, for `bounded_batches`.
    struct Keys;

    impl RegionBatch for Keys {
        type Item = Vec<u8>;

        fn key_of(item: &Self::Item) -> &[u8] {
            item
        }

        fn request(&self, _ctx: Context, _batch: &[Self::Item]) -> KvRequest {
            KvRequest::GcHolds
        }

        fn on_reply(
            &mut self,
            _core: &ClientCore,
            _batch: &[Self::Item],
            _reply: KvResponse,
            _bo: &mut Backoff,
        ) -> Result<Reply, TxnError> {
            Ok(Reply::Done)
        }
    }

    #[test]
    fn region_batches_are_cut_by_items_and_bytes_in_order() {
        let small: Vec<Vec<u8>> = (0..MAX_BATCH_ITEMS * 2 + 3)
            .map(|i| (i as u32).to_be_bytes().to_vec())
            .collect();
        let cut = bounded_batches(&Keys, small.clone());
        assert_eq!(
            cut.iter().map(Vec::len).collect::<Vec<_>>(),
            [MAX_BATCH_ITEMS, MAX_BATCH_ITEMS, 3]
        );
        assert_eq!(cut.concat(), small);
        // By bytes: three keys of 3 MiB fit two to a batch (8 MiB); one larger than the
        // bound goes alone.
        let big = |n: usize, b: u8| vec![b; n];
        let cut = bounded_batches(
            &Keys,
            vec![
                big(3 << 20, 1),
                big(3 << 20, 2),
                big(3 << 20, 3),
                big(9 << 20, 4),
                big(1, 5),
            ],
        );
        assert_eq!(cut.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1, 1, 1]);
        assert_eq!(
            bounded_batches(&Keys, Vec::new()),
            vec![Vec::<Vec<u8>>::new()]
        );
    }

    #[test]
    fn keys_group_by_region_in_region_order() {
        let c = cache();
        let keys: Vec<Vec<u8>> = ["z", "a", "h", "b", "q", "g"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        let groups = group_by_region(
            keys,
            |k| k.as_slice(),
            |key| c.locate(key).cloned().ok_or(TxnError::TxnFinished),
        )
        .expect("all keys covered");
        let got: Vec<(u64, Vec<&str>)> = groups
            .iter()
            .map(|(r, ks)| {
                (
                    r.info.id,
                    ks.iter()
                        .map(|k| std::str::from_utf8(k).unwrap_or("?"))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (2, vec!["a", "b"]),
                (3, vec!["h", "g"]),
                (4, vec!["z", "q"])
            ]
        );
    }

    #[test]
    fn grouping_stops_at_the_first_locate_error() {
        let c = {
            let mut c = cache();
            c.invalidate(3);
            c
        };
        let keys = vec![b"a".to_vec(), b"h".to_vec()];
        let got = group_by_region(
            keys,
            |k| k.as_slice(),
            |key| c.locate(key).cloned().ok_or(TxnError::TxnFinished),
        );
        assert_eq!(got.err(), Some(TxnError::TxnFinished));
    }
}
