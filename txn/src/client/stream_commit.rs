//! The commit side of the replication stream: each transaction with binlog events writes
//! its *stream record* (`crate::stream`) in the same Percolator transaction.
//!
//! Order of a commit with a record. A small transaction (at most
//! [`PARALLEL_RECORD_MAX_KEYS`] keys, inline record) takes `record_ts` first (a recent
//! timestamp it holds, when that is at or above its lane's registration, else a fresh one)
//! and prewrites its record together with its other keys, which saves a Raft round; with
//! every key in one region (and a skew bound no tighter than the region's one-phase drift
//! bound) it commits in one phase, the region keeping its commit_ts within that bound of
//! the record_ts. A larger one:
//! 1. prewrite every other key (as before);
//! 2. take `record_ts` from the oracle, then prewrite the record's chunks under
//!    `lane ++ STREAM_PREFIX ++ !record_ts ++ start_ts ++ chunk_no` (the lane of the
//!    primary, registered before `record_ts` is taken, which is then at or above the
//!    registration: `stream/keys.rs`), as secondaries
//!    of the transaction's primary (so they commit exactly when it does, by the coordinator or by a
//!    resolver reading the primary's status, and roll back with it);
//! 3. take `commit_ts` (as before); if its physical part is more than
//!    [`crate::StreamOptions::max_record_skew`] after `record_ts`'s, roll back (before the
//!    commit point: the coordinator is the only one that commits a primary) and fail with
//!    [`TxnError::StreamRecordTooSlow`]; else commit the primary, then the secondaries.
//!
//! Step 3's bound is what lets a stream reader start its key scan at a `record_ts` bound
//! instead of the beginning (`stream_reader.rs`). A transaction that gives binlog events
//! but writes no key (DDL logged alone) commits a transaction holding only its record, the
//! record's first chunk as primary.

use super::binlog_journal::MemberRow;
use super::binlog_txn::BinlogTxn;
use super::binlog_writer::{BinlogStep, CoordinatorBinlog};
use super::core::ClientCore;
use super::error::TxnError;
use super::two_pc::{CommitPlan, StopAt, all_keys};
use crate::stream::{
    StreamGroup, encode_stream_record, external_value, is_reserved_key, lane_of, lane_registry_key,
    payload_key, record_key, split_chunks,
};
use crate::{CommitKind, Mutation, PessimisticAction, TxnProps};

/// What a commit does about its stream record.
#[derive(Debug)]
pub(crate) enum StreamStep {
    /// No record (no binlog, streaming off, or no event).
    None,
    /// The values of the record's keys (its chunks, or an external record's one value),
    /// prewritten after every other key.
    Append(Vec<Vec<u8>>),
    /// The record's chunks are the plan's mutations, taken at this `record_ts`.
    InPlan(u64),
}

/// The mutations of an external record's payload (none for an inline one), prewritten
/// with the transaction's other keys.
pub(crate) type Payload = Vec<(Mutation, PessimisticAction)>;

/// Refuses a user write of a key reserved for stream records.
///
/// # Errors
/// [`TxnError::ReservedKey`].
pub(crate) fn check_user_key(key: &[u8]) -> Result<(), TxnError> {
    if is_reserved_key(key) {
        return Err(TxnError::ReservedKey { key: key.to_vec() });
    }
    Ok(())
}

fn stream_err(e: crate::StreamDecodeError) -> TxnError {
    TxnError::Binlog {
        detail: format!("stream record: {e}"),
    }
}

/// The encoded record of a transaction whose binlog step is being prepared: one group per
/// hot-row member (its own events, or the kv update of `key` to its value), else one group
/// of the cache's events (`caller_events` when the caller gave them, already read). `None`
/// when there is no event at all.
///
/// # Errors
/// [`TxnError::Binlog`] when a cache cannot be read or built.
pub(crate) fn build_record(
    binlog: &CoordinatorBinlog,
    txn: &mut BinlogTxn,
    caller_events: Option<&[u8]>,
    key: &[u8],
    members: &[MemberRow],
) -> Result<Option<Vec<u8>>, TxnError> {
    let mut groups = Vec::new();
    if members.is_empty() {
        // The caller's events are borrowed, not copied (a large transaction's are tens of
        // MiB); only a kv transaction's are encoded here.
        let encoded;
        let bytes: &[u8] = match caller_events {
            Some(b) => b,
            None => {
                encoded = txn.encoded_events()?;
                &encoded
            }
        };
        if bytes.is_empty() {
            return Ok(None);
        }
        groups.push(StreamGroup::from_cache_bytes(bytes).map_err(stream_err)?);
    } else {
        for m in members {
            let bytes = match &m.events {
                Some(events) => events.clone(),
                None => {
                    let mut cache = binlog.log.new_cache();
                    let built = cache
                        .update(key, &m.after)
                        .and_then(|()| cache.encoded_events());
                    built.map_err(|e| TxnError::Binlog {
                        detail: format!("hot-row member {} row event: {e}", m.xid),
                    })?
                }
            };
            groups.push(StreamGroup::from_cache_bytes(&bytes).map_err(stream_err)?);
        }
    }
    Ok(Some(encode_stream_record(&groups)))
}

/// The mutations putting `values` under the record keys of `lane` taken at `record_ts` for
/// transaction `start_ts`.
fn record_mutations(
    values: Vec<Vec<u8>>,
    lane: &[u8],
    record_ts: u64,
    start_ts: u64,
) -> Vec<(Mutation, PessimisticAction)> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let key = record_key(lane, record_ts, start_ts, i as u32);
            (
                Mutation::Put { key, value },
                PessimisticAction::SkipPessimisticCheck,
            )
        })
        .collect()
}

/// Chunks per prewrite request of a record or payload: a large one goes in several
/// requests (sent concurrently), each a few MiB, rather than one of its whole size.
pub(crate) const RECORD_CHUNKS_PER_REQUEST: usize = 8;

/// How old (local clock against the timestamp's physical part) a transaction's newest
/// timestamp may be to serve as its record's `record_ts` (`parallel_record_ts`).
const RECENT_RECORD_TS_MS: u64 = 200;

/// Attempts to read or write a registry entry (a lane, the settings) before giving up.
const REGISTRY_ATTEMPTS: u32 = 10;

/// A transaction of at most this many keys (with an inline record) prewrites its record
/// together with its other keys, at a `record_ts` taken before the prewrite (see
/// `commit_prepared` in `two_pc.rs`); a larger one prewrites it last, so that the skew
/// bound does not have to cover a long prewrite.
pub(crate) const PARALLEL_RECORD_MAX_KEYS: usize = 256;

/// `plan` with the record's chunks (taken at `record_ts`, in the lane of the plan's
/// primary) added, and those chunks grouped into prewrite requests.
pub(crate) fn record_plan(
    plan: &CommitPlan,
    values: Vec<Vec<u8>>,
    record_ts: u64,
) -> (CommitPlan, Vec<Vec<(Mutation, PessimisticAction)>>) {
    let chunks = record_mutations(values, lane_of(&plan.primary), record_ts, plan.start_ts);
    let mut extended = plan.clone();
    extended.mutations.extend(chunks.iter().cloned());
    let groups = chunks
        .chunks(RECORD_CHUNKS_PER_REQUEST)
        .map(<[_]>::to_vec)
        .collect();
    (extended, groups)
}

impl ClientCore {
    /// How transaction `start_ts` writes its encoded `record`: inline (its chunks under the
    /// record keys, prewritten last) when it is at most
    /// [`crate::StreamOptions::inline_max_bytes`], else external (its chunks as a payload
    /// prewritten with the other keys, one value under the record key).
    pub(crate) fn stream_parts(&self, record: &[u8], start_ts: u64) -> (StreamStep, Payload) {
        let opts = &self.config.stream;
        let chunks = split_chunks(record, opts.chunk_bytes);
        if record.len() <= opts.inline_max_bytes {
            return (StreamStep::Append(chunks), Vec::new());
        }
        let header = external_value(chunks.len() as u32, record.len() as u64);
        let payload = chunks
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                (
                    Mutation::Put {
                        key: payload_key(start_ts, i as u32),
                        value,
                    },
                    PessimisticAction::SkipPessimisticCheck,
                )
            })
            .collect();
        (StreamStep::Append(vec![header]), payload)
    }

    /// Prewrites an external record's `payload` with `op`, one request of
    /// [`RECORD_CHUNKS_PER_REQUEST`] chunks at a time: the stream's region also takes every
    /// other transaction's small record, which would otherwise queue behind the whole
    /// payload (a 256 MiB payload sent at once held small records' prewrites for seconds,
    /// past the skew bound).
    ///
    /// # Errors
    /// The first batch's error.
    pub(crate) fn prewrite_payload(
        &self,
        op: &super::two_pc::Prewrite,
        payload: &[(Mutation, PessimisticAction)],
    ) -> Result<(), TxnError> {
        for batch in payload.chunks(RECORD_CHUNKS_PER_REQUEST) {
            let mut bo = super::backoff::Backoff::new(&self.config);
            let mut op = op.clone();
            self.run_batches(&mut op, batch.to_vec(), &mut bo)?;
        }
        Ok(())
    }

    /// The `record_ts` of a small transaction's record prewritten with its other keys:
    /// the newest timestamp the transaction already holds (its `for_update_ts`, else its
    /// `start_ts`) when that was taken at most [`RECENT_RECORD_TS_MS`] ago and is at or
    /// above `lane_ts` (from [`ClientCore::ensure_stream_lane`]: a record_ts below its
    /// lane's registration could commit below a watermark whose reader did not list the
    /// lane), else a fresh one from the oracle. Either was taken before the record's
    /// prewrite and is below its commit_ts (the region's one-phase floor is above both, and
    /// a two-phase commit_ts comes from the oracle after the prewrite), which is all the
    /// watermark's argument asks of it (`stream_reader.rs`); a recent one also keeps the
    /// commit well inside the one-phase drift bound and the skew bound. It saves an oracle
    /// round trip per commit.
    ///
    /// # Errors
    /// The oracle's error when a fresh timestamp is needed.
    pub(crate) fn parallel_record_ts(
        &self,
        plan: &CommitPlan,
        lane_ts: u64,
    ) -> Result<u64, TxnError> {
        let held = plan.start_ts.max(plan.for_update_ts);
        if held >= lane_ts && super::core::age_ms(held) <= RECENT_RECORD_TS_MS {
            return Ok(held);
        }
        self.get_ts()
    }

    /// Step 2 of the module docs, after every other key of `plan` is prewritten: takes
    /// `record_ts`, prewrites the record's chunks, and returns the plan extended with them
    /// (for the commit, the secondaries and any rollback) and `record_ts`.
    ///
    /// # Errors
    /// The prewrite's errors, after rolling back every key of the transaction.
    pub(crate) fn prewrite_stream_record(
        &self,
        plan: &CommitPlan,
        props: &TxnProps,
        values: Vec<Vec<u8>>,
    ) -> Result<(CommitPlan, u64), TxnError> {
        let record_ts = match self.get_ts() {
            Ok(ts) => ts,
            Err(e) => {
                self.rollback_keys(plan.start_ts, all_keys(plan));
                return Err(e);
            }
        };
        let (extended, groups) = record_plan(plan, values, record_ts);
        let mut props = props.clone();
        props.commit_kind = CommitKind::TwoPc;
        let op = super::two_pc::prewrite_op(props);
        if let Err(e) = self.run_groups_concurrently(&op, groups, self.config.max_backoff) {
            self.rollback_keys(plan.start_ts, all_keys(&extended));
            return Err(e);
        }
        Ok((extended, record_ts))
    }

    /// Step 3's check of `commit_ts` against `record_ts`: rolls `plan` back and fails when
    /// the skew is over the bound.
    ///
    /// # Errors
    /// [`TxnError::StreamRecordTooSlow`].
    pub(crate) fn check_record_skew(
        &self,
        plan: &CommitPlan,
        record_ts: u64,
        commit_ts: u64,
    ) -> Result<(), TxnError> {
        let skew_ms = crate::physical_ms(commit_ts).saturating_sub(crate::physical_ms(record_ts));
        let max_skew_ms = self.config.stream.max_skew_ms();
        if skew_ms <= max_skew_ms {
            return Ok(());
        }
        tracing::warn!(
            start_ts = plan.start_ts,
            record_ts,
            commit_ts,
            skew_ms,
            "stream record too old at commit; rolling back"
        );
        self.rollback_keys(plan.start_ts, all_keys(plan));
        Err(TxnError::StreamRecordTooSlow {
            start_ts: plan.start_ts,
            record_ts,
            commit_ts,
            skew_ms,
            max_skew_ms,
        })
    }

    /// Makes sure the lane of a record whose transaction has `primary` as its primary key is
    /// in the lane registry (`stream/keys.rs`), and returns a timestamp at or above the
    /// registration's commit_ts: the record's `record_ts` must be at least that (a fresh
    /// one taken after this call is). A reader lists the registry at its own timestamp
    /// `T0`; a lane it does not list was registered above `T0`, so such a record commits
    /// above `T0` too, as the watermark needs. (A `record_ts` the transaction held from
    /// before the registration broke this: its one-phase commit landed below a watermark
    /// whose reader never read the lane, and that reader's stream lost the record.)
    ///
    /// The empty lane is always read (0). A lane this client registered or saw registered
    /// is remembered with the timestamp it was learned at.
    ///
    /// # Errors
    /// The registry read's or write's error after [`REGISTRY_ATTEMPTS`] attempts.
    pub(crate) fn ensure_stream_lane(&self, primary: &[u8]) -> Result<u64, TxnError> {
        let lane = lane_of(primary);
        if lane.is_empty() {
            return Ok(0);
        }
        if let Some(ts) = self.stream_lanes.lock().get(lane) {
            return Ok(*ts);
        }
        let (_, known_at) = self.put_reserved_if_absent(&lane_registry_key(lane), lane)?;
        let mut lanes = self.stream_lanes.lock();
        let ts = lanes.entry(lane.to_vec()).or_insert(known_at);
        Ok(*ts)
    }

    /// The value of the reserved `key` (a registry entry), putting `value` there first if it
    /// has none, in a transaction of its own (no binlog, no record). Returns the value in
    /// force (`value`, or what another client put first) and a timestamp at or above its
    /// commit_ts (the read that found it, or this client's commit).
    ///
    /// # Errors
    /// The read's or the commit's error after [`REGISTRY_ATTEMPTS`] attempts (a commit
    /// racing another client's for the same key fails and is read again).
    pub(crate) fn put_reserved_if_absent(
        &self,
        key: &[u8],
        value: &[u8],
    ) -> Result<(Vec<u8>, u64), TxnError> {
        self.with_registry_retries(|core| core.put_reserved_once(key, value))
    }

    /// Runs `f` (one read, then one commit, of reserved keys) until it succeeds, at most
    /// [`REGISTRY_ATTEMPTS`] times. Every error is retried: two clients that write one key
    /// race and the loser's commit fails, and each caller's `f` reads again before it
    /// writes, so an attempt whose outcome was undetermined is safe to repeat too.
    pub(crate) fn with_registry_retries<T>(
        &self,
        mut f: impl FnMut(&ClientCore) -> Result<T, TxnError>,
    ) -> Result<T, TxnError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match f(self) {
                Err(e) if attempt < REGISTRY_ATTEMPTS => {
                    tracing::debug!(error = %e, "stream registry write retried");
                    std::thread::sleep(std::time::Duration::from_millis(5 * u64::from(attempt)));
                }
                other => return other,
            }
        }
    }

    /// One attempt of [`ClientCore::put_reserved_if_absent`]; also returns a timestamp at
    /// or above the commit_ts of the value in force (the read's, or this commit's).
    fn put_reserved_once(&self, key: &[u8], value: &[u8]) -> Result<(Vec<u8>, u64), TxnError> {
        let start_ts = self.get_ts()?;
        if let Some(v) = self.snapshot_get(key, start_ts)? {
            return Ok((v, start_ts));
        }
        let put = Mutation::Put {
            key: key.to_vec(),
            value: value.to_vec(),
        };
        self.commit_reserved(start_ts, vec![put])
            .map(|commit_ts| (value.to_vec(), commit_ts))
    }

    /// Whether this client writes stream records (it has a usable binlog and streaming is
    /// on).
    pub(crate) fn streams(&self) -> bool {
        self.config.stream.enabled && matches!(self.binlog.get(), Ok(Some(_)))
    }

    /// Commits a transaction that holds only a stream record of `groups`' events (the
    /// caller's events of a transaction that wrote no key): `start_ts` is the
    /// transaction's, the record's first chunk its primary. Returns the commit timestamp.
    ///
    /// # Errors
    /// As [`ClientCore::commit_plan`], plus [`TxnError::StreamRecordTooSlow`].
    pub(crate) fn commit_stream_only(
        &self,
        start_ts: u64,
        cache_bytes: &[u8],
    ) -> Result<u64, TxnError> {
        let group = StreamGroup::from_cache_bytes(cache_bytes).map_err(stream_err)?;
        let record = encode_stream_record(&[group]);
        // Always inline: the record is the whole transaction, its first chunk the primary,
        // all of it prewritten right after record_ts (statements alone are small).
        let values = split_chunks(&record, self.config.stream.chunk_bytes);
        let record_ts = self.get_ts()?;
        let mutations = record_mutations(values, &[], record_ts, start_ts);
        let primary = record_key(&[], record_ts, start_ts, 0);
        let plan = CommitPlan {
            start_ts,
            primary,
            mutations,
            for_update_ts: 0,
        };
        let result = self.commit_with_step(
            plan,
            StopAt::Never,
            BinlogStep::off(),
            StreamStep::InPlan(record_ts),
            Vec::new(),
        );
        self.heartbeats.unregister(start_ts);
        result
    }

    /// Logs the caller's events of a transaction `start_ts` that wrote no key: its stream
    /// record first (when this client streams), then its group in the coordinator's binlog
    /// (xid `start_ts`). Returns the record's commit timestamp, or `start_ts` without one.
    ///
    /// A crash between the two leaves the group in the stream and not in the
    /// coordinator's own binlog (the reverse would put in a binlog what the stream never
    /// carries).
    ///
    /// # Errors
    /// As [`ClientCore::commit_stream_only`] (nothing logged), or [`TxnError::Binlog`]
    /// when the coordinator's binlog write fails.
    pub(crate) fn commit_caller_group(
        &self,
        mut cache: surge_binlog::TxnCache,
        start_ts: u64,
    ) -> Result<u64, TxnError> {
        let mut commit_ts = start_ts;
        if self.streams() {
            if let Some(b) = self.binlog.get()? {
                b.check()?;
            }
            let bytes = cache.encoded_events().map_err(|e| TxnError::Binlog {
                detail: format!("transaction cache: {e}"),
            })?;
            commit_ts = self.commit_stream_only(start_ts, &bytes)?;
        }
        self.write_caller_group(cache, start_ts)?;
        Ok(commit_ts)
    }
}
