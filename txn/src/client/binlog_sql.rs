//! Caller-given binlog events outside a transaction's commit: DDL logged on its own
//! ([`TxnClient::binlog_query`]) and the group of a transaction that gave events but wrote
//! no key.

use super::core::ClientCore;
use super::error::TxnError;
use super::txn_client::TxnClient;

impl ClientCore {
    /// Writes `cache` (caller-given events of a transaction that wrote no key) as a binlog
    /// group of its own with xid `xid` (a timestamp from the oracle, so no other group has
    /// it). Nothing to do without a binlog.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the binlog is unusable or stopped, or the write fails.
    pub(crate) fn write_caller_group(
        &self,
        cache: surge_binlog::TxnCache,
        xid: u64,
    ) -> Result<(), TxnError> {
        match self.binlog.get()? {
            Some(b) => b.write_standalone(cache, xid).map(|_| ()),
            None => Ok(()),
        }
    }
}

impl TxnClient {
    /// Logs `sql` (DDL such as `CREATE TABLE`, run with `database` current) as a binlog
    /// group of its own: a GTID, the Query event, an Xid with a fresh timestamp. For DDL
    /// outside a transaction (see [`crate::Transaction::binlog_query`] for DDL inside one).
    /// With streaming on ([`crate::ClientConfig::stream`]) it is first committed to the
    /// stream as a transaction holding only its stream record. Returns once the group is
    /// durable. A no-op without a binlog.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] for a database name over 255 bytes, an empty statement, a
    /// binlog that is unusable or stopped, or a failed write; the oracle's error when no
    /// timestamp can be had; the stream record's commit errors (nothing logged then).
    pub fn binlog_query(&self, database: &str, sql: &str) -> Result<(), TxnError> {
        let Some(binlog) = self.core().binlog.get()? else {
            return Ok(());
        };
        let mut cache = binlog.log.new_cache();
        cache.query(database, sql).map_err(|e| TxnError::Binlog {
            detail: format!("DDL statement: {e}"),
        })?;
        let xid = self.core().get_ts()?;
        // With streaming, the statement goes to the stream first, as a transaction of its
        // own (`stream_commit.rs`), then to the coordinator's binlog.
        self.core().commit_caller_group(cache, xid).map(|_| ())
    }
}
