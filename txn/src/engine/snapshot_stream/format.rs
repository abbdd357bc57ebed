//! The constants of the snapshot stream's layout (drawn in the module docs) and the codes of
//! its column families.

use crate::engine::cf::Cf;

/// The first bytes of a stream: the format's name and version.
pub(super) const MAGIC: &[u8; 8] = b"SGSNAPS1";

/// Record tag: the header (the region's record and the applied index).
pub(super) const TAG_HEADER: u8 = 1;
/// Record tag: one entry of a column family.
pub(super) const TAG_ENTRY: u8 = 2;
/// Record tag: the end (counts and the whole stream's CRC).
pub(super) const TAG_END: u8 = 3;

/// Bytes before a record's payload: its tag and length.
pub(super) const RECORD_HEAD: usize = 5;
/// Bytes after a record's payload: its CRC.
pub(super) const RECORD_CRC: usize = 4;
/// Bytes of the header's payload before its variable parts: applied index, and the
/// lengths of start and end.
pub(super) const HEADER_FIXED: usize = 16;
/// Bytes of an entry's payload before its key: the column family and the key's length.
pub(super) const ENTRY_FIXED: usize = 5;
/// Bytes of the end record's payload.
pub(super) const END_PAYLOAD: usize = 20;

/// The largest payload of one record: a key and value can be no larger, since each came
/// from one Raft entry, which `surge-raft-lite` caps at 256 MiB (`MAX_BYTES_LEN`).
pub const SNAPSHOT_STREAM_MAX_RECORD: u32 = 256 << 20;

/// [`crate::SnapshotStreamWriter`] hands its buffer to the sink once it holds this much.
pub(super) const FLUSH_BYTES: usize = 512 << 10;

/// The largest piece [`crate::SnapshotStreamWriter`] hands its sink: a record larger than
/// this is given in several pieces.
pub const SNAPSHOT_STREAM_MAX_PIECE: usize = 1 << 20;

/// The name of a record tag, for errors.
pub(super) fn tag_name(tag: u8) -> &'static str {
    match tag {
        TAG_HEADER => "header",
        TAG_ENTRY => "entry",
        TAG_END => "end",
        _ => "unknown",
    }
}

/// The byte that stands for `cf` in an entry record.
pub(super) fn cf_code(cf: Cf) -> u8 {
    match cf {
        Cf::Lock => 0,
        Cf::Write => 1,
        Cf::Default => 2,
    }
}

/// The column family of an entry record's byte, if it is one.
pub(super) fn cf_of_code(code: u8) -> Option<Cf> {
    match code {
        0 => Some(Cf::Lock),
        1 => Some(Cf::Write),
        2 => Some(Cf::Default),
        _ => None,
    }
}
