//! [`WriteBatch`]: changes applied atomically, together with the Raft index they come from.

use serde::{Deserialize, Serialize};

use super::cf::Cf;

/// One change of one column family.
///
/// More changes may be added (a range delete, say): an [`crate::Engine`] written outside this
/// crate matches it with a wildcard arm that refuses the write (an engine error), never one
/// that skips the change.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Modify {
    /// Set `key` to `value`.
    Put {
        /// Column family.
        cf: Cf,
        /// Engine key (already encoded).
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// Value.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// Remove `key`.
    Delete {
        /// Column family.
        cf: Cf,
        /// Engine key (already encoded).
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
}

impl Modify {
    /// The column family it changes.
    pub fn cf(&self) -> Cf {
        match self {
            Modify::Put { cf, .. } | Modify::Delete { cf, .. } => *cf,
        }
    }

    /// The engine key it changes.
    pub fn key(&self) -> &[u8] {
        match self {
            Modify::Put { key, .. } | Modify::Delete { key, .. } => key,
        }
    }

    /// Bytes of key and value it carries.
    pub fn size(&self) -> usize {
        match self {
            Modify::Put { key, value, .. } => key.len() + value.len(),
            Modify::Delete { key, .. } => key.len(),
        }
    }
}

/// Changes applied all at once, or not at all.
///
/// # Invariants
/// An engine applies a batch atomically and records `applied_index` with it, so after a crash
/// the engine's applied index says exactly which batches it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteBatch {
    /// The changes, applied in order.
    pub modifies: Vec<Modify>,
    /// The Raft index this batch comes from (0: not from the log).
    pub applied_index: u64,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.modifies.is_empty()
    }

    /// Bytes of keys and values it carries.
    pub fn size(&self) -> usize {
        self.modifies.iter().map(Modify::size).sum()
    }
}
