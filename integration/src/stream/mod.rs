//! The cluster's replica stream: every coordinator's committed transactions merged into
//! one MariaDB binlog in commit_ts order, one GTID domain, kept by every node and served
//! to MariaDB replicas over the replication protocol (see the package README, "Replica
//! stream").
//!
//! - [`StreamWriter`] writes a node's copy ([`StreamConfig`]), byte-identical on every
//!   node, durable through a [`Cursor`];
//! - [`StreamFiles`] is its readable side (files and the end of complete groups);
//! - [`StreamFollower`] reads the cluster's stream records below the watermark and feeds
//!   the writer.

mod config;
mod crash;
mod cursor;
mod error;
mod follower;
mod item;
mod published;
mod retention;
mod txn_source;
mod writer;

pub use config::{
    DEFAULT_LARGE_GROUP, DEFAULT_STREAM_DOMAIN_ID, DEFAULT_STREAM_FILE_SIZE, DEFAULT_STREAM_ROUND,
    DEFAULT_STREAM_SERVER_ID, STREAM_BASE_NAME, StreamConfig,
};
pub use crash::points as crash_points;
pub use cursor::{CURSOR_FILE, Cursor};
pub use error::StreamError;
pub use follower::{
    Collection, FollowerConfig, FollowerStatus, RecordSource, StreamFollower, Watermark,
};
pub use item::{StreamedGroup, StreamedTxn};
pub use published::{START_GRACE, StreamFiles};
pub use retention::{Retention, plan_collection};
pub use txn_source::TxnRecordSource;
pub use writer::StreamWriter;
