//! [`TxnClient`]: the entry point: begins transactions and reads at fresh timestamps.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::batch_pool::BatchPool;
use super::config::ClientConfig;
use super::core::ClientCore;
use super::counters::{ClientCounters, Counters};
use super::error::TxnError;
use super::heartbeat::{self, Heartbeats};
use super::mode::TxnMode;
use super::region_cache::RegionCache;
use super::secondaries;
use super::snapshot::KvPair;
use super::transaction::Transaction;
use crate::NodeRouter;

/// A transactional client of a cluster. Cheap to clone; clones share the region cache, the
/// counters and one heartbeat thread, which stops when the last clone is dropped.
///
/// The client talks to nodes only through the [`NodeRouter`]: placement and timestamps go to
/// the meta group's leader, data requests to each region's leader, following leader hints and
/// epoch changes.
#[derive(Debug, Clone)]
pub struct TxnClient {
    core: Arc<ClientCore>,
    /// The hot-row group coordinator (`hot_update.rs`), shared by clones.
    pub(super) hot: Arc<super::hot_update::HotUpdater>,
}

impl TxnClient {
    /// A client reaching the cluster through `router`. Does no I/O: regions are loaded on
    /// first use.
    pub fn new(router: Arc<dyn NodeRouter>, config: ClientConfig) -> TxnClient {
        let (heartbeats, stopped) = Heartbeats::new();
        let interval = config.heartbeat_interval;
        // The binlog is opened first; its recovery needs the client, so it runs below.
        let (binlog, pending) = super::binlog_writer::open_slot(config.binlog.as_ref());
        let core = Arc::new_cyclic(|me| ClientCore {
            router,
            config,
            cache: RwLock::new(RegionCache::default()),
            meta_leader: Mutex::new(None),
            counters: Counters::default(),
            heartbeats,
            pool: BatchPool::new(me.clone(), BATCH_THREADS),
            secondaries: std::sync::OnceLock::new(),
            binlog,
            gc_hold_state: Mutex::new(super::gc_hold::HoldState::Unset),
            gc_hold_round: Mutex::new(()),
            gc_hold_floor: std::sync::atomic::AtomicU64::new(0),
            gc_hold_claim_until: std::sync::atomic::AtomicU64::new(0),
            open_txns: Mutex::new(std::collections::BTreeMap::new()),
            stream_resolved: std::sync::atomic::AtomicU64::new(0),
            stream_lock_floor: std::sync::atomic::AtomicU64::new(0),
            stream_full_scan_ms: std::sync::atomic::AtomicU64::new(0),
            stream_lanes: parking_lot::Mutex::new(std::collections::HashMap::new()),
            stream_lanes_read: parking_lot::Mutex::new((0, Vec::new())),
        });
        heartbeat::spawn(Arc::downgrade(&core), interval, stopped);
        if core.config.async_secondaries {
            let _ = core
                .secondaries
                .set(secondaries::spawn(Arc::downgrade(&core)));
        }
        core.recover_binlog_slot(pending);
        let hot = Arc::new(super::hot_update::HotUpdater::new(Arc::clone(&core)));
        TxnClient { core, hot }
    }

    /// As [`TxnClient::new`], but fails if [`ClientConfig::binlog`] is set and the binlog
    /// could not be opened or its recovery (settling the transactions a crash left in
    /// doubt) failed. ([`TxnClient::new`] returns a client whose every commit then fails.)
    ///
    /// # Errors
    /// [`TxnError::Binlog`], or the cluster error that stopped recovery.
    pub fn open(router: Arc<dyn NodeRouter>, config: ClientConfig) -> Result<TxnClient, TxnError> {
        let client = TxnClient::new(router, config);
        if let Some(b) = client.core.binlog.get()? {
            b.check()?;
        }
        // Before the first transaction: a crash before the first refresh must find the
        // transactions it leaves in doubt covered.
        let mut bo = super::backoff::Backoff::new(&client.core.config);
        client.core.publish_gc_hold(&mut bo)?;
        Ok(client)
    }

    /// The shared state, for the `impl TxnClient` blocks of sibling files.
    pub(super) fn core(&self) -> &Arc<ClientCore> {
        &self.core
    }

    /// The coordinator's binlog, when [`ClientConfig::binlog`] is set and it opened.
    pub fn binlog(&self) -> Option<&surge_binlog::Binlog> {
        self.core.binlog.get().ok().flatten().map(|b| &b.log)
    }

    /// What binlog recovery did when this client started (`None` without a binlog).
    pub fn binlog_recovery(&self) -> Option<super::binlog_recovery::BinlogRecoveryReport> {
        let b = self.core.binlog.get().ok().flatten()?;
        Some(b.recovery.lock().clone())
    }

    /// Begins a transaction: takes its `start_ts` from the timestamp oracle.
    ///
    /// # Errors
    /// When the meta group cannot be reached within the backoff budget.
    pub fn begin(&self, mode: TxnMode) -> Result<Transaction, TxnError> {
        let start_ts = self.core.get_ts()?;
        tracing::debug!(start_ts, %mode, "begin");
        Ok(Transaction::new(Arc::clone(&self.core), mode, start_ts))
    }

    /// A fresh timestamp from the oracle.
    ///
    /// # Errors
    /// As [`TxnClient::begin`].
    pub fn current_ts(&self) -> Result<u64, TxnError> {
        self.core.get_ts()
    }

    /// The committed value of `key` at a fresh timestamp (resolving locks it meets).
    ///
    /// # Errors
    /// [`TxnError::KeyIsLocked`] when a live transaction's lock blocks the read for the whole
    /// backoff budget; region errors after retries.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, TxnError> {
        let ts = self.core.get_ts()?;
        self.core.snapshot_get(key, ts)
    }

    /// At most `limit` committed pairs of `[start, end)` (`end` `None`: to the end of the key
    /// space) at a fresh timestamp, in key order across regions.
    ///
    /// # Errors
    /// As [`TxnClient::get`].
    pub fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>, TxnError> {
        let ts = self.core.get_ts()?;
        self.core.snapshot_scan(start, end, limit, ts)
    }

    /// How many regions the client has cached.
    pub fn region_cache_len(&self) -> usize {
        self.core.cache.read().len()
    }

    /// A snapshot of the client's counters (shared by all clones).
    pub fn counters(&self) -> ClientCounters {
        self.core.counters.snapshot()
    }

    /// The client's configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.core.config
    }

    /// Whether transaction `start_ts` is currently being heartbeated by this client.
    pub fn is_heartbeating(&self, start_ts: u64) -> bool {
        self.core.heartbeats.is_registered(start_ts)
    }
}

/// The most threads a client's [`BatchPool`] starts: a transaction's region batches block
/// on their nodes, so this is well above the core count.
const BATCH_THREADS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_and_transactions_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<TxnClient>();
        send::<Transaction>();
    }
}
