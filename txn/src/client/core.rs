//! [`ClientCore`]: what every clone of a client and every transaction share.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use surge_raft_lite::NodeId;

use super::config::ClientConfig;
use super::counters::Counters;
use super::heartbeat::Heartbeats;
use super::region_cache::RegionCache;
use crate::NodeRouter;

/// The shared state of a client: how to reach nodes, the region map, the meta leader, the
/// counters and the registry of transactions to heartbeat. The request paths are `impl`
/// blocks in the files named for them (`dispatch`, `resolver`, `snapshot`, `pessimistic`,
/// `two_pc`, `heartbeat`).
pub(crate) struct ClientCore {
    pub(crate) router: Arc<dyn NodeRouter>,
    pub(crate) config: ClientConfig,
    pub(crate) cache: RwLock<RegionCache>,
    /// The node believed to lead the meta group (placement and timestamps).
    pub(crate) meta_leader: Mutex<Option<NodeId>>,
    pub(crate) counters: Counters,
    pub(crate) heartbeats: Heartbeats,
    /// Threads that carry a transaction's requests to several regions at once.
    pub(crate) pool: super::batch_pool::BatchPool,
    /// Where committed transactions' secondaries go to be committed in the background (set
    /// once the core is shared; unset: committed before `commit` returns).
    pub(crate) secondaries:
        std::sync::OnceLock<crossbeam_channel::Sender<super::secondaries::SecondaryJob>>,
    /// The coordinator's binlog (`binlog_writer.rs`), set at construction.
    pub(crate) binlog: super::binlog_writer::BinlogSlot,
    /// Where this client's own GC hold stands (`gc_hold.rs`).
    pub(crate) gc_hold_state: Mutex<super::gc_hold::HoldState>,
    /// Serializes the meta rounds that set or release the hold (the state's lock is only
    /// held briefly: commits read it).
    pub(crate) gc_hold_round: Mutex<()>,
    /// The timestamp of this client's GC hold while it is in force (0: none), sent in every
    /// region request's [`crate::Context::gc_hold_ts`] (`gc_hold.rs`).
    pub(crate) gc_hold_floor: std::sync::atomic::AtomicU64,
    /// Until when (wall-clock milliseconds) the hold may be claimed (`gc_hold.rs`).
    pub(crate) gc_hold_claim_until: std::sync::atomic::AtomicU64,
    /// The start timestamps of this client's open transactions, with how many share each
    /// (`open_txns.rs`): the GC hold stays at or below the oldest.
    pub(crate) open_txns: Mutex<std::collections::BTreeMap<u64, u32>>,
    /// The largest stream watermark this client returned (`stream_reader.rs`), so the ones
    /// it returns never go back.
    pub(crate) stream_resolved: std::sync::atomic::AtomicU64,
    /// The largest `lower_record_ts` this client's watermarks returned: where the next
    /// watermark's lock scan may start (`stream_reader.rs`).
    pub(crate) stream_lock_floor: std::sync::atomic::AtomicU64,
    /// Physical milliseconds of the `T0` of the last watermark call that scanned every
    /// lane's locks from the lane's start (`stream_reader.rs`, `FULL_LOCK_SCAN_EVERY_MS`).
    pub(crate) stream_full_scan_ms: std::sync::atomic::AtomicU64,
    /// Stream lanes known to be in the lane registry, each with a timestamp at or above its
    /// registration's commit_ts (`stream_commit.rs`): a record of the lane may take a
    /// `record_ts` at or above it without a fresh one.
    pub(crate) stream_lanes: Mutex<std::collections::HashMap<Vec<u8>, u64>>,
    /// The last lane list a reader read from the registry, and the timestamp it was read at
    /// (`stream_reader.rs`): lanes are never removed, so it holds every lane of a record
    /// committed at or below that timestamp.
    pub(crate) stream_lanes_read: Mutex<(u64, Vec<Vec<u8>>)>,
}

impl std::fmt::Debug for ClientCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCore")
            .field("config", &self.config)
            .field("regions_cached", &self.cache.read().len())
            .field("meta_leader", &*self.meta_leader.lock())
            .finish_non_exhaustive()
    }
}

impl ClientCore {
    /// The lock TTL to ask for now for a transaction started at `start_ts`: its age plus
    /// the configured TTL. TTLs count from the physical part of `start_ts`, so a plain
    /// configured TTL would let a lock taken late in a long transaction be born expired
    /// (TiDB computes its pessimistic lock TTL the same way).
    pub(crate) fn lock_ttl_for(&self, start_ts: u64) -> u64 {
        age_ms(start_ts).saturating_add(self.config.lock_ttl_ms)
    }
}

/// Milliseconds since the physical part of `ts` by the local clock (0 if the clock is
/// behind).
pub(crate) fn age_ms(ts: u64) -> u64 {
    crate::ts::wall_clock_ms().saturating_sub(crate::physical_ms(ts))
}
