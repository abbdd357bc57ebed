//! A MariaDB-compatible binary log with group commit and large-transaction commit by rename.
//!
//! `surge-binlog` writes real MariaDB binlog files (format v4, CRC-32 checksums, MariaDB
//! GTIDs): `mariadb-binlog`, replication clients and CDC tools read them. It provides
//!
//! * an event codec ([`Event`], [`EventBody`]) for Format_description, Gtid_list,
//!   Binlog_checkpoint, GTID (with zero padding), Query, Annotate_rows, Table_map,
//!   Write/Update/Delete_rows v1, Xid and Rotate; decoding errors name file and offset;
//! * [`TxnCache`]: one transaction's events, in memory then spilled to
//!   `#binlog_cache_files/ML_<n>` with header space reserved at the front, savepoints,
//!   and helpers for rows of the table `surgedb`.`kv`;
//! * row events of any SQL table: [`BinlogTable`] (columns of [`BinlogType`]s) gives the
//!   Table_map with column types, metadata and names, [`TxnCache::table_rows`] logs
//!   [`SqlRowChange`]s of [`BinlogValue`]s as full row images, [`TxnCache::query`] logs
//!   DDL;
//! * [`Binlog`]: numbered files plus an index, rotation at `max_binlog_size`, group commit
//!   (one leader writes the queue and fsyncs once), and **commit by rename** for large
//!   spilled caches (MariaDB 11.7, MDEV-32014): the cache file becomes the next binlog file,
//!   so the log lock is held for a time that does not depend on the transaction's size;
//! * recovery at open ([`RecoveryReport`]), a reader across files ([`LogReader`],
//!   [`Binlog::reader`]) and an iterator of whole transactions ([`Transactions`]).
//!
//! Durability: with [`SyncPolicy::EveryGroup`] (the default) a commit returns only after
//! its bytes, and the name of the file holding them, are fsynced. Recovery keeps every
//! such commit (tested by killing a child process at each step of both commit paths, and
//! by replaying power cuts after every recorded I/O step). Recovery lists the transactions
//! of the files left in use: [`RecoveryReport::complete`] holds every one with its commit
//! event, acknowledged or not (all are committed now: commit your side of each), and
//! [`RecoveryReport::incomplete`] those without (roll your side back). A torn last event of a file left in use is cut; other damage stops
//! [`Binlog::open`] with [`Error::Corrupt`].
//!
//! It is **not** a replication server (no network protocol, no semi-sync), not a storage
//! engine (it does not apply rows), and not a general MySQL event library: it knows the
//! event types above; any other type decodes to [`DecodeError::UnknownType`].
//!
//! Hard limits: checksum CRC-32 only when writing; files up to 1 GiB before rotation (a
//! renamed transaction's file can be larger); one event at most 4 GiB; keys of the kv
//! table at most 3072 bytes; Unix only (uses `pwrite`, rename and directory fsync); one
//! writer per directory (a lock file enforces it).
//!
//! # Example
//!
//! ```
//! use surge_binlog::{Binlog, BinlogConfig};
//! # let dir = tempfile::tempdir().map_err(|e| surge_binlog::Error::Invalid { what: "tmp", detail: e.to_string() })?;
//! let log = Binlog::open(BinlogConfig::new(dir.path()))?;
//! let mut txn = log.new_cache();
//! txn.put(b"alpha", b"1")?;     // INSERT: alpha did not exist
//! let done = log.commit(txn, 42)?;
//! assert_eq!(done.gtid.to_string(), "0-1-1");
//!
//! let mut txn = log.new_cache();
//! txn.update(b"alpha", b"2")?;  // UPDATE: alpha exists now
//! txn.delete(b"alpha")?;        // DELETE: likewise
//! log.commit(txn, 43)?;
//!
//! let xids = log.reader()?.transactions().map(|t| t.map(|t| t.xid)).collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(xids, vec![Some(42), Some(43)]);
//! log.shutdown()?;
//! # Ok::<_, surge_binlog::Error>(())
//! ```
//!
//! # Crate features
//!
//! None.
#![forbid(unsafe_code)]
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![warn(missing_debug_implementations, unreachable_pub)]
#![deny(clippy::unwrap_used)]

mod binlog;
mod cache;
mod commit_info;
mod config;
mod crash;
mod decimal;
mod dir_lock;
mod error;
mod event;
mod fde;
mod file_reader;
mod group;
mod gtid;
mod gtid_state;
mod header;
mod index;
mod iotrace;
mod kv;
mod log_file;
mod query;
mod reader;
mod recovery;
mod rename;
mod row_image;
mod rows;
mod sql_rows;
mod stats;
mod table;
mod temporal;
mod transactions;
mod value;
mod wire;

pub use binlog::{Binlog, CommitInfo, CommitMethod, Position};
pub use cache::{CACHE_DIR_NAME, CACHE_FILE_PREFIX, KV_TABLE_ID, Savepoint, TxnCache};
pub use config::{
    BinlogConfig, DEFAULT_CACHE_BUFFER_SIZE, DEFAULT_CACHE_SYNC_INTERVAL,
    DEFAULT_LARGE_COMMIT_THRESHOLD, DEFAULT_MAX_BINLOG_SIZE, MIN_LARGE_COMMIT_THRESHOLD,
    SyncPolicy,
};
pub use crash::{CRASH_ENV, CRASH_SKIP_ENV, crash_points};
pub use error::{DecodeError, Error, Result};
pub use event::{Event, EventBody};
pub use fde::{FormatDescription, MARIADB_POST_HEADER_LENS, SERVER_VERSION};
pub use file_reader::{FileEvents, decode_file_bytes, read_file_events};
pub use gtid::{
    GTID_FL_ALLOW_PARALLEL, GTID_FL_DDL, GTID_FL_GROUP_COMMIT_ID, GTID_FL_STANDALONE,
    GTID_FL_TRANSACTIONAL, GTID_MAX_EVENT_LEN, GTID_MIN_BODY, Gtid, GtidEvent, GtidList,
};
pub use header::{
    BINLOG_MAGIC, CHECKSUM_LEN, ChecksumAlg, EventHeader, EventType, FLAG_ARTIFICIAL,
    FLAG_BINLOG_IN_USE, FLAG_SUPPRESS_USE, HEADER_LEN, IN_USE_FLAG_OFFSET,
};
pub use kv::{
    KV_DATABASE, KV_MAX_KEY_LEN, KV_MAX_VALUE_LEN, KV_TABLE, KvRow, ROWS_EVENT_TARGET_SIZE,
    kv_table_map,
};
pub use log_file::IO_SIZE;
pub use query::{BinlogCheckpoint, QueryEvent, Rotate};
pub use reader::LogReader;
pub use recovery::{RecoveryReport, TailTxn, TruncatedTail};
pub use rows::{MAX_TABLE_ID, ROWS_FLAG_STMT_END, RowsEvent, RowsKind, TableMap};
pub use sql_rows::SqlRowChange;
pub use stats::BinlogStats;
pub use table::{BinlogCharset, BinlogColumn, BinlogTable, BinlogType, MAX_COLUMNS};
pub use transactions::{Transaction, Transactions};
pub use value::{BinlogDate, BinlogDateTime, BinlogValue};

/// Test hooks: a trace of writes, fsyncs, renames and the log lock, to check their order.
#[doc(hidden)]
pub mod __iotrace {
    pub use crate::iotrace::{Step, mark, records_under, start, steps_under};
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
