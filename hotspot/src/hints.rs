//! Per-request hints, after AliSQL's inventory hints
//! `/*+ commit_on_success rollback_on_fail target_affect_row(n) */`.

/// The hints a request carries.
///
/// Only a request with `commit_on_success` joins a group (unless the coordinator's automatic
/// mode picks it up); anything else takes the ordinary path: lock the key, apply, make durable,
/// unlock, alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
// With `serde`, the fields in this order are the encoding (`surgedb`'s wire protocol pins
// its bytes): add new ones at the end.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Hints {
    commit_on_success: bool,
    rollback_on_fail: bool,
    target_affect_row: Option<u64>,
}

impl Hints {
    /// No hints: the request takes the ordinary, ungrouped path.
    pub const fn new() -> Self {
        Self {
            commit_on_success: false,
            rollback_on_fail: false,
            target_affect_row: None,
        }
    }

    /// The usual hot-row hint set of AliSQL's inventory-hint benchmark:
    /// `commit_on_success rollback_on_fail target_affect_row(1)`.
    pub const fn hot_update() -> Self {
        Self::new()
            .commit_on_success()
            .rollback_on_fail()
            .target_affect_row(1)
    }

    /// `commit_on_success`: commit as soon as the operation succeeds. Required to join a group.
    pub const fn commit_on_success(mut self) -> Self {
        self.commit_on_success = true;
        self
    }

    /// `rollback_on_fail`: on failure the caller's whole transaction is to be rolled back. The
    /// coordinator never keeps a failed member's change; the flag comes back on the error
    /// ([`Error::rollback_requested`](crate::Error::rollback_requested)) so the transaction layer
    /// can act on it.
    pub const fn rollback_on_fail(mut self) -> Self {
        self.rollback_on_fail = true;
        self
    }

    /// `target_affect_row(n)`: fail (alone) unless exactly `n` rows are affected.
    pub const fn target_affect_row(mut self, n: u64) -> Self {
        self.target_affect_row = Some(n);
        self
    }

    /// Whether `commit_on_success` is set.
    pub const fn is_commit_on_success(&self) -> bool {
        self.commit_on_success
    }

    /// Whether `rollback_on_fail` is set.
    pub const fn is_rollback_on_fail(&self) -> bool {
        self.rollback_on_fail
    }

    /// The `target_affect_row` count, if set.
    pub const fn target(&self) -> Option<u64> {
        self.target_affect_row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_each_hint() {
        let cases = [
            (Hints::new(), false, false, None),
            (Hints::new().commit_on_success(), true, false, None),
            (Hints::new().rollback_on_fail(), false, true, None),
            (Hints::new().target_affect_row(3), false, false, Some(3)),
            (Hints::hot_update(), true, true, Some(1)),
        ];
        for (h, cos, rof, t) in cases {
            assert_eq!(h.is_commit_on_success(), cos, "{h:?}");
            assert_eq!(h.is_rollback_on_fail(), rof, "{h:?}");
            assert_eq!(h.target(), t, "{h:?}");
        }
        assert_eq!(Hints::default(), Hints::new());
    }
}
