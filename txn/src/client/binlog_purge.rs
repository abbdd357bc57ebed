//! Removing a coordinator's old binlog files (MariaDB's `binlog_expire_logs_seconds`)
//! without taking a file its binlog recovery could still read.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::error::TxnError;
use super::txn_client::TxnClient;
use crate::physical_ms;

/// How far below the start of the oldest unsettled prepare the bound is kept: timestamps
/// may run a few seconds ahead of the wall clock (the oracle resumes from its durable
/// limit), and file times are the wall clock's.
const OPEN_PREPARE_MARGIN: Duration = Duration::from_secs(60);

impl TxnClient {
    /// Deletes this coordinator's binlog files last written before `before`
    /// ([`surge_binlog::Binlog::purge_before`]: oldest first, never the current file), and
    /// none that its recovery could still need: the bound is kept a minute below the start
    /// of the oldest transaction whose prepare record is not settled (its group, written or
    /// left for recovery to write, lies after the end of the log its prepare saw, in a file
    /// written after that start). Without a binlog, nothing. Returns the names deleted.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] when a file's time cannot be read or a file cannot be removed.
    pub fn purge_binlog_before(&self, before: SystemTime) -> Result<Vec<String>, TxnError> {
        let Some(binlog) = self.core().binlog.get().ok().flatten() else {
            return Ok(Vec::new());
        };
        let bound = match binlog.journal.oldest_open() {
            Some(start_ts) => {
                let started = UNIX_EPOCH + Duration::from_millis(physical_ms(start_ts));
                before.min(
                    started
                        .checked_sub(OPEN_PREPARE_MARGIN)
                        .unwrap_or(UNIX_EPOCH),
                )
            }
            None => before,
        };
        binlog
            .log
            .purge_before(bound)
            .map_err(|e| TxnError::Binlog {
                detail: format!("purge the binlog before {bound:?}: {e}"),
            })
    }
}
