//! Collecting the stream records every reader has: readers publish their positions
//! ([`TxnClient::stream_publish_position`]), a collector deletes the records below the
//! smallest ([`TxnClient::stream_collect`]), and a mark says how far that went, so a
//! reader that needs records below it learns so instead of reading a history with a hole.
//!
//! # Why a collection below every position takes nothing a reader needs
//!
//! A reader's `lower_record_ts` is that of the watermark that delivered its `done_ts`:
//! every record it has not delivered yet has `record_ts >= lower_record_ts`
//! (`stream_reader.rs`, "Why the next scan can start at `lower_record_ts`"). Positions only
//! rise (a reader publishes what it has made durable), so a collection below the smallest
//! position read at some time removes only records every reader listed had delivered then.
//! A reader not listed (never published, or left out by the caller's policy) may need
//! them: the mark is raised, in a transaction of its own, *before* anything is deleted, and
//! [`TxnClient::stream_publish_position`] returns it, so that reader sees a mark above its
//! own `lower_record_ts` before it reads a record (its caller must publish before it
//! scans).
//!
//! Deletes are ordinary Percolator deletes of the reserved keys (no binlog, no record), in
//! batches of [`COLLECT_BATCH`] record keys; an external record's payload chunks go in the
//! same batch as its record key. The deleted versions are removed by MVCC garbage
//! collection later, as any deleted row's.

use std::collections::BTreeMap;

use super::binlog_writer::BinlogStep;
use super::core::ClientCore;
use super::error::TxnError;
use super::stream_commit::StreamStep;
use super::two_pc::{CommitPlan, StopAt};
use super::txn_client::TxnClient;
use crate::stream::{
    COLLECTED_KEY, LANES_PREFIX, POSITIONS_END, POSITIONS_PREFIX, STREAM_PREFIX, StreamPosition,
    decode_collected, decode_position, encode_position, external_chunks, is_table_lane, lane_start,
    payload_key, position_key, record_key_parts, stream_lower_key,
};
use crate::{Mutation, PessimisticAction, physical_ms};

/// Record keys deleted per transaction.
pub(crate) const COLLECT_BATCH: usize = 256;

/// The most positions a listing returns (one per reader: nodes of a cluster).
const MAX_POSITIONS: usize = 1 << 16;

/// The most lanes a collection walks.
const MAX_LANES: usize = 1 << 20;

/// What a [`TxnClient::stream_collect`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCollectReport {
    /// The collected mark after the call (records with `record_ts` below it are gone).
    pub below_record_ts: u64,
    /// Record keys deleted (one per chunk).
    pub record_keys: u64,
    /// External records' payload chunks deleted.
    pub payload_keys: u64,
    /// Transactions committed for it (the mark's included).
    pub txns: u64,
}

impl TxnClient {
    /// Publishes where `owner` (a node id, for a node's copy of the stream) stands: it needs
    /// no record with `record_ts < lower_record_ts` and has every transaction committed at
    /// or below `done_ts`. Returns the collected mark in force when it was written: a
    /// reader whose `lower_record_ts` is below it is missing records (they were collected
    /// while it was not counted) and must not read on as if its history were whole.
    ///
    /// A position never goes back: a `lower_record_ts` or `done_ts` below the one published
    /// before keeps the earlier one. That is exact, not a shortcut: a watermark's lower
    /// bound may come out below an earlier one's, but every record below the earlier bound
    /// was delivered by the earlier watermark (the invariant of
    /// [`crate::StreamWatermark`]). Publish before the first scan, and only what is
    /// durable; compare the mark returned with the reader's own `lower_record_ts`.
    ///
    /// # Errors
    /// The read's or commit's error after a few attempts; [`TxnError::StreamRecord`] for a
    /// mark that does not decode.
    pub fn stream_publish_position(
        &self,
        owner: u64,
        lower_record_ts: u64,
        done_ts: u64,
    ) -> Result<u64, TxnError> {
        self.core().with_registry_retries(|core| {
            let start_ts = core.get_ts()?;
            let mark = core.collected_at(start_ts)?;
            let key = position_key(owner);
            let before = match core.snapshot_get(&key, start_ts)? {
                Some(v) => Some(decode_position(&key, &v).map_err(|e| registry_err(&e))?),
                None => None,
            };
            let position = StreamPosition {
                owner,
                lower_record_ts: before
                    .map_or(lower_record_ts, |b| b.lower_record_ts.max(lower_record_ts)),
                done_ts: before.map_or(done_ts, |b| b.done_ts.max(done_ts)),
                updated_ms: physical_ms(start_ts),
            };
            let put = Mutation::Put {
                key,
                value: encode_position(&position),
            };
            core.commit_reserved(start_ts, vec![put])?;
            Ok(mark)
        })
    }

    /// Every published position, by owner.
    ///
    /// # Errors
    /// The read's error; [`TxnError::StreamRecord`] for one that does not decode.
    pub fn stream_positions(&self) -> Result<Vec<StreamPosition>, TxnError> {
        let core = self.core();
        let ts = core.get_ts()?;
        core.reserved_scan(POSITIONS_PREFIX, POSITIONS_END, MAX_POSITIONS, ts)?
            .into_iter()
            .map(|(k, v)| decode_position(&k, &v).map_err(|e| registry_err(&e)))
            .collect()
    }

    /// Removes `owner`'s position (a node removed from the cluster for good, which would
    /// otherwise count until the caller's policy drops it). Returns whether there was one.
    ///
    /// # Errors
    /// The read's or commit's error after a few attempts.
    pub fn stream_remove_position(&self, owner: u64) -> Result<bool, TxnError> {
        self.core().with_registry_retries(|core| {
            let start_ts = core.get_ts()?;
            let key = position_key(owner);
            if core.snapshot_get(&key, start_ts)?.is_none() {
                return Ok(false);
            }
            core.commit_reserved(start_ts, vec![Mutation::Delete { key }])?;
            Ok(true)
        })
    }

    /// The collected mark: every record with `record_ts` below it may be gone (0: nothing
    /// was collected).
    ///
    /// # Errors
    /// The read's error; [`TxnError::StreamRecord`] for a mark that does not decode.
    pub fn stream_collected_below(&self) -> Result<u64, TxnError> {
        let core = self.core();
        let ts = core.get_ts()?;
        core.collected_at(ts)
    }

    /// Deletes every stream record (and external payload) with `record_ts <
    /// below_record_ts`, raising the collected mark to `below_record_ts` first. Give it at
    /// most the smallest `lower_record_ts` of the readers that must keep a whole history
    /// ([`TxnClient::stream_positions`]); the caller decides which readers count (a node
    /// gone for good should not hold the records forever).
    ///
    /// Safe to run from several clients at once (their writes conflict and are retried, or
    /// delete what the other left) and to repeat: a call below the mark deletes only what
    /// an interrupted call left.
    ///
    /// # Errors
    /// Reads' and commits' errors after retries (what was deleted before stays deleted: the
    /// mark already covers it); [`TxnError::StreamRecord`] for a damaged key.
    pub fn stream_collect(&self, below_record_ts: u64) -> Result<StreamCollectReport, TxnError> {
        let core = self.core();
        let mut report = StreamCollectReport::default();
        let mark = core.with_registry_retries(|core| {
            let start_ts = core.get_ts()?;
            let mark = core.collected_at(start_ts)?;
            if mark >= below_record_ts {
                return Ok((mark, false));
            }
            let put = Mutation::Put {
                key: COLLECTED_KEY.to_vec(),
                value: below_record_ts.to_be_bytes().to_vec(),
            };
            core.commit_reserved(start_ts, vec![put])?;
            Ok((below_record_ts, true))
        })?;
        report.below_record_ts = mark.0;
        report.txns += u64::from(mark.1);
        let ts = core.get_ts()?;
        let mut lanes = vec![Vec::new()];
        lanes.extend(
            core.reserved_scan(LANES_PREFIX, STREAM_PREFIX, MAX_LANES, ts)?
                .into_iter()
                .filter_map(|(k, _)| k.strip_prefix(LANES_PREFIX).map(<[u8]>::to_vec))
                .filter(|lane| is_table_lane(lane)),
        );
        for lane in lanes {
            core.collect_lane(&lane, below_record_ts, &mut report)?;
        }
        Ok(report)
    }
}

/// A registry entry that does not decode, as a [`TxnError`].
fn registry_err(e: &dyn std::fmt::Display) -> TxnError {
    TxnError::StreamRecord {
        start_ts: 0,
        record_ts: 0,
        detail: e.to_string(),
    }
}

impl ClientCore {
    /// The collected mark read at `ts` (0 when there is none).
    fn collected_at(&self, ts: u64) -> Result<u64, TxnError> {
        match self.snapshot_get(COLLECTED_KEY, ts)? {
            None => Ok(0),
            Some(v) => decode_collected(&v).map_err(|e| registry_err(&e)),
        }
    }

    /// Commits `mutations` of reserved keys, optimistically at `start_ts`, with no binlog
    /// and no stream record. Returns the commit timestamp.
    pub(crate) fn commit_reserved(
        &self,
        start_ts: u64,
        mut mutations: Vec<Mutation>,
    ) -> Result<u64, TxnError> {
        mutations.sort_by(|a, b| a.key().cmp(b.key()));
        let primary =
            mutations
                .first()
                .map(|m| m.key().to_vec())
                .ok_or_else(|| TxnError::Protocol {
                    detail: "a reserved commit with no mutation".into(),
                })?;
        let plan = CommitPlan {
            start_ts,
            primary,
            mutations: mutations
                .into_iter()
                .map(|m| (m, PessimisticAction::SkipPessimisticCheck))
                .collect(),
            for_update_ts: 0,
        };
        let result = self.commit_with_step(
            plan,
            StopAt::Never,
            BinlogStep::off(),
            StreamStep::None,
            Vec::new(),
        );
        self.heartbeats.unregister(start_ts);
        result
    }

    /// Deletes `lane`'s records below `below_record_ts`, a batch of record keys (and their
    /// payloads) per transaction, adding to `report`.
    fn collect_lane(
        &self,
        lane: &[u8],
        below_record_ts: u64,
        report: &mut StreamCollectReport,
    ) -> Result<(), TxnError> {
        let start = lane_start(lane);
        let end = stream_lower_key(lane, below_record_ts);
        loop {
            let deleted = self.with_registry_retries(|core| {
                let start_ts = core.get_ts()?;
                let pairs = core.reserved_scan(&start, &end, COLLECT_BATCH, start_ts)?;
                if pairs.is_empty() {
                    return Ok(None);
                }
                // Payload chunks of each external record, by its start_ts (one record key
                // holds the external value, at chunk 0).
                let mut payloads: BTreeMap<u64, u32> = BTreeMap::new();
                let mut mutations = Vec::with_capacity(pairs.len());
                for (key, value) in pairs {
                    let (record_ts, start, _) =
                        record_key_parts(&key).map_err(|e| TxnError::StreamRecord {
                            start_ts: 0,
                            record_ts: 0,
                            detail: format!("collecting lane {lane:?}: {e}"),
                        })?;
                    debug_assert!(record_ts < below_record_ts);
                    if let Some(chunks) = external_chunks(&value) {
                        payloads.insert(start, chunks);
                    }
                    mutations.push(Mutation::Delete { key });
                }
                let records = mutations.len() as u64;
                let mut payload_keys = 0;
                for (start, chunks) in payloads {
                    for i in 0..chunks {
                        mutations.push(Mutation::Delete {
                            key: payload_key(start, i),
                        });
                        payload_keys += 1;
                    }
                }
                core.commit_reserved(start_ts, mutations)?;
                Ok(Some((records, payload_keys)))
            })?;
            let Some((records, payload_keys)) = deleted else {
                return Ok(());
            };
            report.record_keys += records;
            report.payload_keys += payload_keys;
            report.txns += 1;
        }
    }
}
