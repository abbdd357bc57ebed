//! Errors a member can get back, and configuration errors.

use std::fmt::{Debug, Display};
use std::sync::Arc;

/// Which executor call panicked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// [`GroupExecutor::begin`](crate::GroupExecutor::begin).
    Begin,
    /// [`GroupExecutor::apply`](crate::GroupExecutor::apply).
    Apply,
    /// [`GroupExecutor::accept`](crate::GroupExecutor::accept).
    Accept,
    /// [`GroupExecutor::commit`](crate::GroupExecutor::commit).
    Commit,
    /// Dropping a value the executor produced (the group image, a change, an output) after the
    /// group had already failed or had nothing to commit.
    Drop,
}

impl Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Begin => "begin",
            Phase::Apply => "apply",
            Phase::Accept => "accept",
            Phase::Commit => "commit",
            Phase::Drop => "drop",
        })
    }
}

/// Why one request did not commit. `R` is the executor's `Reject`, `E` its `Error`.
///
/// `Rejected` and `TargetAffectRow` concern this member alone (the rest of its group committed
/// or failed on its own). The other variants are group failures shared by every member whose
/// change was in the group; `E` is behind an `Arc` so each member gets the same error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error<R, E>
where
    R: Display + Debug,
    E: std::error::Error + 'static,
{
    /// The executor refused this member's operation (a bound check); only this member failed.
    #[error(
        "hotspot: operation rejected at position {position} of a group of {group_size}: {reason}"
    )]
    Rejected {
        /// The executor's reason.
        reason: R,
        /// 0-based arrival position in the group.
        position: usize,
        /// Members in the group.
        group_size: usize,
        /// The request carried `rollback_on_fail`.
        rollback: bool,
    },
    /// `target_affect_row(expected)` was not met; only this member failed.
    #[error("hotspot: target_affect_row({expected}) not met: {actual} rows affected")]
    TargetAffectRow {
        /// The hint's count.
        expected: u64,
        /// Rows the operation would have affected.
        actual: u64,
        /// The request carried `rollback_on_fail`.
        rollback: bool,
    },
    /// Loading the row for the group failed; nothing of the group committed.
    #[error("hotspot: loading the row for a group of {group_size} failed; nothing committed")]
    Load {
        /// The executor's error.
        #[source]
        source: Arc<E>,
        /// Members in the group.
        group_size: usize,
    },
    /// The group's durable step failed; nothing of the group is committed.
    #[error("hotspot: durable step failed for a group of {group_size}; nothing committed")]
    Durable {
        /// The executor's error.
        #[source]
        source: Arc<E>,
        /// Members in the group.
        group_size: usize,
    },
    /// The executor panicked; the whole group failed and nothing of it was made durable by us.
    #[error(
        "hotspot: executor panicked in {phase}; group of {group_size} failed, nothing committed"
    )]
    ExecutorPanicked {
        /// The call that panicked.
        phase: Phase,
        /// Members in the group.
        group_size: usize,
    },
}

impl<R, E> Error<R, E>
where
    R: Display + Debug,
    E: std::error::Error + 'static,
{
    /// True when only this member failed (`Rejected`, `TargetAffectRow`); false for a group
    /// failure.
    pub fn is_member_failure(&self) -> bool {
        matches!(self, Error::Rejected { .. } | Error::TargetAffectRow { .. })
    }

    /// True when the request carried `rollback_on_fail` and failed on its own, so the caller's
    /// transaction is to be rolled back. Group failures never commit anything, so the whole
    /// transaction is rolled back in any case.
    pub fn rollback_requested(&self) -> bool {
        match self {
            Error::Rejected { rollback, .. } | Error::TargetAffectRow { rollback, .. } => *rollback,
            _ => true,
        }
    }
}

/// A [`Config`](crate::Config) value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `max_group_size` must be at least 1.
    #[error("hotspot config: max_group_size must be >= 1, got {value}")]
    MaxGroupSize {
        /// The value given.
        value: usize,
    },
    /// `max_wait` must not exceed one second.
    #[error("hotspot config: max_wait must be <= 1 s, got {value_us} us")]
    MaxWait {
        /// The value given, in microseconds.
        value_us: u128,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("disk full")]
    struct DiskFull;

    type E = Error<String, DiskFull>;

    #[test]
    fn member_and_group_failures_are_told_apart() {
        let cases: Vec<(E, bool, bool, &str)> = vec![
            (
                Error::Rejected {
                    reason: "stock < 0".into(),
                    position: 2,
                    group_size: 5,
                    rollback: false,
                },
                true,
                false,
                "rejected at position 2 of a group of 5: stock < 0",
            ),
            (
                Error::TargetAffectRow {
                    expected: 1,
                    actual: 0,
                    rollback: true,
                },
                true,
                true,
                "target_affect_row(1) not met: 0 rows affected",
            ),
            (
                Error::Durable {
                    source: Arc::new(DiskFull),
                    group_size: 3,
                },
                false,
                true,
                "durable step failed for a group of 3",
            ),
            (
                Error::Load {
                    source: Arc::new(DiskFull),
                    group_size: 1,
                },
                false,
                true,
                "loading the row",
            ),
            (
                Error::ExecutorPanicked {
                    phase: Phase::Apply,
                    group_size: 4,
                },
                false,
                true,
                "panicked in apply",
            ),
        ];
        for (e, member, rollback, text) in cases {
            assert_eq!(e.is_member_failure(), member, "{e}");
            assert_eq!(e.rollback_requested(), rollback, "{e}");
            assert!(e.to_string().contains(text), "{e} lacks {text}");
        }
        let e: E = Error::Durable {
            source: Arc::new(DiskFull),
            group_size: 3,
        };
        let src = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(src.as_deref(), Some("disk full"));
    }
}
