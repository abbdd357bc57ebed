//! [`TxnMode`]: how a transaction guards the keys it writes.

/// How a transaction guards the keys it writes.
///
/// More modes may be added, so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TxnMode {
    /// Percolator as published: writes are buffered and conflicts are found at prewrite, so a
    /// conflicting transaction aborts at commit with [`crate::TxnError::WriteConflict`].
    Optimistic,
    /// Each write (and `get_for_update`) first takes a pessimistic lock on its key at a fresh
    /// `for_update_ts`, waiting for other holders, so commit does not fail on write conflicts
    /// (TiDB's pessimistic transactions over TiKV).
    Pessimistic,
}

impl TxnMode {
    /// The mode's name (`optimistic`, `pessimistic`).
    pub fn as_str(self) -> &'static str {
        match self {
            TxnMode::Optimistic => "optimistic",
            TxnMode::Pessimistic => "pessimistic",
        }
    }
}

impl std::fmt::Display for TxnMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
