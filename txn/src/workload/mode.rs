//! [`WriteMode`]: how a benchmark transaction guards its writes.

use crate::{LockMode, TxnMode};

/// How a benchmark transaction writes: optimistic, or pessimistic in one lock mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Optimistic transactions: no lock before prewrite.
    Optimistic,
    /// Pessimistic transactions with every node in this lock mode.
    Pessimistic(LockMode),
}

impl WriteMode {
    /// The four modes, in the write-up's order.
    pub const ALL: [WriteMode; 4] = [
        WriteMode::Optimistic,
        WriteMode::Pessimistic(LockMode::Sync),
        WriteMode::Pessimistic(LockMode::Pipelined),
        WriteMode::Pessimistic(LockMode::InMemory),
    ];

    /// `optimistic`, `sync`, `pipelined` or `in-memory`.
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Optimistic => "optimistic",
            WriteMode::Pessimistic(m) => m.as_str(),
        }
    }

    /// The mode [`WriteMode::name`] gives (also `in_memory` and `inmemory`).
    pub fn parse(s: &str) -> Option<WriteMode> {
        Some(match s {
            "optimistic" => WriteMode::Optimistic,
            "sync" => WriteMode::Pessimistic(LockMode::Sync),
            "pipelined" => WriteMode::Pessimistic(LockMode::Pipelined),
            "in-memory" | "in_memory" | "inmemory" => WriteMode::Pessimistic(LockMode::InMemory),
            _ => return None,
        })
    }

    /// The transactions' mode.
    pub fn txn_mode(self) -> TxnMode {
        match self {
            WriteMode::Optimistic => TxnMode::Optimistic,
            WriteMode::Pessimistic(_) => TxnMode::Pessimistic,
        }
    }

    /// The lock mode the nodes need (`None`: any, optimistic transactions take no locks
    /// before prewrite).
    pub fn lock_mode(self) -> Option<LockMode> {
        match self {
            WriteMode::Optimistic => None,
            WriteMode::Pessimistic(m) => Some(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for mode in WriteMode::ALL {
            assert_eq!(WriteMode::parse(mode.name()), Some(mode));
        }
        assert_eq!(
            WriteMode::parse("in_memory"),
            Some(WriteMode::Pessimistic(LockMode::InMemory))
        );
        assert_eq!(WriteMode::parse("pessimistic"), None);
    }
}
