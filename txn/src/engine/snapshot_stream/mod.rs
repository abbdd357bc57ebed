//! A region's snapshot as a stream of self-delimiting records, written and read piece by
//! piece, so a snapshot of a large region is never held whole in memory on either side.
//!
//! # Layout
//!
//! All integers are little-endian.
//!
//! ```text
//! stream  = magic header entry* end                 (nothing may follow `end`)
//! magic   = "SGSNAPS1"                              (8 bytes: format name and version)
//! record  = tag:u8  len:u32  payload[len]  crc:u32  (crc: CRC-32 of tag, len and payload)
//!
//! header  tag 1  payload = applied_index:u64
//!                          start_len:u32 start[start_len]   (the region's first user key)
//!                          end_len:u32   end[end_len]       (user key after it; empty: none)
//!                          state[..]                        (the region layer's own bytes)
//! entry   tag 2  payload = cf:u8 (0 lock, 1 write, 2 default)
//!                          key_len:u32 key[key_len]         (an engine key in the range)
//!                          value[..]                        (the rest of the payload)
//! end     tag 3  payload = entries:u64                      (entry records before it)
//!                          data_bytes:u64                   (sum of their key and value lengths)
//!                          stream_crc:u32                   (CRC-32 of every byte before it)
//! ```
//!
//! The header is a [`RegionRecord`](crate::RegionRecord) and the applied index of the engine
//! the entries were read from; the engine knows nothing more of regions.
//!
//! # Invariants
//! - A record is handed on by [`SnapshotStreamReader`] only once its own CRC matched, and
//!   an entry only if its key lies in the header's range: a disk engine applies entries as
//!   they arrive, so damage must be caught before a record is applied, and no entry may
//!   land in another region's range.
//! - The stream is complete only once the end record matched the count, byte sum and
//!   whole-stream CRC and nothing follows it: a truncated stream (even one cut at a
//!   record boundary), a dropped or repeated record is an error, never a shorter snapshot.
//! - A payload is at most [`SNAPSHOT_STREAM_MAX_RECORD`] bytes, so a damaged length cannot make the
//!   reader allocate more.

mod error;
mod format;
mod reader;
mod writer;

#[cfg(test)]
mod snapshot_stream_test;

pub use error::SnapshotStreamError;
pub use format::{SNAPSHOT_STREAM_MAX_PIECE, SNAPSHOT_STREAM_MAX_RECORD};
pub use reader::{SnapshotStreamEntry, SnapshotStreamHeader, SnapshotStreamReader};
pub use writer::SnapshotStreamWriter;
