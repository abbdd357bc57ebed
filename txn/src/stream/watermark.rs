//! What a stream reader gets: [`StreamWatermark`] and [`StreamTxn`].

use super::record::StreamGroup;

/// How far the stream is complete, from [`crate::TxnClient::stream_resolved_ts`].
///
/// # Invariants
/// - Every transaction that commits a stream record with `commit_ts <= resolved_ts` had
///   committed it when the watermark was taken: a [`crate::TxnClient::stream_scan`] started
///   afterwards finds it, and no record with such a `commit_ts` can appear later.
/// - Every record with `commit_ts > resolved_ts` (not yet delivered up to this watermark)
///   has `record_ts >= lower_record_ts`: the next scan may start its keys there.
/// - The watermarks one client returns never go back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamWatermark {
    /// The resolved timestamp: `min(oracle_ts, smallest start_ts of a live record lock)`.
    pub resolved_ts: u64,
    /// The lower bound of `record_ts` for the next scan (see the invariants).
    pub lower_record_ts: u64,
    /// The oracle timestamp taken before the lock scan (the watermark's upper bound).
    pub oracle_ts: u64,
    /// Record locks found by the lock scan (before settling any).
    pub locks_seen: usize,
    /// Record locks the scan settled (committed or rolled back from their primary's status).
    pub locks_settled: usize,
}

/// One committed transaction of the stream, from [`crate::TxnClient::stream_scan`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamTxn {
    /// Its commit timestamp: the stream's order.
    pub commit_ts: u64,
    /// Its start timestamp (unique among transactions).
    pub start_ts: u64,
    /// The timestamp its record was taken at (part of the record's keys).
    pub record_ts: u64,
    /// Its binlog transactions, in the order a replica applies them (one for a normal
    /// transaction, one per member for a hot-row group).
    pub groups: Vec<StreamGroup>,
}
