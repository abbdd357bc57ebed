//! The engine layer: a region's data in three column families (knows no Percolator).

mod cf;
mod error;
mod key_codec;
mod mem_engine;
mod traits;
mod write_batch;

pub use cf::Cf;
pub use error::EngineError;
pub use key_codec::{decode_key, encode_key, encode_key_with_ts, split_ts};
pub use mem_engine::MemEngine;
pub use traits::{Engine, Snapshot};
pub use write_batch::{Modify, WriteBatch};
