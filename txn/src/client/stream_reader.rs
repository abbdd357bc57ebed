//! The reading side of the replication stream: [`TxnClient::stream_resolved_ts`] (how far
//! the stream is complete) and [`TxnClient::stream_scan`] (the committed records up to
//! there, in commit_ts order).
//!
//! # Why the watermark is exact
//!
//! `stream_resolved_ts` takes `T0` from the oracle first, then scans the record locks of
//! every lane (`stream/keys.rs`) the lane registry lists at `T0`. A record (of transaction `s`, committing at `c`) that is
//! not committed when its key's region is scanned is in one of two states:
//! - its lock is there: the watermark is at most its `record_ts` `r`, and `c > r`: the
//!   coordinator takes `r` from the oracle right before the record's prewrite and `c` only
//!   after that prewrite returned (a resolver that commits the record uses the primary's
//!   commit_ts, the same `c`). Locks of the range that are not record keys (an external
//!   record's payload) hold the watermark at their start_ts `s`, and `c > s`;
//! - its lock is not there yet: the coordinator takes `c` only after the record's prewrite
//!   returned, which is after the scan of that region, which is after `T0` was taken, so
//!   `c > T0` (the oracle's timestamps strictly increase).
//!
//! (A rolled-back record never commits, and a lock found and settled here is committed or
//! rolled back before the call returns.) So with `resolved = min(T0, smallest record_ts
//! (start_ts for a payload lock) of a live lock)`, every record with `commit_ts <=
//! resolved` is committed when the call returns, and none can commit later: `resolved`
//! itself is safe (not `resolved - 1`), since the live lock's own commit is strictly above
//! its record_ts (or start_ts) and every unseen one strictly above `T0`. Holding at
//! record_ts rather than start_ts keeps the watermark a commit's latency behind the
//! oracle, not a whole transaction's duration.
//!
//! # Why the lanes listed are enough
//!
//! A coordinator commits the registration of a record's lane before the record, and gives
//! the record a `record_ts` at or above the registration's commit_ts, never a timestamp the
//! transaction held from before it (`ClientCore::ensure_stream_lane`), so a record in a
//! lane the registry does not list at `T0` has `record_ts` at or above that registration's
//! commit_ts, which is above `T0` (a registration committing at or below `T0` is either
//! visible to the registry read at `T0`, or holds a lock that read waits for; a later
//! one-phase commit lands above the `max_ts` the read raised): such a record commits above
//! `T0`, as an unseen lock's does.
//! [`TxnClient::stream_scan`] lists the registry at `upto_commit_ts` for the same reason:
//! every record committed at or below it is in a lane listed there.
//!
//! # Why the next scan can start at `lower_record_ts`
//!
//! A coordinator rolls back (before its commit point) a transaction whose commit_ts is more
//! than `max_record_skew` after its `record_ts` (`stream_commit.rs`). Take a record still
//! to deliver, `c > resolved`. If its lock was seen live, `record_ts >= resolved`.
//! Otherwise `record_ts >= c - skew > resolved - skew`. So every such record has
//! `record_ts >= resolved - skew` (physical milliseconds, logical part 0), and a lane's keys
//! past those of records taken at `resolved - skew` (a lane keeps its newest records first:
//! `!record_ts` in the key, `stream/keys.rs`) hold only records already delivered. (The
//! bound is `resolved - skew`, not `T0 - skew`: a record that committed before the lock
//! scan, with `resolved < c < T0`, may have `record_ts` down to `c - skew`.)
//!
//! Every coordinator and reader must use the same `max_record_skew`.
//!
//! # Why the lock scan can start at the previous `lower_record_ts`
//!
//! The same argument bounds the locks: after a watermark `W` of this client returned, a
//! record that still commits has `commit_ts > W.resolved` and so `record_ts >
//! W.lower_record_ts`; a record lock below that can only be rolled back, never committed
//! (its coordinator's skew check fails, and no resolver commits a record whose primary did
//! not commit). So a later call scans a lane's locks only down to `W.lower_record_ts` (from
//! the lane's first key, its newest records, to the keys of records taken at that bound)
//! rather than the whole lane. That matters: every record lock leaves a deletion marker in
//! the lock column family when it is committed, and a scan of the whole lane walked every marker since the
//! engine last flushed (on an idle 3-node cluster after a minute of `oltp_write_only`, a
//! node spent about a quarter of a core on it). A one-phase record commits within
//! `ONE_PC_MAX_DRIFT_MS` of its record_ts, well inside the skew, so skipping the regions
//! past the bound never skips one in flight. A call at least [`FULL_LOCK_SCAN_EVERY_MS`]
//! after the last such one (by `T0`) scans the whole lane all the same, to settle (roll
//! back) locks left below the bound by coordinators that died.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::backoff::Backoff;
use super::error::TxnError;
use super::resolver::{CleanScope, Resolution};
use super::two_pc::CLEANUP_BUDGET;
use super::txn_client::TxnClient;
use crate::stream::{
    Assembled, ChunkAssembler, LANES_PREFIX, STREAM_PREFIX, StreamTxn, StreamWatermark,
    decode_stream_record, is_table_lane, payload_key, record_key_parts, record_ts_range,
};
use crate::{KeyError, KvRequest, KvResponse, LockInfo, compose_ts, physical_ms};

/// A record lock taken this long ago (milliseconds, by `record_ts`) has its primary's
/// status checked even within its TTL: a live coordinator commits its record within a few
/// milliseconds of `record_ts` (and never past the skew bound), so one still locked this
/// long after is most likely an abandoned commit.
const SETTLE_CHECK_AFTER_MS: u64 = 1000;

/// How many times one lock scan waits (1 ms each) for one-phase commits in flight.
const IN_FLIGHT_WAITS: u32 = 2000;

/// A watermark call this long (milliseconds, by `T0`) after the last one that did scans the
/// record locks of the whole lane rather than down to the previous lower bound (module
/// docs). By time, not by a count of calls, so it does not depend on how often the caller
/// asks (`surgedb`'s follower every 200 ms by default).
const FULL_LOCK_SCAN_EVERY_MS: u64 = 3000;

/// Puts per `ScanWrites` answer.
const SCAN_WRITES_LIMIT: usize = 1024;
/// Bytes of values per `ScanWrites` answer (a few record chunks).
const SCAN_WRITES_BYTES: usize = 8 << 20;

/// The most lanes a reader lists (one per table that ever had a record).
const MAX_LANES: usize = 1 << 20;

impl TxnClient {
    /// How far the replication stream is complete: every transaction that commits a stream
    /// record with `commit_ts <= resolved_ts` has committed it, so
    /// [`TxnClient::stream_scan`] up to `resolved_ts` returns it, and no record with such a
    /// commit_ts appears later (the module docs of `client/stream_reader.rs` give the
    /// argument, and why `resolved_ts` itself, not one below, is safe).
    ///
    /// Takes `T0` from the oracle, then lists the record locks of every lane registered at
    /// `T0` (under [`crate::STREAM_PREFIX`], after the lane; leaders only, in-memory and replicated locks; those
    /// taken at or after the previous call's `lower_record_ts`, and the whole lane every few seconds). A lock whose
    /// TTL ran out by `T0`, or whose record was taken more than a second before `T0`, is
    /// settled from its primary's status, as any reader does (the primary committed: the
    /// record is committed; the primary's TTL ran out: rolled back), so a dead coordinator
    /// holds the watermark up for about a second if it died after its commit point, and
    /// about its lock TTL if before; a live or unsettled record lock holds it at its
    /// `record_ts` (a payload lock at its `start_ts`).
    /// `resolved_ts = min(T0, smallest such timestamp of a lock still held)`, and
    /// [`StreamWatermark::lower_record_ts`] is that minus
    /// [`crate::StreamOptions::max_record_skew`] (physical milliseconds): where the next
    /// scan's keys may start.
    ///
    /// Idle coordinators hold nothing: with no record lock, the watermark is `T0`. The
    /// watermarks one client returns never go back: each is the largest computed so far
    /// (a record lock prewritten after a call may start below that call's watermark, and
    /// commits above its `T0`). The lower bound is this call's own, which holds for every
    /// record above either watermark.
    ///
    /// # Errors
    /// The oracle's or a region's error after retries. A lock that could not be settled is
    /// not an error: it holds the watermark.
    pub fn stream_resolved_ts(&self) -> Result<StreamWatermark, TxnError> {
        let core = self.core();
        let t0 = core.get_ts()?;
        let full = claim_full_scan(&core.stream_full_scan_ms, physical_ms(t0));
        let floor = core.stream_lock_floor.load(Ordering::Acquire);
        let mut locks = Vec::new();
        for lane in self.stream_lanes_at(t0)? {
            let from = if full { 0 } else { floor };
            let (start, end) = record_ts_range(&lane, from, u64::MAX);
            locks.extend(self.stream_locks(t0, start, end)?);
        }
        // One status check per transaction, not per lock: a transaction's locks in the
        // range share its primary and its fate.
        let mut by_txn: BTreeMap<u64, Vec<&LockInfo>> = BTreeMap::new();
        for lock in &locks {
            by_txn.entry(lock.lock_ts).or_default().push(lock);
        }
        let mut held_start = t0;
        let mut held_record = u64::MAX;
        let mut settled = 0;
        for lock in by_txn.into_values().flat_map(|txn_locks| {
            match self.settle_stream_locks(&txn_locks, t0) {
                true => {
                    settled += txn_locks.len();
                    Vec::new()
                }
                false => txn_locks,
            }
        }) {
            // A record key's lock holds the watermark at its record_ts, not its start_ts:
            // the coordinator takes commit_ts after the record's prewrite returned, so
            // after record_ts (see the module docs). Any other lock of the range (an
            // external record's payload) holds it at its start_ts.
            match record_key_parts(&lock.key) {
                Ok((record_ts, _, _)) => {
                    held_start = held_start.min(record_ts);
                    held_record = held_record.min(record_ts);
                }
                Err(_) => held_start = held_start.min(lock.lock_ts),
            }
        }
        let skew_ms = core.config.stream.max_skew_ms();
        let lower = compose_ts(physical_ms(held_start).saturating_sub(skew_ms), 0);
        // A lock prewritten after an earlier call may have a start_ts below that call's
        // watermark (its commit_ts is above that call's T0, so it is no exception to that
        // watermark): this one may come out lower, and the larger stands.
        let resolved = core
            .stream_resolved
            .fetch_max(held_start, Ordering::AcqRel)
            .max(held_start);
        let lower_record_ts = lower.min(held_record);
        // Valid for every call that starts after this one returns (module docs).
        core.stream_lock_floor
            .fetch_max(lower_record_ts, Ordering::AcqRel);
        Ok(StreamWatermark {
            resolved_ts: resolved,
            lower_record_ts,
            oracle_ts: t0,
            locks_seen: locks.len(),
            locks_settled: settled,
        })
    }

    /// The stream settings in force for the cluster: the first `settings` any client
    /// claimed (kept in the store beside the lane registry), which this call claims when
    /// none are there yet. A reader that writes the stream out (each node's copy must be
    /// the same bytes) compares them with its own and refuses to go on when they differ.
    /// The bytes are the caller's; this crate keeps them after a mark of its record key
    /// layout, which it checks.
    ///
    /// # Errors
    /// [`TxnError::StreamLayout`] when the store's records were laid out by another build
    /// (an earlier one kept a lane's records oldest first); the store's errors after a few
    /// attempts.
    pub fn stream_claim_settings(&self, settings: &[u8]) -> Result<Vec<u8>, TxnError> {
        let marked = [crate::stream::LAYOUT_MARK, settings].concat();
        let (stored, _) = self
            .core()
            .put_reserved_if_absent(crate::stream::SETTINGS_KEY, &marked)?;
        match stored.strip_prefix(crate::stream::LAYOUT_MARK) {
            Some(theirs) => Ok(theirs.to_vec()),
            None => Err(TxnError::StreamLayout {
                found: crate::stream::layout_of_settings(&stored),
                expected: crate::stream::KEY_LAYOUT,
            }),
        }
    }

    /// Every committed stream record with `commit_ts` in `(after_commit_ts, upto_commit_ts]`
    /// whose `record_ts >= lower_record_ts`, reassembled from its chunks and decoded, in
    /// commit_ts order, ties by start_ts. (Two one-phase commits in one region may share a
    /// commit_ts: the region picks it, and only for transactions whose keys do not overlap.
    /// Both are at or below a watermark or both above it, so a reader gets both at once.)
    ///
    /// Give `upto_commit_ts` a [`StreamWatermark::resolved_ts`] and `lower_record_ts` the
    /// [`StreamWatermark::lower_record_ts`] of the watermark that delivered
    /// `after_commit_ts` (the previous one; 0 means from the beginning, as when a node
    /// rebuilds its stream from scratch): then the answer is complete and final.
    ///
    /// More generally, any `lower_record_ts` at or below `after_commit_ts` minus
    /// [`crate::StreamOptions::max_record_skew`] (physical milliseconds, logical part 0) is
    /// complete, since every committed record has `commit_ts - record_ts` within the skew:
    /// a node rebuilding its stream can read the history in windows `(a, b]` with that
    /// bound for each, rather than from key 0 every time.
    ///
    /// # Errors
    /// Region errors after retries; [`TxnError::StreamRecord`] for a record whose chunks
    /// disagree, are missing (only if `upto_commit_ts` was not a watermark) or do not decode.
    pub fn stream_scan(
        &self,
        after_commit_ts: u64,
        upto_commit_ts: u64,
        lower_record_ts: u64,
    ) -> Result<Vec<StreamTxn>, TxnError> {
        let core = self.core();
        let _span = tracing::debug_span!("stream_scan", after_commit_ts, upto_commit_ts).entered();
        let mut records: BTreeMap<(u64, u64), (u64, ChunkAssembler)> = BTreeMap::new();
        if upto_commit_ts <= after_commit_ts {
            return Ok(Vec::new());
        }
        let mut bo = Backoff::new(&core.config);
        for lane in self.stream_lanes_at(upto_commit_ts)? {
            self.scan_lane_writes(
                &lane,
                (after_commit_ts, upto_commit_ts, lower_record_ts),
                &mut records,
                &mut bo,
            )?;
        }
        let mut out = Vec::with_capacity(records.len());
        for ((record_ts, start_ts), (commit_ts, chunks)) in records {
            let bad = |detail: String| TxnError::StreamRecord {
                start_ts,
                record_ts,
                detail,
            };
            let bytes = match chunks.finish().map_err(|e| bad(e.to_string()))? {
                Assembled::Record(bytes) => bytes,
                Assembled::External { chunks, bytes } => self
                    .stream_payload(start_ts, commit_ts, chunks, bytes)
                    .map_err(|e| match e {
                        TxnError::StreamRecord { detail, .. } => bad(detail),
                        other => other,
                    })?,
            };
            let groups = decode_stream_record(&bytes).map_err(|e| bad(e.to_string()))?;
            out.push(StreamTxn {
                commit_ts,
                start_ts,
                record_ts,
                groups,
            });
        }
        out.sort_by_key(|t| (t.commit_ts, t.start_ts));
        Ok(out)
    }

    /// The committed record chunks of `lane` with commit_ts in `(window.0, window.1]` and
    /// `record_ts >= window.2`, added to `records` (by `(record_ts, start_ts)`).
    fn scan_lane_writes(
        &self,
        lane: &[u8],
        window: (u64, u64, u64),
        records: &mut BTreeMap<(u64, u64), (u64, ChunkAssembler)>,
        bo: &mut Backoff,
    ) -> Result<(), TxnError> {
        let core = self.core();
        let (after_commit_ts, upto_commit_ts, lower_record_ts) = window;
        let (mut cur, end) = record_ts_range(lane, lower_record_ts, u64::MAX);
        while cur < end {
            let region = core.locate(&cur, bo)?;
            let scan_end = match region.info.end_key() {
                Some(r) if r < end.as_slice() => r.to_vec(),
                _ => end.clone(),
            };
            let req = KvRequest::ScanWrites {
                ctx: core.context(&region),
                start: cur.clone(),
                end: Some(scan_end.clone()),
                after_commit_ts,
                upto_commit_ts,
                limit: SCAN_WRITES_LIMIT,
                limit_bytes: SCAN_WRITES_BYTES,
            };
            let writes = match core.send_region(&region, req, bo)? {
                None => continue,
                Some(KvResponse::Writes { writes }) => writes,
                Some(KvResponse::KeyError(e)) => return Err(e.into()),
                Some(other) => return Err(TxnError::unexpected("scan_writes", &other)),
            };
            for put in writes.puts {
                let (record_ts, start_ts, chunk_no) =
                    record_key_parts(&put.key).map_err(|e| TxnError::StreamRecord {
                        start_ts: put.start_ts,
                        record_ts: 0,
                        detail: e.to_string(),
                    })?;
                let bad = |detail: String| TxnError::StreamRecord {
                    start_ts,
                    record_ts,
                    detail,
                };
                let (commit_ts, chunks) = records
                    .entry((record_ts, start_ts))
                    .or_insert_with(|| (put.commit_ts, ChunkAssembler::default()));
                if *commit_ts != put.commit_ts || put.start_ts != start_ts {
                    return Err(bad(format!(
                        "chunk {chunk_no} committed at {} by txn {}, chunk seen before at {commit_ts}",
                        put.commit_ts, put.start_ts
                    )));
                }
                chunks
                    .add(chunk_no, put.value)
                    .map_err(|e| bad(e.to_string()))?;
            }
            cur = match writes.resume_key {
                Some(k) => k,
                None => scan_end,
            };
        }
        Ok(())
    }

    /// Every lane that may hold a record committed at or below `ts`: the empty lane and
    /// those registered by a transaction visible at `ts` (a record's `record_ts`, and so
    /// its commit_ts, is at or above its lane's registration: `stream/keys.rs`).
    ///
    /// # Errors
    /// The registry read's errors after retries.
    pub(super) fn stream_lanes_at(&self, ts: u64) -> Result<Vec<Vec<u8>>, TxnError> {
        // A list read at or above `ts` (the watermark's own, when a scan follows it up to
        // that watermark) holds every lane needed at `ts`; a lane more is only a scan more.
        {
            let read = self.core().stream_lanes_read.lock();
            if read.0 >= ts && !read.1.is_empty() {
                return Ok(read.1.clone());
            }
        }
        let registered = self
            .core()
            .reserved_scan(LANES_PREFIX, STREAM_PREFIX, MAX_LANES, ts)?;
        let mut lanes = vec![Vec::new()];
        lanes.extend(
            registered
                .into_iter()
                .filter_map(|(k, _)| k.strip_prefix(LANES_PREFIX).map(<[u8]>::to_vec))
                .filter(|lane| is_table_lane(lane)),
        );
        let mut read = self.core().stream_lanes_read.lock();
        if ts >= read.0 {
            *read = (ts, lanes.clone());
        }
        Ok(lanes)
    }

    /// The encoded record of transaction `start_ts` stored external in `chunks` payload
    /// chunks of `bytes` bytes, read at its `commit_ts`. The record key is committed, so the
    /// payload is too: a payload lock still there (its coordinator died before committing
    /// its secondaries) is committed from the primary's record by the snapshot read.
    ///
    /// # Errors
    /// Read errors; [`TxnError::StreamRecord`] for missing or inconsistent chunks.
    fn stream_payload(
        &self,
        start_ts: u64,
        commit_ts: u64,
        chunks: u32,
        bytes: u64,
    ) -> Result<Vec<u8>, TxnError> {
        let bad = |detail: String| TxnError::StreamRecord {
            start_ts,
            record_ts: 0,
            detail,
        };
        // A few chunks per request: one request for a whole payload answers with all of it
        // at once, and a node's answer is refused past the transport's frame limit (64 MiB),
        // so a 64 MiB transaction's record could never be read back.
        //
        // Each answer's values are moved into the assembler, never copied, and the answer is
        // dropped before the next request: the payload is held once (as chunks) until
        // `finish` builds the record, which frees each chunk as it copies it.
        let mut assembler = ChunkAssembler::default();
        let per_request = super::stream_commit::RECORD_CHUNKS_PER_REQUEST as u32;
        let mut first = 0u32;
        while first < chunks {
            let last = first.saturating_add(per_request).min(chunks);
            let keys: Vec<Vec<u8>> = (first..last).map(|i| payload_key(start_ts, i)).collect();
            let mut pairs = self.core().snapshot_batch_get(keys.clone(), commit_ts)?;
            // Sorted by key already (`snapshot_batch_get`); sorting again keeps the binary
            // search below right whatever that function promises.
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            for (i, key) in (first..last).zip(&keys) {
                let value = pairs
                    .binary_search_by(|(k, _)| k.as_slice().cmp(key))
                    .ok()
                    .and_then(|at| pairs.get_mut(at))
                    // Taken, not cloned: each key is asked for once, and the pair keeps an
                    // empty value until the answer is dropped.
                    .map(|(_, v)| std::mem::take(v))
                    .ok_or_else(|| bad(format!("payload chunk {i} of {chunks} missing")))?;
                assembler
                    .add(i, value)
                    .map_err(|e| bad(format!("payload: {e}")))?;
            }
            first = last;
        }
        match assembler
            .finish()
            .map_err(|e| bad(format!("payload: {e}")))?
        {
            Assembled::Record(record) if record.len() as u64 == bytes => Ok(record),
            Assembled::Record(record) => Err(bad(format!(
                "payload of {} bytes, the record key says {bytes}",
                record.len()
            ))),
            Assembled::External { .. } => Err(bad("payload chunk is an external value".into())),
        }
    }

    /// The record locks with `start_ts <= max_ts` of every region in `[from, end)` (one
    /// lane's records; the module docs say why a scan may end before the lane's last key).
    fn stream_locks(
        &self,
        max_ts: u64,
        from: Vec<u8>,
        end: Vec<u8>,
    ) -> Result<Vec<LockInfo>, TxnError> {
        let core = self.core();
        let mut bo = Backoff::new(&core.config);
        let mut out = Vec::new();
        let mut cur = from;
        let mut in_flight_waits = 0u32;
        while cur < end {
            let region = core.locate(&cur, &mut bo)?;
            let scan_end = match region.info.end_key() {
                Some(r) if r < end.as_slice() => r.to_vec(),
                _ => end.clone(),
            };
            let req = KvRequest::ScanLock {
                ctx: core.context(&region),
                max_ts,
                start: cur.clone(),
                end: Some(scan_end.clone()),
                limit: 0,
            };
            match core.send_region(&region, req, &mut bo)? {
                None => {}
                Some(KvResponse::Locks { locks }) => {
                    out.extend(locks);
                    cur = scan_end;
                }
                // A one-phase commit of a record in flight at or below `max_ts` (the scan
                // raised the region's max_ts first, so later ones land above it): it applies
                // within a Raft round; scan the region again.
                Some(KvResponse::KeyError(KeyError::Mvcc(crate::MvccError::KeyIsLocked(_))))
                    if in_flight_waits < IN_FLIGHT_WAITS =>
                {
                    in_flight_waits += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Some(KvResponse::KeyError(KeyError::Mvcc(e))) => return Err(e.into()),
                Some(KvResponse::KeyError(e)) => return Err(e.into()),
                Some(other) => return Err(TxnError::unexpected("scan_lock", &other)),
            }
        }
        Ok(out)
    }

    /// Settles one transaction's `locks` (of this scan) from its primary's status (as a
    /// writer, so nothing of the holder is pushed) if a lock's TTL ran out by `now`
    /// (committed, or rolled back), or if its record was taken more than
    /// [`SETTLE_CHECK_AFTER_MS`] before `now` (committed if the primary is: a coordinator
    /// that died after its commit point holds the stream about that long, not a whole TTL).
    /// Only these keys are cleaned, not the transaction's other locks in their regions
    /// ([`CleanScope::Keys`]). Whether the locks are gone; younger locks, a holder that is
    /// alive, or locks that could not be settled within the cleanup budget stay (and hold
    /// the watermark).
    fn settle_stream_locks(&self, locks: &[&LockInfo], now: u64) -> bool {
        let due = |lock: &LockInfo| {
            let expired = physical_ms(now) >= physical_ms(lock.lock_ts).saturating_add(lock.ttl);
            let old = record_key_parts(&lock.key).is_ok_and(|(record_ts, _, _)| {
                physical_ms(now).saturating_sub(physical_ms(record_ts)) >= SETTLE_CHECK_AFTER_MS
            });
            expired || old
        };
        // The record key's lock speaks for the transaction where there is one.
        let Some(asked) = locks
            .iter()
            .find(|l| record_key_parts(&l.key).is_ok())
            .or(locks.first())
        else {
            return true;
        };
        if !locks.iter().any(|l| due(l)) {
            return false;
        }
        let keys: Vec<Vec<u8>> = locks.iter().map(|l| l.key.clone()).collect();
        let core = self.core();
        let mut bo = Backoff::with_budget(&core.config, CLEANUP_BUDGET);
        match core.resolve_lock_in(asked, 0, CleanScope::Keys(&keys), &mut bo) {
            Ok(Resolution::Resolved) => true,
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(lock_ts = asked.lock_ts, error = %e, "stream record lock not settled");
                false
            }
        }
    }
}

/// Whether a watermark call whose `T0` is at `now_ms` (physical) scans every lane's locks
/// from the start: the first call (`last_full_ms` starts at 0) and then one at least
/// [`FULL_LOCK_SCAN_EVERY_MS`] after the last that did. Of concurrent callers in one such
/// window only one claims it (the others scan from the floor as usual).
fn claim_full_scan(last_full_ms: &AtomicU64, now_ms: u64) -> bool {
    let last = last_full_ms.load(Ordering::Acquire);
    now_ms >= last.saturating_add(FULL_LOCK_SCAN_EVERY_MS)
        && last_full_ms
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_lock_scan_comes_first_then_once_per_interval() {
        let last = AtomicU64::new(0);
        let t = 1_700_000_000_000u64;
        assert!(claim_full_scan(&last, t), "the first call scans in full");
        assert!(
            !claim_full_scan(&last, t),
            "the same window is claimed once"
        );
        assert!(!claim_full_scan(&last, t + FULL_LOCK_SCAN_EVERY_MS - 1));
        assert!(claim_full_scan(&last, t + FULL_LOCK_SCAN_EVERY_MS));
        // However often the calls come (every 1 ms or every 200 ms), one per interval.
        let mut full = 0;
        for ms in (1..=30_000).map(|i| t + FULL_LOCK_SCAN_EVERY_MS + i) {
            full += usize::from(claim_full_scan(&last, ms));
        }
        assert_eq!(full, 10);
        // A clock that steps back never claims before the interval has passed again.
        assert!(!claim_full_scan(&last, t));
        // At the follower's 200 ms rounds: one call in fifteen.
        let last = AtomicU64::new(0);
        let full = (0..150)
            .filter(|i| claim_full_scan(&last, t + i * 200))
            .count();
        assert_eq!(full, 10);
    }

    #[test]
    fn concurrent_callers_claim_one_window_once() {
        let last = AtomicU64::new(0);
        let barrier = std::sync::Barrier::new(8);
        let t = 1_700_000_000_000u64;
        let claims = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        claim_full_scan(&last, t)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .filter(|claimed| *claimed)
                .count()
        });
        assert_eq!(claims, 1);
    }
}
