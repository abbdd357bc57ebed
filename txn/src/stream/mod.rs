//! The replication stream's durable source: the *stream record* each transaction with
//! binlog events writes under [`STREAM_PREFIX`] in the same Percolator transaction, and the
//! types a reader of the stream gets back ([`StreamTxn`], [`StreamWatermark`]).
//!
//! The commit side is `client/stream_commit.rs`, the reading side
//! `client/stream_reader.rs` ([`crate::TxnClient::stream_resolved_ts`],
//! [`crate::TxnClient::stream_scan`]); this module holds the byte layouts and settings they
//! share.

mod chunks;
mod config;
mod error;
mod keys;
mod position;
mod record;
mod watermark;

pub(crate) use chunks::{Assembled, ChunkAssembler, external_chunks, external_value, split_chunks};
pub use config::StreamOptions;
pub use error::StreamDecodeError;
pub use keys::STREAM_PREFIX;
pub(crate) use keys::{
    KEY_LAYOUT, LANES_PREFIX, LAYOUT_MARK, RESERVED_END, SETTINGS_KEY, is_reserved_key,
    is_table_lane, lane_of, lane_registry_key, layout_of_settings, payload_key, record_key,
    record_key_parts, record_ts_range, records_of_table_key,
};
pub use position::StreamPosition;
pub(crate) use position::{
    COLLECTED_KEY, POSITIONS_END, POSITIONS_PREFIX, SWEPT_KEY, decode_mark, decode_position,
    encode_position, position_key,
};
pub use record::{
    STREAM_RECORD_VERSION, StreamGroup, StreamGroupKind, decode_stream_record,
    encode_stream_record, stream_events_from_cache_bytes,
};
pub use watermark::{StreamTxn, StreamWatermark};
