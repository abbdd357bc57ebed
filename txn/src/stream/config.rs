//! [`StreamOptions`]: whether and how a coordinator writes stream records.

use std::time::Duration;

/// How a coordinator ([`crate::TxnClient`]) writes stream records (set in
/// [`crate::ClientConfig::stream`]). They are written only by a client with a binlog
/// ([`crate::ClientConfig::binlog`]); without one these settings do nothing.
///
/// Build it with [`StreamOptions::default`] and the `with_*` methods; the struct is
/// `#[non_exhaustive]`, so later settings can be added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamOptions {
    /// Write a stream record with every transaction that has binlog events. Default true.
    pub enabled: bool,
    /// The longest a committing transaction may take from the timestamp of its record
    /// (`record_ts`, taken before the record is prewritten: a recent timestamp the
    /// transaction holds, or a fresh one) to its commit timestamp, in the physical parts of
    /// the two timestamps; past it the transaction is rolled back with
    /// [`crate::TxnError::StreamRecordTooSlow`] (retryable). Stream readers rely on every
    /// reader and writer using the same bound: give every coordinator of a cluster the same
    /// value. Under 1 s (a region's one-phase drift bound) records commit in two phases
    /// only. Default 5 s.
    pub max_record_skew: Duration,
    /// Largest chunk of an encoded record stored under one key (a larger record takes
    /// several keys). Default 1 MiB.
    pub chunk_bytes: usize,
    /// Largest encoded record stored under the record keys themselves, prewritten last.
    /// A larger one is stored *external*: its chunks under payload keys prewritten with
    /// the transaction's other keys, and only a 16-byte value under its record key, so
    /// that the time between `record_ts` and the commit timestamp does not grow with the
    /// record (a 256 MiB record's own prewrite took about 8 s on a small machine, past the
    /// 5 s skew bound). Default 8 MiB.
    pub inline_max_bytes: usize,
}

impl Default for StreamOptions {
    fn default() -> StreamOptions {
        StreamOptions {
            enabled: true,
            max_record_skew: Duration::from_secs(5),
            chunk_bytes: 1 << 20,
            inline_max_bytes: 8 << 20,
        }
    }
}

impl StreamOptions {
    /// Sets [`StreamOptions::enabled`].
    #[must_use]
    pub fn with_enabled(mut self, on: bool) -> Self {
        self.enabled = on;
        self
    }

    /// Sets [`StreamOptions::max_record_skew`].
    #[must_use]
    pub fn with_max_record_skew(mut self, skew: Duration) -> Self {
        self.max_record_skew = skew;
        self
    }

    /// Sets [`StreamOptions::chunk_bytes`] (0 counts as 1).
    #[must_use]
    pub fn with_chunk_bytes(mut self, bytes: usize) -> Self {
        self.chunk_bytes = bytes;
        self
    }

    /// Sets [`StreamOptions::inline_max_bytes`].
    #[must_use]
    pub fn with_inline_max_bytes(mut self, bytes: usize) -> Self {
        self.inline_max_bytes = bytes;
        self
    }

    /// [`StreamOptions::max_record_skew`] in milliseconds.
    pub(crate) fn max_skew_ms(&self) -> u64 {
        u64::try_from(self.max_record_skew.as_millis()).unwrap_or(u64::MAX)
    }
}
