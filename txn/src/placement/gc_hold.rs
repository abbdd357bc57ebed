//! [`GcHold`]: a floor under the cluster's GC safe point, kept in the meta group for its
//! owner (PD's service safe points, which TiCDC and BR set the same way).

use serde::{Deserialize, Serialize};

/// A floor under the GC safe point, owned by one party (a transaction coordinator, say):
/// while it is in the meta group and not expired, [`TxnClient::safe_point_older_than`]
/// never returns a safe point above `ts`, so every version a read at `ts` or later sees
/// stays.
///
/// The owner refreshes it while it runs; a crashed owner's hold stays until it comes back
/// or `expires_ms` passes, which is what lets a coordinator that was down longer than the
/// GC life time still learn the fate of the transactions it left in doubt.
///
/// [`TxnClient::safe_point_older_than`]: crate::TxnClient::safe_point_older_than
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GcHold {
    /// Who set it (a node id for a node's coordinator); one hold per owner.
    pub owner: u64,
    /// No safe point above this timestamp.
    pub ts: u64,
    /// Wall-clock milliseconds (Unix epoch, the meta leader's clock when it was set) after
    /// which the hold no longer counts and is dropped.
    pub expires_ms: u64,
}

impl GcHold {
    /// Whether the hold no longer counts at wall-clock time `now_ms`.
    pub fn expired_at(&self, now_ms: u64) -> bool {
        self.expires_ms <= now_ms
    }
}
