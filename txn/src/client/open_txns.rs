//! The start timestamps of a client's open transactions: a coordinator's GC hold stays at
//! or below the oldest (`gc_hold.rs`), so that garbage collection never passes a
//! transaction still running, however long it runs (TiDB holds its GC safe point at the
//! oldest running transaction the same way), up to [`MAX_TXN_HOLD`].

use std::time::Duration;

use super::core::ClientCore;

/// The longest a running transaction holds the GC hold back (TiDB's
/// `tidb_gc_max_wait_time`, 24 hours): an older one no longer counts, and once collection
/// passes its start its reads and locks are refused as too old.
pub(crate) const MAX_TXN_HOLD: Duration = Duration::from_secs(24 * 3600);

impl ClientCore {
    /// Records a transaction started at `start_ts` as open (only a client that keeps a GC
    /// hold needs to know: the others skip the lock).
    pub(crate) fn open_txn(&self, start_ts: u64) {
        if self.config.gc_hold.is_none() {
            return;
        }
        *self.open_txns.lock().entry(start_ts).or_insert(0) += 1;
    }

    /// Records that the transaction started at `start_ts` ended.
    pub(crate) fn close_txn(&self, start_ts: u64) {
        if self.config.gc_hold.is_none() {
            return;
        }
        let mut open = self.open_txns.lock();
        if let Some(n) = open.get_mut(&start_ts) {
            *n -= 1;
            if *n == 0 {
                open.remove(&start_ts);
            }
        }
    }

    /// The start of the oldest open transaction not older than [`MAX_TXN_HOLD`] before
    /// `now_ms` (physical milliseconds).
    pub(crate) fn oldest_open_txn(&self, now_ms: u64) -> Option<u64> {
        let cap = crate::ts::ts_behind(now_ms, crate::ts::duration_ms(MAX_TXN_HOLD));
        self.open_txns.lock().range(cap..).next().map(|(ts, _)| *ts)
    }
}
