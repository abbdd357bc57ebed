//! The MVCC vocabulary of the actions layer: locks, write records, mutations, the reader
//! that finds them (memory locks first) and the transaction that collects a batch.

mod error;
mod lock;
mod mutation;
mod reader;
mod txn;
mod write;

pub use error::{LockInfo, LockNotFoundReason, MvccError};
pub use lock::{Lock, LockType, SHORT_VALUE_MAX_LEN};
pub use mutation::{Mutation, PessimisticAction};
pub(crate) use reader::WriteWalk;
pub use reader::{MvccReader, TxnCommitRecord};
pub use txn::{MvccTxn, TxnWrites};
pub use write::{Write, WriteType};
