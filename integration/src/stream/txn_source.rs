//! [`TxnRecordSource`]: the follower's source over `surge-txn`'s stream records, read
//! through a node's coordinator.

use surge_txn::{StreamGroupKind, TxnClient};

use super::error::StreamError;
use super::follower::{Collection, RecordSource, Watermark};
use super::item::{StreamedGroup, StreamedTxn};
use super::retention::{Retention, plan_collection};

/// Delete transactions per collection call: a call runs on the follower's thread between
/// two rounds, so it is kept to some tens of milliseconds; a backlog is worked off a call
/// per round (about 40,000 records a second at 256 a transaction).
const COLLECT_BATCHES_PER_CALL: usize = 8;

/// Reads the cluster's stream records with a [`TxnClient`]
/// (`TxnClient::stream_resolved_ts`, `TxnClient::stream_scan`); with
/// [`TxnRecordSource::with_positions`], also publishes the node's position and collects the
/// records every node has (`TxnClient::stream_publish_position`,
/// `TxnClient::stream_collect`).
#[derive(Debug, Clone)]
pub struct TxnRecordSource {
    client: TxnClient,
    /// The owner id positions are published under, and the retention policy.
    positions: Option<(u64, Retention)>,
}

impl TxnRecordSource {
    /// A source reading through `client` that neither publishes a position nor collects.
    pub fn new(client: TxnClient) -> TxnRecordSource {
        TxnRecordSource {
            client,
            positions: None,
        }
    }

    /// Publishes positions as `owner` (the node id) and collects under `retention`.
    #[must_use]
    pub fn with_positions(mut self, owner: u64, retention: Retention) -> TxnRecordSource {
        self.positions = Some((owner, retention));
        self
    }
}

/// A settings claim's error: a store of another record layout is final (retrying would
/// never end), any other is the source's (retried).
fn claim_err(e: surge_txn::TxnError) -> StreamError {
    match e {
        e @ surge_txn::TxnError::StreamLayout { .. } => StreamError::Layout {
            detail: e.to_string(),
        },
        e => source_err(e),
    }
}

fn source_err(e: impl std::fmt::Display) -> StreamError {
    StreamError::Source {
        detail: e.to_string(),
    }
}

impl RecordSource for TxnRecordSource {
    fn claim_settings(&mut self, mine: &str) -> Result<String, StreamError> {
        let bytes = self
            .client
            .stream_claim_settings(mine.as_bytes())
            .map_err(claim_err)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn publish_position(&mut self, lower_record_ts: u64, done_ts: u64) -> Result<u64, StreamError> {
        match self.positions {
            Some((owner, _)) => self
                .client
                .stream_publish_position(owner, lower_record_ts, done_ts)
                .map_err(source_err),
            None => Ok(0),
        }
    }

    fn collect(&mut self) -> Result<Option<Collection>, StreamError> {
        let Some((owner, retention)) = self.positions else {
            return Ok(None);
        };
        // The positions, the clock and the mark are read in the transaction that raises the
        // mark, so a node publishing meanwhile is either counted or sees the new mark.
        let report = self
            .client
            .stream_collect_with(
                |positions, now_ms, mark| {
                    plan_collection(positions, owner, now_ms, mark, &retention)
                },
                COLLECT_BATCHES_PER_CALL,
            )
            .map_err(source_err)?;
        if report.txns == 0 {
            return Ok(None);
        }
        Ok(Some(Collection {
            below_record_ts: report.below_record_ts,
            keys: report.record_keys + report.payload_keys,
            more: report.more(),
        }))
    }

    fn watermark(&mut self) -> Result<Watermark, StreamError> {
        let w = self.client.stream_resolved_ts().map_err(source_err)?;
        Ok(Watermark {
            resolved: w.resolved_ts,
            lower_record_ts: w.lower_record_ts,
        })
    }

    fn scan(
        &mut self,
        after: u64,
        upto: u64,
        lower_record_ts: u64,
    ) -> Result<Vec<StreamedTxn>, StreamError> {
        let txns = self
            .client
            .stream_scan(after, upto, lower_record_ts)
            .map_err(source_err)?;
        // Consumed as converted: each group's record bytes are freed event by event as the
        // events decode, so a large transaction is held about once here, not twice.
        txns.into_iter()
            .map(|t| {
                let groups = t
                    .groups
                    .into_iter()
                    .map(|g| {
                        let standalone = g.kind == StreamGroupKind::Standalone;
                        let events =
                            g.into_decoded_events().map_err(|e| StreamError::BadGroup {
                                start_ts: t.start_ts,
                                commit_ts: t.commit_ts,
                                detail: e.to_string(),
                            })?;
                        Ok(StreamedGroup {
                            standalone,
                            events: events.into_iter().map(|e| e.body).collect(),
                        })
                    })
                    .collect::<Result<Vec<_>, StreamError>>()?;
                Ok(StreamedTxn {
                    commit_ts: t.commit_ts,
                    start_ts: t.start_ts,
                    groups,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_layout_is_final_other_errors_are_retried() {
        let layout = claim_err(surge_txn::TxnError::StreamLayout {
            found: "1".into(),
            expected: 2,
        });
        assert!(matches!(layout, StreamError::Layout { .. }), "{layout}");
        assert!(layout.to_string().contains("layout 1"), "{layout}");
        let other = claim_err(surge_txn::TxnError::TxnFinished);
        assert!(matches!(other, StreamError::Source { .. }), "{other}");
    }
}
