//! Collecting the stream records every reader has: readers publish their positions
//! ([`TxnClient::stream_publish_position`]), a collector deletes the records below the
//! smallest ([`TxnClient::stream_collect_with`]), and a mark says how far that went, so a
//! reader that needs records below it learns so instead of reading a history with a hole.
//!
//! # Two marks
//!
//! - *collected* (`COLLECTED_KEY`): records below it may be gone. Raised, in a transaction
//!   of its own, *before* anything below it is deleted; every publication returns it.
//! - *swept* (`SWEPT_KEY`): records below it are gone. Raised once a collection deleted
//!   everything below the collected mark in every lane, so the next collection starts
//!   there instead of walking what earlier ones deleted (their deletions stay in the store
//!   as versions until MVCC garbage collection removes them).
//!
//! # Why a collection never takes what a counted reader needs
//!
//! A reader's `lower_record_ts` is that of the watermark that delivered its `done_ts`:
//! every record it has not delivered yet has `record_ts >= lower_record_ts`
//! (`stream_reader.rs`, "Why the next scan can start at `lower_record_ts`"). The collector
//! reads the positions and writes the collected mark in one transaction, and a publication
//! reads the mark and writes the same mark key back beside its position: two such
//! transactions that overlap conflict on that key, and one is retried. So either the
//! collector's bound counts the position, or the publication sees the raised mark, before
//! its reader scans (a reader publishes before its first scan). A reader the caller's
//! policy leaves out (its position expired, say) sees the mark at its next publication;
//! one that finds the mark above what it needs has its position removed in the same
//! transaction, so that it no longer holds the collection back.
//!
//! Deletes are ordinary Percolator deletes of the reserved keys (no binlog, no record), a
//! bounded batch per transaction; an external record's payload chunks go in the same batch
//! as its record key. The deleted versions are removed by MVCC garbage collection later, as
//! any deleted row's. Until then a read of the write history below the mark
//! ([`TxnClient::stream_scan`] reads committed puts by commit_ts) still finds them.

use super::binlog_writer::BinlogStep;
use super::core::ClientCore;
use super::error::TxnError;
use super::stream_commit::StreamStep;
use super::two_pc::{CommitPlan, StopAt};
use super::txn_client::TxnClient;
use crate::stream::{
    COLLECTED_KEY, POSITIONS_END, POSITIONS_PREFIX, SWEPT_KEY, StreamPosition, decode_mark,
    decode_position, encode_position, external_chunks, payload_key, position_key, record_key_parts,
    record_ts_range,
};
use crate::{Mutation, PessimisticAction, physical_ms};

/// Record keys read per collection batch.
pub(crate) const COLLECT_BATCH: usize = 256;

/// Deletes per collection transaction, payload chunks included: a batch stops taking
/// records once it has this many (an external record's chunks are never split).
const MAX_DELETES_PER_TXN: usize = 4096;

/// The most positions a listing returns (one per reader: nodes of a cluster).
const MAX_POSITIONS: usize = 1 << 16;

/// What a [`TxnClient::stream_collect_with`] call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCollectReport {
    /// The collected mark after the call: records with `record_ts` below it may be gone.
    pub below_record_ts: u64,
    /// The swept mark after the call: records below it are gone. Below
    /// [`StreamCollectReport::below_record_ts`] when the call stopped at its batch budget:
    /// the next call goes on from there.
    pub swept_record_ts: u64,
    /// Record keys deleted (one per chunk).
    pub record_keys: u64,
    /// External records' payload chunks deleted.
    pub payload_keys: u64,
    /// Transactions committed for it (the marks' included).
    pub txns: u64,
}

impl StreamCollectReport {
    /// Whether records below the collected mark may remain (the batch budget ran out).
    pub fn more(&self) -> bool {
        self.swept_record_ts < self.below_record_ts
    }
}

impl TxnClient {
    /// Publishes where `owner` (a node id, for a node's copy of the stream) stands: it needs
    /// no record with `record_ts < lower_record_ts` and has every transaction committed at
    /// or below `done_ts`. Returns the collected mark in force: a reader whose
    /// `lower_record_ts` is below it is missing records (they were collected while it was
    /// not counted) and must not read on as if its history were whole; its position is
    /// removed instead of written, so that it does not hold the collection back.
    ///
    /// The position is what is given, even below the last one (a reader whose copy was
    /// replaced by an older one needs more again). A reader keeps its own never lower while
    /// its copy lasts. Publish before the first scan, and only what is durable.
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
            let mark = core.mark_at(COLLECTED_KEY, start_ts)?;
            // Written back as it is: a collection in flight conflicts with this
            // publication (module docs).
            let mark_put = Mutation::Put {
                key: COLLECTED_KEY.to_vec(),
                value: mark.to_be_bytes().to_vec(),
            };
            let key = position_key(owner);
            let position = if mark > lower_record_ts {
                Mutation::Delete { key }
            } else {
                let p = StreamPosition {
                    owner,
                    lower_record_ts,
                    done_ts,
                    updated_ms: physical_ms(start_ts),
                };
                Mutation::Put {
                    key,
                    value: encode_position(&p),
                }
            };
            core.commit_reserved(start_ts, vec![position, mark_put])?;
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
        core.positions_at(ts)
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
        core.mark_at(COLLECTED_KEY, ts)
    }

    /// Deletes every stream record (and external payload) with `record_ts <
    /// below_record_ts`, whatever the positions say (the caller has checked them): as
    /// [`TxnClient::stream_collect_with`] with a plan that answers `below_record_ts`.
    ///
    /// # Errors
    /// As [`TxnClient::stream_collect_with`].
    pub fn stream_collect(
        &self,
        below_record_ts: u64,
        max_batches: usize,
    ) -> Result<StreamCollectReport, TxnError> {
        self.stream_collect_with(|_, _, _| Some(below_record_ts), max_batches)
    }

    /// One collection: `plan` gets the published positions, the oracle's physical
    /// milliseconds and the collected mark, all read in the transaction that raises the
    /// mark, and answers below which `record_ts` to collect (`None`, or a bound at or below
    /// the mark: only finish what an earlier collection left). Then deletes every record
    /// (and external payload) below the mark, from the swept mark on, at most
    /// `max_batches` transactions of deletes; raises the swept mark when done. Safe to run
    /// from several clients at once (their mark writes conflict and are retried; their
    /// deletes of the same keys conflict and are retried) and to repeat.
    ///
    /// # Errors
    /// Reads' and commits' errors after retries (what was deleted stays deleted: the mark
    /// covers it); [`TxnError::StreamRecord`] for a damaged key or registry entry.
    pub fn stream_collect_with(
        &self,
        plan: impl Fn(&[StreamPosition], u64, u64) -> Option<u64>,
        max_batches: usize,
    ) -> Result<StreamCollectReport, TxnError> {
        let core = self.core();
        let mut report = StreamCollectReport::default();
        let (mark, swept, raised) = core.with_registry_retries(|core| {
            let start_ts = core.get_ts()?;
            let positions = core.positions_at(start_ts)?;
            let mark = core.mark_at(COLLECTED_KEY, start_ts)?;
            let swept = core.mark_at(SWEPT_KEY, start_ts)?;
            let wanted = plan(&positions, physical_ms(start_ts), mark).unwrap_or(0);
            if wanted <= mark {
                return Ok((mark, swept, false));
            }
            let put = Mutation::Put {
                key: COLLECTED_KEY.to_vec(),
                value: wanted.to_be_bytes().to_vec(),
            };
            core.commit_reserved(start_ts, vec![put])?;
            Ok((wanted, swept, true))
        })?;
        report.below_record_ts = mark;
        report.swept_record_ts = swept;
        report.txns += u64::from(raised);
        if swept >= mark {
            return Ok(report);
        }
        // Every lane a record below the mark can be in: those registered by now.
        let lanes = self.stream_lanes_at(core.get_ts()?)?;
        let mut budget = max_batches;
        for lane in lanes {
            if !core.collect_lane(&lane, (swept, mark), &mut budget, &mut report)? {
                return Ok(report);
            }
        }
        core.with_registry_retries(|core| {
            let start_ts = core.get_ts()?;
            if core.mark_at(SWEPT_KEY, start_ts)? >= mark {
                return Ok(());
            }
            let put = Mutation::Put {
                key: SWEPT_KEY.to_vec(),
                value: mark.to_be_bytes().to_vec(),
            };
            core.commit_reserved(start_ts, vec![put]).map(|_| ())
        })?;
        report.swept_record_ts = mark;
        report.txns += 1;
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
    /// The mark under `key` read at `ts` (0 when there is none).
    fn mark_at(&self, key: &[u8], ts: u64) -> Result<u64, TxnError> {
        match self.snapshot_get(key, ts)? {
            None => Ok(0),
            Some(v) => decode_mark(&v).map_err(|e| registry_err(&e)),
        }
    }

    /// Every position read at `ts`.
    fn positions_at(&self, ts: u64) -> Result<Vec<StreamPosition>, TxnError> {
        self.reserved_scan(POSITIONS_PREFIX, POSITIONS_END, MAX_POSITIONS, ts)?
            .into_iter()
            .map(|(k, v)| decode_position(&k, &v).map_err(|e| registry_err(&e)))
            .collect()
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

    /// Deletes `lane`'s records with `record_ts` in `[range.0, range.1)`, a batch of record
    /// keys (and their payloads) per transaction while `budget` lasts, adding to `report`.
    /// Returns whether the lane is done (`false`: the budget ran out first).
    fn collect_lane(
        &self,
        lane: &[u8],
        range: (u64, u64),
        budget: &mut usize,
        report: &mut StreamCollectReport,
    ) -> Result<bool, TxnError> {
        let (mut from, end) = record_ts_range(lane, range.0, range.1);
        loop {
            if *budget == 0 {
                return Ok(false);
            }
            let batch = self.with_registry_retries(|core| {
                let start_ts = core.get_ts()?;
                let pairs = core.reserved_scan(&from, &end, COLLECT_BATCH, start_ts)?;
                let Some((last, _)) = pairs.last() else {
                    return Ok(None);
                };
                let mut next = last.clone();
                next.push(0);
                let mut deletes = Deletes::default();
                for (key, value) in pairs {
                    if deletes.mutations.len() >= MAX_DELETES_PER_TXN {
                        // The rest in the next batch, from this key on.
                        next = key;
                        break;
                    }
                    deletes.add(lane, key, &value)?;
                }
                let counts = (deletes.records, deletes.payloads);
                core.commit_reserved(start_ts, deletes.mutations)?;
                Ok(Some((counts, next)))
            })?;
            let Some(((records, payloads), next)) = batch else {
                return Ok(true);
            };
            *budget -= 1;
            report.record_keys += records;
            report.payload_keys += payloads;
            report.txns += 1;
            from = next;
        }
    }
}

/// The deletes of one collection batch.
#[derive(Default)]
struct Deletes {
    mutations: Vec<Mutation>,
    records: u64,
    payloads: u64,
}

impl Deletes {
    /// Adds the delete of record key `key` (its stored `value`), and of its payload chunks
    /// when it is an external record's.
    fn add(&mut self, lane: &[u8], key: Vec<u8>, value: &[u8]) -> Result<(), TxnError> {
        let (_, start_ts, _) = record_key_parts(&key).map_err(|e| TxnError::StreamRecord {
            start_ts: 0,
            record_ts: 0,
            detail: format!("collecting lane {lane:?}: {e}"),
        })?;
        if let Some(chunks) = external_chunks(value) {
            for i in 0..chunks {
                self.mutations.push(Mutation::Delete {
                    key: payload_key(start_ts, i),
                });
            }
            self.payloads += u64::from(chunks);
        }
        self.mutations.push(Mutation::Delete { key });
        self.records += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_says_whether_records_may_remain_below_the_mark() {
        let mut r = StreamCollectReport {
            below_record_ts: 10,
            swept_record_ts: 4,
            ..StreamCollectReport::default()
        };
        assert!(r.more());
        r.swept_record_ts = 10;
        assert!(!r.more());
    }
}
