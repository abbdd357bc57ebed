//! Percolator actions, one file each as in TiKV's `storage/txn/actions`: pure functions that
//! read through an [`MvccReader`] and record their changes in an [`MvccTxn`], with the
//! vocabulary they speak ([`Mutation`], [`TxnProps`], [`TxnStatus`], ...). Applying (or
//! replicating) the changes is the region's job.
//!
//! For those who test or reuse the storage side of the protocol below the node (the crate's
//! own action tests run them on a [`MemEngine`](crate::MemEngine) snapshot); a
//! [`TxnClient`](crate::TxnClient) user never calls them, and a transport implementer meets
//! only the types that travel in [`KvRequest`](crate::rpc::KvRequest) and
//! [`KvResponse`](crate::rpc::KvResponse).
//!
//! Every action is deterministic in its inputs: the same snapshot and arguments give the
//! same changes, so a retried request is answered the same way (idempotence is tested per
//! action).

mod acquire_pessimistic_lock;
mod check_txn_status;
mod commit;
mod gc;
mod one_pc;
mod pessimistic_rollback;
mod prewrite;
mod resolve_lock;
mod rollback;
mod scan_lock;
mod scan_writes;
mod snapshot_read;
mod txn_heartbeat;

pub use acquire_pessimistic_lock::{
    PessimisticLockOutcome, PessimisticLockRequest, acquire_pessimistic_lock,
};
pub use check_txn_status::{TxnStatus, check_txn_status};
pub use commit::commit;
pub use gc::{GcScan, GcStats, gc, gc_scan};
pub use one_pc::commit_ts_floor;
pub use pessimistic_rollback::pessimistic_rollback;
pub use prewrite::{CommitKind, TxnProps, prewrite};
pub use resolve_lock::resolve_lock;
pub use rollback::rollback;
pub use scan_lock::scan_lock;
pub use scan_writes::{CommittedPut, ScannedWrites, scan_writes};
pub use snapshot_read::{batch_get, check_ts_conflict, point_get, scan};
pub use txn_heartbeat::txn_heartbeat;

pub use crate::mvcc::{
    Mutation, MvccReader, MvccTxn, PessimisticAction, TxnCommitRecord, TxnWrites,
};
