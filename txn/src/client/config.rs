//! [`ClientConfig`]: the client's timeouts and retry budget.

use std::time::Duration;

/// The client's timeouts and retry budget. `Default` gives TiDB-like values scaled for a
/// local cluster.
///
/// Build it with [`ClientConfig::default`] and the `with_*` methods, or assign the public
/// fields of a default value: the struct is `#[non_exhaustive]`, so later settings can be
/// added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// TTL of the locks a transaction takes, in milliseconds, counted from the physical part
    /// of its `start_ts`. A lock whose holder stops heartbeating may be rolled back by others
    /// once it ran out. Default 3000.
    pub lock_ttl_ms: u64,
    /// How long one pessimistic lock request may wait on the node for a conflicting lock
    /// before failing with [`crate::TxnError::LockWaitTimeout`] (TiKV's
    /// `wait-for-lock-timeout`, TiDB's `innodb_lock_wait_timeout`). `None`: never wait; a
    /// held key is resolved and retried within the backoff budget instead. Default 1 s.
    ///
    /// This is the cluster's only lock-wait setting: each lock request carries it and the
    /// nodes wait as long as it asks (their deadlock detection keeps up with waits of any
    /// length), so clients with different settings can share a cluster.
    pub wait_for_lock_timeout: Option<Duration>,
    /// Total time one operation may spend sleeping between retries (region errors, nodes
    /// down, live locks) before its last error reaches the caller. Default 20 s.
    pub max_backoff: Duration,
    /// First backoff sleep; each further sleep doubles up to `backoff_cap`. Default 2 ms.
    pub backoff_base: Duration,
    /// Longest single backoff sleep. Default 500 ms.
    pub backoff_cap: Duration,
    /// How often the background thread looks for transactions whose primary lock needs a
    /// heartbeat. A transaction is heartbeated once it is older than half its lock TTL.
    /// Default 1 s.
    pub heartbeat_interval: Duration,
    /// Backoff budget of the best-effort cleanup done when a [`crate::Transaction`] is
    /// dropped without commit or rollback. Default 1 s.
    pub drop_cleanup_budget: Duration,
    /// Commit a transaction's secondary keys in the background once its primary committed
    /// (the commit point), as TiDB does, instead of before `commit` returns. Readers meeting
    /// a secondary lock meanwhile commit it from the primary's record. Default false: the
    /// secondaries' locks then stay held longer and conflicting transactions wait on them
    /// (measured with the `write_only` example: faster for sync locks, no faster for
    /// in-memory ones).
    pub async_secondaries: bool,
    /// With `async_secondaries`: at most this many keys in one background commit request.
    /// A transaction's secondaries are grouped by region, as every commit request is, and
    /// each region's keys cut into batches of at most `secondary_batch_keys` keys and
    /// `secondary_batch_bytes` bytes, sent one batch at a time with `secondary_pace`
    /// between batches. A transaction whose secondaries fit in one batch is committed at
    /// once, so small transactions are unaffected. 0 counts as 1. Default 256: one Raft
    /// proposal of a few KiB of keys, so a 256 MiB transaction of 64 KiB rows (4095
    /// secondaries over 16 regions) goes in 16 batches.
    pub secondary_batch_keys: usize,
    /// With `async_secondaries`: at most this many bytes in one background commit request,
    /// counting each key and the short value its commit moves from the lock into the commit
    /// record (values longer than [`crate::SHORT_VALUE_MAX_LEN`] stay where prewrite put
    /// them and cost the commit nothing). A key larger than the bound goes alone. Default
    /// 1 MiB, an eighth of TiKV's 8 MiB `raft-entry-max-size`.
    pub secondary_batch_bytes: usize,
    /// With `async_secondaries`: the pause between two background commit batches of one
    /// transaction. One batch of a transaction is in flight at a time, so a large
    /// transaction's secondaries take about `t / (t + pace)` of one request stream, `t`
    /// being a batch's round trip (a Raft round), instead of every region's leader at once,
    /// and other transactions' requests are not queued behind thousands of commit records.
    /// The price: the large transaction's secondaries stay locked longer (readers meeting
    /// one resolve it from the primary's record, which is correct but costs them a status
    /// check). `None`: no pause (batches still go one at a time). Default 2 ms, about one
    /// Raft round of a durable three-replica group on a small machine: at most about half
    /// of one request stream.
    pub secondary_pace: Option<Duration>,
    /// The binlog this client, as a transaction coordinator, writes every commit to (see
    /// the crate README, "Binlog at commit"). Open the client with [`crate::TxnClient::open`]
    /// to learn whether it opened. Default `None`.
    pub binlog: Option<super::binlog_config::BinlogOptions>,
    /// The stream records this client writes as a coordinator with a binlog: one per
    /// transaction with binlog events, in the same transaction, for the cluster's one
    /// replication stream ([`crate::TxnClient::stream_scan`]). Default: on, 5 s skew bound,
    /// 1 MiB chunks ([`crate::StreamOptions`]).
    pub stream: crate::StreamOptions,
    /// The GC hold this client keeps as a coordinator ([`super::gc_hold::GcHoldOptions`]):
    /// set it when the cluster collects garbage and the client has a binlog. Open the
    /// client with [`crate::TxnClient::open`], which sets the hold before it returns; one
    /// made with [`crate::TxnClient::new`] sets it on its first heartbeat tick and refuses
    /// commits with a binlog until then. Default `None`.
    pub gc_hold: Option<super::gc_hold::GcHoldOptions>,
}

impl Default for ClientConfig {
    fn default() -> ClientConfig {
        ClientConfig {
            lock_ttl_ms: 3000,
            wait_for_lock_timeout: Some(Duration::from_secs(1)),
            max_backoff: Duration::from_secs(20),
            backoff_base: Duration::from_millis(2),
            backoff_cap: Duration::from_millis(500),
            heartbeat_interval: Duration::from_secs(1),
            drop_cleanup_budget: Duration::from_secs(1),
            async_secondaries: false,
            secondary_batch_keys: 256,
            secondary_batch_bytes: 1 << 20,
            secondary_pace: Some(Duration::from_millis(2)),
            binlog: None,
            stream: crate::StreamOptions::default(),
            gc_hold: None,
        }
    }
}

impl ClientConfig {
    /// Sets [`ClientConfig::lock_ttl_ms`].
    #[must_use]
    pub fn with_lock_ttl_ms(mut self, ms: u64) -> Self {
        self.lock_ttl_ms = ms;
        self
    }

    /// Sets [`ClientConfig::wait_for_lock_timeout`].
    #[must_use]
    pub fn with_wait_for_lock_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.wait_for_lock_timeout = timeout;
        self
    }

    /// Sets [`ClientConfig::max_backoff`].
    #[must_use]
    pub fn with_max_backoff(mut self, budget: Duration) -> Self {
        self.max_backoff = budget;
        self
    }

    /// Sets [`ClientConfig::backoff_base`].
    #[must_use]
    pub fn with_backoff_base(mut self, sleep: Duration) -> Self {
        self.backoff_base = sleep;
        self
    }

    /// Sets [`ClientConfig::backoff_cap`].
    #[must_use]
    pub fn with_backoff_cap(mut self, sleep: Duration) -> Self {
        self.backoff_cap = sleep;
        self
    }

    /// Sets [`ClientConfig::heartbeat_interval`].
    #[must_use]
    pub fn with_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// Sets [`ClientConfig::drop_cleanup_budget`].
    #[must_use]
    pub fn with_drop_cleanup_budget(mut self, budget: Duration) -> Self {
        self.drop_cleanup_budget = budget;
        self
    }

    /// Sets [`ClientConfig::async_secondaries`].
    #[must_use]
    pub fn with_async_secondaries(mut self, on: bool) -> Self {
        self.async_secondaries = on;
        self
    }

    /// Sets [`ClientConfig::secondary_batch_keys`].
    #[must_use]
    pub fn with_secondary_batch_keys(mut self, keys: usize) -> Self {
        self.secondary_batch_keys = keys;
        self
    }

    /// Sets [`ClientConfig::secondary_batch_bytes`].
    #[must_use]
    pub fn with_secondary_batch_bytes(mut self, bytes: usize) -> Self {
        self.secondary_batch_bytes = bytes;
        self
    }

    /// Sets [`ClientConfig::secondary_pace`].
    #[must_use]
    pub fn with_secondary_pace(mut self, pace: Option<Duration>) -> Self {
        self.secondary_pace = pace;
        self
    }

    /// Sets [`ClientConfig::binlog`].
    #[must_use]
    pub fn with_binlog(mut self, binlog: Option<super::binlog_config::BinlogOptions>) -> Self {
        self.binlog = binlog;
        self
    }

    /// Sets [`ClientConfig::stream`].
    #[must_use]
    pub fn with_stream(mut self, stream: crate::StreamOptions) -> Self {
        self.stream = stream;
        self
    }

    /// Sets [`ClientConfig::gc_hold`].
    #[must_use]
    pub fn with_gc_hold(mut self, hold: Option<super::gc_hold::GcHoldOptions>) -> Self {
        self.gc_hold = hold;
        self
    }
}
