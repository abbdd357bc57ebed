//! [`RegionRecord`]: what a disk engine keeps of a region besides its data.

use serde::{Deserialize, Serialize};

/// A region's range and its state as the region layer encodes it (epoch, merge state), kept
/// by a disk engine in the same atomic batch as the data each change applies with (a
/// checkpoint of a `FjallRegion`), so a restart finds the region as of the engine's
/// recorded index and replays the log after it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionRecord {
    /// First user key of the range.
    pub start: Vec<u8>,
    /// User key after the range (empty: to the end of the key space).
    pub end: Vec<u8>,
    /// The region layer's own encoding of the rest (opaque to the engine).
    pub state: Vec<u8>,
}
