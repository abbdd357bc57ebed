//! [`RowUpdate`]: what one hot-row update does to a row's bytes (the general form of
//! [`HotOp`]), [`BinlogRow`]: the row event a member logs, and [`HotRowOutcome`]: what
//! the member gets back from [`crate::TxnClient::hot_update_row`].

use std::fmt;
use std::sync::Arc;

use surge_binlog::{BinlogTable, SqlRowChange};

use super::hot_op::{HotOp, HotReject};

/// How many bytes of a non-integer value a [`HotReject::NotAnInteger`] quotes.
const REJECT_PREFIX: usize = 32;

/// One member's change of a hot row, as a SQL statement sees it: the row's new bytes from
/// its current bytes (`UPDATE t SET c = c + 1 WHERE id = ?` over an encoded row), and the
/// binlog row event that logs it.
///
/// Members of one group run one after the other in arrival order, each on the bytes its
/// predecessor produced, inside the group leader's transaction; `apply` must be a pure
/// function of `current` (it may be called on the leader's thread, never twice for one
/// member).
pub trait RowUpdate: Send + Sync + fmt::Debug {
    /// The row's new bytes from its current bytes, or why this member refuses (only this
    /// member fails; the rest of its group commits).
    ///
    /// # Errors
    /// A [`HotReject`]: [`HotReject::Refused`] carries a SQL error's code and text.
    fn apply(&self, current: &[u8]) -> Result<Vec<u8>, HotReject>;

    /// The binlog row event of this change, given the row's bytes before and after it
    /// (`None`: the client logs the change as a row of `surgedb`.`kv`, as for any write).
    /// Called only when the client has a binlog. An event whose values do not fit its
    /// table refuses this member with [`HotReject::Refused`].
    fn binlog(&self, before: &[u8], after: &[u8]) -> Option<BinlogRow> {
        let _ = (before, after);
        None
    }
}

/// A row change of a SQL table, to log as a row event: the table's description and the
/// change with full row images.
#[derive(Debug, Clone, PartialEq)]
pub struct BinlogRow {
    /// The table.
    pub table: Arc<BinlogTable>,
    /// The change.
    pub change: SqlRowChange,
}

/// [`HotOp`] is the integer case of [`RowUpdate`]: the row is decimal ASCII.
impl RowUpdate for HotOp {
    fn apply(&self, current: &[u8]) -> Result<Vec<u8>, HotReject> {
        let value = HotOp::decode(current).ok_or_else(|| HotReject::NotAnInteger {
            prefix: current.iter().take(REJECT_PREFIX).copied().collect(),
        })?;
        Ok(HotOp::encode(self.apply_to(value)?))
    }
}

/// What a successful [`crate::TxnClient::hot_update_row`] did for this member.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HotRowOutcome {
    /// Rows the update affected: 1, or 0 for a missing key.
    pub affected_rows: u64,
    /// The row this member saw (its predecessor's result, or the stored row); `None` when
    /// the key did not exist.
    pub before: Option<Vec<u8>>,
    /// The row it wrote (what `SELECT ... FROM UPDATE` returns); `None` when the key did not
    /// exist.
    pub after: Option<Vec<u8>>,
    /// The commit timestamp of the transaction holding this member's write; `None` when the
    /// group wrote nothing.
    pub commit_ts: Option<u64>,
    /// How many members' changes that one write held (1 when the member ran alone).
    pub group_writes: usize,
}

/// One kept member's change of the row in a committed group, as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotRowChange {
    /// The row the member saw.
    pub before: Vec<u8>,
    /// The row it wrote.
    pub after: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_op_as_a_row_update_works_on_decimal_ascii() {
        let op: &dyn RowUpdate = &HotOp::add(-3).at_least(0);
        assert_eq!(op.apply(b"10"), Ok(b"7".to_vec()));
        assert_eq!(
            op.apply(b"2"),
            Err(HotReject::BelowMin { value: -1, min: 0 })
        );
        let long = vec![b'x'; 40];
        assert_eq!(
            op.apply(&long),
            Err(HotReject::NotAnInteger {
                prefix: vec![b'x'; 32]
            })
        );
        assert_eq!(op.binlog(b"10", b"7"), None);
    }
}
