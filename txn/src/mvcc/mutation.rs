//! [`Mutation`]: one key's change in a prewrite.

use serde::{Deserialize, Serialize};

/// One key's change, as sent in a prewrite (TiKV's `Mutation`).
///
/// More may be added (TiKV also has `Insert`), so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mutation {
    /// Write `value` at `key`.
    Put {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
        /// The new value.
        #[serde(with = "serde_bytes")]
        value: Vec<u8>,
    },
    /// Delete `key`.
    Delete {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Lock `key` without changing it (commits as a `Lock` record).
    Lock {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
    /// Fail with `AlreadyExist` if `key` has a visible value; writes nothing.
    CheckNotExists {
        /// The key.
        #[serde(with = "serde_bytes")]
        key: Vec<u8>,
    },
}

impl Mutation {
    /// The key this mutation touches.
    pub fn key(&self) -> &[u8] {
        match self {
            Mutation::Put { key, .. }
            | Mutation::Delete { key }
            | Mutation::Lock { key }
            | Mutation::CheckNotExists { key } => key,
        }
    }

    /// Whether the prewrite checks that the key has no value (TiKV's `should_not_exist`:
    /// here only [`Mutation::CheckNotExists`]). That check is a read at the transaction's
    /// `start_ts` which leaves no lock behind, so the caller raises the region's `max_ts`
    /// to `start_ts` before the prewrite, under the key's latches (see
    /// [`crate::prewrite`]).
    pub(crate) fn should_not_exist(&self) -> bool {
        matches!(self, Mutation::CheckNotExists { .. })
    }
}

/// What prewrite must check about a key's pessimistic lock (TiKV's `PessimisticAction`).
///
/// More may be added (TiKV also has `DoConstraintCheck`), so match with a wildcard arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PessimisticAction {
    /// An optimistic key (or a key of an optimistic transaction): no pessimistic lock expected.
    SkipPessimisticCheck,
    /// The transaction locked this key pessimistically: the lock must be there (or amended).
    DoPessimisticCheck,
}
