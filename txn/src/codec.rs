//! How a region's data is laid out in its [`Engine`](crate::Engine): encoded keys, timestamps
//! and the records of the lock and write column families.
//!
//! For tools and tests that read or write engine data below the transaction layer (a dump
//! tool, a decoder fuzzer, an action's unit test): a [`TxnClient`](crate::TxnClient) user
//! never handles these. Keys are memcomparable ([`encode_key`]), versions are suffixed as
//! `!ts` so the newest sorts first ([`encode_key_with_ts`]), and timestamps are TiKV's hybrid
//! `physical_ms << LOGICAL_BITS | logical` ([`compose_ts`]).

pub use crate::engine::{decode_key, encode_key, encode_key_with_ts, split_ts};
pub use crate::mvcc::{Lock, LockType, SHORT_VALUE_MAX_LEN, Write, WriteType};
pub use crate::ts::{LOGICAL_BITS, compose_ts, physical_ms};
