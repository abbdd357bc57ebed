//! [`TxnRecordSource`]: the follower's source over `surge-txn`'s stream records, read
//! through a node's coordinator.

use surge_txn::{StreamGroupKind, TxnClient};

use super::error::StreamError;
use super::follower::{RecordSource, Watermark};
use super::item::{StreamedGroup, StreamedTxn};

/// Reads the cluster's stream records with a [`TxnClient`]
/// (`TxnClient::stream_resolved_ts`, `TxnClient::stream_scan`).
#[derive(Debug, Clone)]
pub struct TxnRecordSource {
    client: TxnClient,
}

impl TxnRecordSource {
    /// A source reading through `client`.
    pub fn new(client: TxnClient) -> TxnRecordSource {
        TxnRecordSource { client }
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
            .map_err(source_err)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
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
