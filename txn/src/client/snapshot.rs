//! Snapshot reads at a timestamp: point gets, batch gets and scans across regions, resolving
//! the locks they meet.

use super::backoff::Backoff;
use super::core::ClientCore;
use super::dispatch::{RegionBatch, Reply};
use super::error::TxnError;
use crate::stream::{LANES_PREFIX, RESERVED_END, is_reserved_key};
use crate::{Context, KeyError, KvRequest, KvResponse, MvccError};

/// A key and its value, as reads return them.
pub type KvPair = (Vec<u8>, Vec<u8>);

impl ClientCore {
    /// The committed value of `key` visible at `ts`.
    ///
    /// # Errors
    /// [`TxnError::KeyIsLocked`] when a live lock blocks the read for the whole budget;
    /// region errors after retries.
    pub(crate) fn snapshot_get(&self, key: &[u8], ts: u64) -> Result<Option<Vec<u8>>, TxnError> {
        self.point_read(key, ts, |ctx, key, version, bypass_locks| KvRequest::Get {
            ctx,
            key,
            version,
            bypass_locks,
        })
    }

    /// [`ClientCore::snapshot_get`] served below the GC life time (`KvRequest::GetHeld`):
    /// only for a caller whose GC hold has covered `ts` since before it was committed.
    ///
    /// # Errors
    /// As [`ClientCore::snapshot_get`].
    pub(crate) fn snapshot_get_held(
        &self,
        key: &[u8],
        ts: u64,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        self.point_read(key, ts, |ctx, key, version, bypass_locks| {
            KvRequest::GetHeld {
                ctx,
                key,
                version,
                bypass_locks,
            }
        })
    }

    /// A point read built by `request` (context, key, version, locks to bypass), resolving
    /// the locks it meets.
    fn point_read(
        &self,
        key: &[u8],
        ts: u64,
        request: fn(Context, Vec<u8>, u64, Vec<u64>) -> KvRequest,
    ) -> Result<Option<Vec<u8>>, TxnError> {
        let _span = tracing::debug_span!("snapshot_get", ts).entered();
        let mut bo = Backoff::new(&self.config);
        let mut bypass = Vec::new();
        loop {
            let reply = self.send_key(key, &mut bo, |ctx| {
                request(ctx, key.to_vec(), ts, bypass.clone())
            })?;
            match reply {
                KvResponse::Get { value } => return Ok(value),
                KvResponse::KeyError(KeyError::Mvcc(MvccError::KeyIsLocked(lock))) => {
                    self.handle_read_lock(&lock, ts, &mut bypass, &mut bo)?;
                }
                KvResponse::KeyError(e) => return Err(e.into()),
                other => return Err(TxnError::unexpected("get", &other)),
            }
        }
    }

    /// The committed values of `keys` visible at `ts`, in key order (absent keys omitted).
    ///
    /// # Errors
    /// As [`ClientCore::snapshot_get`].
    pub(crate) fn snapshot_batch_get(
        &self,
        keys: Vec<Vec<u8>>,
        ts: u64,
    ) -> Result<Vec<KvPair>, TxnError> {
        let _span = tracing::debug_span!("snapshot_batch_get", ts, keys = keys.len()).entered();
        let mut bo = Backoff::new(&self.config);
        let mut op = BatchGet {
            ts,
            bypass: Vec::new(),
            pairs: Vec::new(),
        };
        self.run_batches(&mut op, keys, &mut bo)?;
        let mut pairs = op.pairs;
        pairs.sort();
        pairs.dedup_by(|a, b| a.0 == b.0);
        Ok(pairs)
    }

    /// At most `limit` committed pairs of `[start, end)` visible at `ts`, in key order, region
    /// by region. Keys reserved for the stream (records of every lane, their payloads and
    /// the lane registry: `stream/keys.rs`) are never returned.
    ///
    /// # Errors
    /// As [`ClientCore::snapshot_get`].
    pub(crate) fn snapshot_scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        ts: u64,
    ) -> Result<Vec<KvPair>, TxnError> {
        self.scan_at(start, end, limit, ts, true)
    }

    /// [`ClientCore::snapshot_scan`] of keys reserved for the stream (the lane registry):
    /// nothing is skipped.
    ///
    /// # Errors
    /// As [`ClientCore::snapshot_get`].
    pub(crate) fn reserved_scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
        ts: u64,
    ) -> Result<Vec<KvPair>, TxnError> {
        self.scan_at(start, Some(end), limit, ts, false)
    }

    /// The scan of [`ClientCore::snapshot_scan`]; with `user`, stepping over the stream's
    /// reserved keys.
    fn scan_at(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        ts: u64,
        user: bool,
    ) -> Result<Vec<KvPair>, TxnError> {
        let _span = tracing::debug_span!("snapshot_scan", ts, limit).entered();
        let mut bo = Backoff::new(&self.config);
        let mut bypass = Vec::new();
        let mut out: Vec<KvPair> = Vec::new();
        let mut cur = start.to_vec();
        while out.len() < limit && end.is_none_or(|e| cur.as_slice() < e) {
            // The empty lane's reserved range is not user data: the scan steps over it.
            if user && cur.as_slice() >= LANES_PREFIX && cur.as_slice() < RESERVED_END {
                cur = RESERVED_END.to_vec();
                continue;
            }
            let region = self.locate(&cur, &mut bo)?;
            let region_end = region.info.end_key();
            let mut scan_end = match (end, region_end) {
                (Some(e), Some(r)) => Some(e.min(r)),
                (e, r) => e.or(r),
            };
            // Where the next request starts (`None`: the key space is done).
            let mut next = region_end.map(<[u8]>::to_vec);
            if user && cur.as_slice() < LANES_PREFIX && scan_end.is_none_or(|e| e > LANES_PREFIX) {
                scan_end = Some(LANES_PREFIX);
                next = Some(RESERVED_END.to_vec());
            }
            let want = limit - out.len();
            let req = KvRequest::Scan {
                ctx: self.context(&region),
                start: cur.clone(),
                end: scan_end.map(<[u8]>::to_vec),
                limit: want,
                version: ts,
                bypass_locks: bypass.clone(),
            };
            match self.send_region(&region, req, &mut bo)? {
                None => {}
                Some(KvResponse::Pairs { pairs }) => {
                    // A full answer may stop short of the region's end; a table lane's
                    // records (inside the table's range) are dropped from it, so the next
                    // request starts right after its last key.
                    let resume = (pairs.len() >= want)
                        .then(|| pairs.last().map(|(k, _)| [k.as_slice(), &[0]].concat()))
                        .flatten();
                    out.extend(
                        pairs
                            .into_iter()
                            .filter(|(k, _)| !(user && is_reserved_key(k))),
                    );
                    match (resume, next) {
                        (Some(r), _) => cur = r,
                        (None, Some(n)) => cur = n,
                        (None, None) => break,
                    }
                }
                Some(KvResponse::KeyError(KeyError::Mvcc(MvccError::KeyIsLocked(lock)))) => {
                    self.handle_read_lock(&lock, ts, &mut bypass, &mut bo)?;
                }
                Some(KvResponse::KeyError(e)) => return Err(e.into()),
                Some(other) => return Err(TxnError::unexpected("scan", &other)),
            }
        }
        out.truncate(limit);
        Ok(out)
    }
}

/// `BatchGet` in region batches, collecting the pairs found.
struct BatchGet {
    ts: u64,
    bypass: Vec<u64>,
    pairs: Vec<KvPair>,
}

impl RegionBatch for BatchGet {
    type Item = Vec<u8>;

    fn key_of(item: &Vec<u8>) -> &[u8] {
        item
    }

    fn request(&self, ctx: Context, batch: &[Vec<u8>]) -> KvRequest {
        KvRequest::BatchGet {
            ctx,
            keys: batch.to_vec(),
            version: self.ts,
            bypass_locks: self.bypass.clone(),
        }
    }

    fn on_reply(
        &mut self,
        core: &ClientCore,
        _batch: &[Vec<u8>],
        reply: KvResponse,
        bo: &mut Backoff,
    ) -> Result<Reply, TxnError> {
        match reply {
            KvResponse::Pairs { pairs } => {
                self.pairs.extend(pairs);
                Ok(Reply::Done)
            }
            KvResponse::KeyError(KeyError::Mvcc(MvccError::KeyIsLocked(lock))) => {
                core.handle_read_lock(&lock, self.ts, &mut self.bypass, bo)?;
                Ok(Reply::Retry)
            }
            KvResponse::KeyError(e) => Err(e.into()),
            other => Err(TxnError::unexpected("batch_get", &other)),
        }
    }
}
