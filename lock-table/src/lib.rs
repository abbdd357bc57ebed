//! In-memory pessimistic lock table for the leader of a Raft region, after TiKV 6.0's
//! in-memory pessimistic locks ([TiKV RFC 77, "In-memory pessimistic locks"][rfc77]; TiKV
//! keeps them in `PeerPessimisticLocks`, `components/raftstore/src/store/txn_ext.rs`).
//!
//! [rfc77]: https://github.com/tikv/rfcs/blob/master/text/0077-in-memory-pessimistic-locks.md
//!
//! A pessimistic lock is kept only in the memory of the region leader, with no Raft proposal
//! and no disk write. That is safe because losing such a lock is like losing a pipelined
//! lock: prewrite notices and the transaction fails or amends, it never commits a lost
//! update. The locks are migrated when the region changes voluntarily: handed out to be
//! proposed before a leader transfer or a merge, moved by key range on a split.
//!
//! What is here:
//! - [`RegionLockTable`]: an ordered map from key to lock plus a `deleted` mark, with a
//!   [`LockStatus`], the Raft term and region version it is valid in, and exact memory
//!   accounting. [`RegionLockTable::try_insert`] is all-or-nothing and hands a refused batch
//!   back with a [`RefuseReason`] so the caller can use the replicated path instead.
//! - [`MemoryBudget`]: the node-wide budget (100 MiB by default, 512 KiB per region, 64 KiB
//!   per key) common to all tables of a node, changeable at run time, with the node-wide
//!   [`LockTableCounters`].
//! - [`SharedRegionLockTable`]: the thread-safe handle (`Arc` + `parking_lot::RwLock`).
//! - [`LockWaitManager`]: one wait queue per key, with timeouts; a release of the key wakes
//!   its waiter with the smallest `start_ts` first and the others after a delay (20 ms by
//!   default), whichever holder they queued under, and removes their wait-for edges.
//!   [`LockWaitManager::close`] ends every wait at once, for a node that stops.
//! - [`DeadlockDetector`]: a wait-for graph with edge expiry that returns the wait chain.
//!
//! What it is **not**: it knows nothing of Raft, MVCC or the persistent lock column. It
//! does not propose anything; migration methods return the locks for the caller to propose,
//! and the caller decides timeouts (such as TiKV's 10 s leader-transfer reactivation). The
//! deadlock detector is local to one process; electing a single detector for a cluster is
//! the caller's job. Lock values are generic through [`LockValue`], which only reports the
//! heap size of a lock.
//!
//! Hard limits: a key may be at most [`BudgetConfig::max_key_size`] bytes (64 KiB by
//! default; longer keys are refused as bad input, [`RefuseReason::KeyTooLarge`]); a region
//! holds at most `region_limit` bytes and a node `node_limit` bytes of locks, where every
//! entry is charged `key.len() + lock.heap_size() + ENTRY_OVERHEAD`.
//!
//! # Example
//!
//! ```
//! use surge_lock_table::{KeyRange, LockStatus, MemoryBudget, RefuseReason, RegionLockTable};
//!
//! let budget = MemoryBudget::default();
//! let mut table: RegionLockTable<Vec<u8>> = RegionLockTable::new(&budget);
//! table.become_leader(5, 1); // term 5, region version 1
//!
//! // Lock two keys in memory; the value here is the primary key.
//! table.try_insert(vec![(b"a".to_vec(), b"a".to_vec()), (b"m".to_vec(), b"a".to_vec())], 5, 1)?;
//! assert_eq!(budget.used(), table.memory_size());
//!
//! // A request from an old term is refused and gets its batch back for the Raft path.
//! let refused = table.try_insert(vec![(b"b".to_vec(), b"a".to_vec())], 4, 1).unwrap_err();
//! assert_eq!(refused.reason, RefuseReason::TermMismatch { table: 5, request: 4 });
//! assert_eq!(refused.batch.len(), 1);
//!
//! // Split at "k": this table keeps [.., "k"), the new one gets ["k", ..).
//! let right = table.split(2, &KeyRange::new(Vec::new(), b"k".to_vec()), &[KeyRange::from_start(b"k".to_vec())])?;
//! assert_eq!((table.len(), right[0].len()), (1, 1));
//! assert_eq!(budget.used(), table.memory_size() + right[0].memory_size());
//!
//! // A voluntary transfer hands out the locks to propose; losing leadership drops them.
//! let to_propose = table.start_transfer()?;
//! assert_eq!(to_propose.len(), 1);
//! assert_eq!(table.status(), LockStatus::TransferringLeader);
//! let lost = table.become_follower();
//! assert_eq!(lost.locks, 1);
//! drop(right);
//! assert_eq!(budget.used(), 0);
//! # Ok::<_, surge_lock_table::LockError>(())
//! ```
//!
//! # Crate features
//!
//! None.
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![warn(missing_debug_implementations, unreachable_pub)]
#![deny(clippy::unwrap_used)]

mod budget;
mod counters;
mod deadlock;
mod entry;
mod error;
mod key_range;
mod leadership;
mod lock_value;
mod lock_wait;
mod migration;
mod status;
mod table;
mod table_handle;
mod wait_config;
mod wait_handle;
mod wait_outcome;
mod wait_refused;
mod waiter;

pub use budget::{BudgetConfig, MemoryBudget};
pub use counters::LockTableCounters;
pub use deadlock::{Deadlock, DeadlockDetector, WaitForEntry};
pub use entry::{InsertReport, LockEntry, LockScan, LostLocks};
pub use error::{LockError, RefuseReason, Refused, Result};
pub use key_range::KeyRange;
pub use lock_value::LockValue;
pub use lock_wait::LockWaitManager;
pub use status::LockStatus;
pub use table::RegionLockTable;
pub use table_handle::SharedRegionLockTable;
pub use wait_config::WaitConfig;
pub use wait_handle::WaitHandle;
pub use wait_outcome::{WaitOutcome, WakeUpReport};
pub use wait_refused::WaitRefused;

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
