//! The engine layer: a region's data in three column families (knows no Percolator).

mod cf;
mod crash_points;
mod error;
mod fjall_engine;
mod fjall_options;
mod fjall_region;
mod key_codec;
mod mem_engine;
mod newest_writes;
mod region_record;
mod snapshot_stream;
mod traits;
mod write_batch;

pub use cf::Cf;
pub use crash_points::{ENGINE_CRASH_ENV, ENGINE_CRASH_SKIP_ENV, engine_crash_points};
pub use error::EngineError;
pub use fjall_engine::{EngineIdentity, FjallEngine};
pub use fjall_options::FjallOptions;
pub use fjall_region::FjallRegion;
pub use key_codec::{decode_key, encode_key, encode_key_with_ts, split_ts};
pub use mem_engine::MemEngine;
pub use region_record::RegionRecord;
pub use snapshot_stream::{
    SNAPSHOT_STREAM_MAX_PIECE, SNAPSHOT_STREAM_MAX_RECORD, SnapshotStreamEntry,
    SnapshotStreamError, SnapshotStreamHeader, SnapshotStreamReader, SnapshotStreamWriter,
};
pub use traits::{Engine, EntriesView, EntryVisitor, Snapshot};
pub use write_batch::{Modify, WriteBatch};
