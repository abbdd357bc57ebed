//! [`WireHotOp`] and [`WireHints`]: a hot-row update's operation and hints on the wire.

use serde::{Deserialize, Serialize};
use surge_txn::{HotHints, HotOp};

/// [`HotOp`] on the wire: add `delta` within optional bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireHotOp {
    /// Added to the current value.
    pub delta: i64,
    /// The new value may not be below this.
    pub min: Option<i64>,
    /// The new value may not be above this.
    pub max: Option<i64>,
}

impl From<HotOp> for WireHotOp {
    fn from(op: HotOp) -> WireHotOp {
        WireHotOp {
            delta: op.delta,
            min: op.min,
            max: op.max,
        }
    }
}

impl From<WireHotOp> for HotOp {
    fn from(op: WireHotOp) -> HotOp {
        HotOp {
            delta: op.delta,
            min: op.min,
            max: op.max,
        }
    }
}

/// [`HotHints`] on the wire (AliSQL's `commit_on_success`, `rollback_on_fail`,
/// `target_affect_row(n)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireHints {
    /// `commit_on_success` (required to join a group).
    pub commit_on_success: bool,
    /// `rollback_on_fail`.
    pub rollback_on_fail: bool,
    /// `target_affect_row(n)`.
    pub target_affect_row: Option<u64>,
}

impl From<HotHints> for WireHints {
    fn from(h: HotHints) -> WireHints {
        WireHints {
            commit_on_success: h.is_commit_on_success(),
            rollback_on_fail: h.is_rollback_on_fail(),
            target_affect_row: h.target(),
        }
    }
}

impl From<WireHints> for HotHints {
    fn from(w: WireHints) -> HotHints {
        let mut h = HotHints::new();
        if w.commit_on_success {
            h = h.commit_on_success();
        }
        if w.rollback_on_fail {
            h = h.rollback_on_fail();
        }
        if let Some(n) = w.target_affect_row {
            h = h.target_affect_row(n);
        }
        h
    }
}
