//! Hot-row group commit: concurrent updates of one key merged into groups, each group applied in
//! arrival order and made durable with one write and one flush.
//!
//! This is the coordinator of AliSQL's hot-row group commit ("group update" behind the inventory
//! hints; <https://github.com/alibaba/AliSQL>, and the "Inventory hint" / hot-row update pages
//! of Alibaba Cloud ApsaraDB RDS for MySQL and PolarDB for MySQL):
//! the first request for a key becomes its group's leader, later ones join as followers, and two
//! slots per key let one group collect while the other commits. The caller supplies a
//! [`GroupExecutor`] that loads the row, applies each member's operation, and makes the group
//! durable once; the crate knows nothing about storage.
//!
//! What it adds over AliSQL:
//! - **No timed wait for a lone leader.** A leader with no other request in flight for its key
//!   commits at once, so one client runs as fast as with the feature off (AliSQL always sleeps
//!   `hotspot_update_max_wait_time` and halves single-thread throughput).
//! - **Per-member failure.** A member whose operation is rejected or misses
//!   `target_affect_row(n)` fails alone; the rest of its group commits.
//! - **Per-member results, one wake-up call per group**: each member gets its own result (its own
//!   post-update value, what AliSQL's `SELECT ... FROM UPDATE` returns) in its own mailbox; the group's
//!   members are woken with one `notify_all` on a condition variable only they sleep on.
//!
//! It is **not** a lock manager, a transaction layer or a storage engine: it serializes requests
//! per key only among requests that go through the same [`Coordinator`], and it does not retry.
//!
//! Hard limits:
//! - One group per key commits at a time (pipelining is collect-while-commit, not overlapping
//!   commits); different keys run fully in parallel.
//! - A failure of the load or durable step, or a panic in the executor, fails every member of
//!   that group whose change was in it ([`Error::Load`], [`Error::Durable`],
//!   [`Error::ExecutorPanicked`]); members already rejected alone keep their own error.
//! - `max_group_size` >= 1, `max_wait` <= 1 s ([`ConfigError`]).
//! - Each waiting request blocks its own thread (it yields the CPU up to
//!   [`Config::spin_yields`] times, then sleeps): this is a blocking, thread-per-request API.
//!
//! # Example
//!
//! A counter that must stay non-negative, decremented by clients (a stock count):
//!
//! ```
//! use std::convert::Infallible;
//! use std::sync::Mutex;
//! use surge_hotspot::{Applied, Config, Coordinator, GroupExecutor, Hints};
//!
//! struct Stock(Mutex<i64>);
//!
//! impl GroupExecutor for Stock {
//!     type Key = u64;
//!     type Op = i64;               // delta
//!     type Output = i64;           // the member's own post-update value
//!     type Change = i64;           // new value
//!     type Reject = &'static str;
//!     type Error = Infallible;
//!     type Group = i64;            // the row image while the group is built
//!
//!     fn begin(&self, _key: &u64) -> Result<i64, Infallible> {
//!         Ok(*self.0.lock().expect("not poisoned"))
//!     }
//!     fn apply(&self, row: &i64, delta: &i64) -> Result<Applied<i64, i64>, &'static str> {
//!         let next = row + delta;
//!         if next < 0 {
//!             return Err("out of stock");
//!         }
//!         Ok(Applied::one_row(next, next))
//!     }
//!     fn accept(&self, row: &mut i64, next: i64) {
//!         *row = next;
//!     }
//!     fn commit(&self, _key: &u64, row: i64) -> Result<(), Infallible> {
//!         // A real executor appends the group's records and fdatasyncs here, then publishes.
//!         *self.0.lock().expect("not poisoned") = row;
//!         Ok(())
//!     }
//! }
//!
//! let hot = Coordinator::new(Stock(Mutex::new(2)), Config::default())?;
//! let hints = Hints::hot_update(); // commit_on_success rollback_on_fail target_affect_row(1)
//! assert_eq!(hot.execute(&1, -1, hints)?, 1);
//! assert_eq!(hot.execute(&1, -1, hints)?, 0);
//! let err = hot.execute(&1, -1, hints).unwrap_err();
//! assert!(err.is_member_failure() && err.rollback_requested());
//! assert_eq!(hot.stats().leader_count, 3);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Crate features
//! - `serde`: `Serialize` and `Deserialize` for [`Hints`], so a request's hints can travel
//!   with it. Off by default.
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![warn(missing_debug_implementations, unreachable_pub)]
#![deny(clippy::unwrap_used)]

mod config;
mod coordinator;
mod error;
mod executor;
mod group;
mod hints;
mod key_state;
mod registry;
mod stats;
mod waiter;

pub use config::{Config, DEFAULT_MAX_GROUP_SIZE, DEFAULT_MAX_WAIT, DEFAULT_SPIN_YIELDS};
pub use coordinator::Coordinator;
pub use error::{ConfigError, Error, Phase};
pub use executor::{Applied, GroupExecutor};
pub use hints::Hints;
pub use stats::Stats;

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
