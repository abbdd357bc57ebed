//! WAL record payloads: one group's write (or checkpoint) per logical record, so a torn
//! batch loses whole groups' writes, never half of one (entries without the hard state
//! written with them).
//!
//! A group's write larger than the log's record limit is split: [`REC_PART`] records carry
//! its leading entries, and the final [`REC_WRITE`] or [`REC_CHECKPOINT`] record carries the
//! rest with the snapshot position and hard state. Replay holds parts aside and applies
//! them only with their final record, so a tear between them loses the whole write (never
//! acknowledged), never a part of it.

use std::ops::Range;

use crate::codec::{self, Reader};
use crate::{Entry, Error, GroupWrite, HardState, RaftState, Result, SnapshotFile, SnapshotMeta};

/// A group's write: snapshot position and the file holding its data, entries, hard
/// state, applied in that order.
pub(crate) const REC_WRITE: u8 = 1;
/// A group's whole state, written when old segments are retired; replaces what came before.
pub(crate) const REC_CHECKPOINT: u8 = 2;

/// Leading entries of a split write or checkpoint; applied only with the final record.
pub(crate) const REC_PART: u8 = 3;

/// Bytes of a part record besides its entries: type, group, entry count.
const PART_OVERHEAD: usize = 1 + 8 + 4;
/// Bytes of an encoded entry besides its data: term, index, kind, data length.
const ENTRY_OVERHEAD: usize = 8 + 8 + 1 + 4;
/// Bytes of a record besides an entry's data that every entry must leave room for: an
/// entry of at most `limit - ENTRY_RECORD_OVERHEAD` bytes always fits a part record.
pub(crate) const ENTRY_RECORD_OVERHEAD: usize = PART_OVERHEAD + ENTRY_OVERHEAD;

const HAS_SNAP: u8 = 1;
const HAS_HS: u8 = 2;
/// The snapshot's file is named in the record (name, body length, CRC). Records written
/// before snapshot files were per snapshot lack it: their data is in `snap-<group>.bin`.
const HAS_FILE: u8 = 4;

fn encode_write(out: &mut Vec<u8>, w: &GroupWrite, file: Option<&SnapshotFile>, entries: &[Entry]) {
    codec::put_u8(out, REC_WRITE);
    codec::put_u64(out, w.group);
    let snap = w.snapshot.as_ref().map(|s| (&s.meta, file));
    put_body(out, snap, entries, w.hard_state.as_ref());
}

fn encode_checkpoint(
    out: &mut Vec<u8>,
    group: u64,
    st: &RaftState,
    file: Option<&SnapshotFile>,
    entries: &[Entry],
) {
    codec::put_u8(out, REC_CHECKPOINT);
    codec::put_u64(out, group);
    let snap = st.snapshot.as_ref().map(|s| (&s.meta, file));
    put_body(out, snap, entries, Some(&st.hard_state));
    codec::put_conf_state(out, &st.conf);
}

fn encode_part(out: &mut Vec<u8>, group: u64, entries: &[Entry]) {
    codec::put_u8(out, REC_PART);
    codec::put_u64(out, group);
    codec::put_entries(out, entries);
}

/// The largest entry data a record of at most `limit` bytes can carry.
pub(crate) fn max_entry_data(limit: usize) -> usize {
    limit
        .saturating_sub(ENTRY_RECORD_OVERHEAD)
        .min(codec::MAX_BYTES_LEN)
}

/// How a group's entries are spread over records of at most `limit` bytes: the ranges of
/// the part records, then the range the final record carries (`final_overhead` is the
/// final record's size without entries).
///
/// # Errors
/// [`Error::WriteTooLarge`] if an entry, or the final record without entries, exceeds
/// the limit.
fn split(
    entries: &[Entry],
    final_overhead: usize,
    limit: usize,
) -> Result<(Vec<Range<usize>>, Range<usize>)> {
    if final_overhead > limit {
        return Err(Error::WriteTooLarge {
            what: "log record header (snapshot position, hard state, membership)",
            size: final_overhead,
            limit,
        });
    }
    let len = |e: &Entry| ENTRY_OVERHEAD + e.data.len();
    for e in entries {
        if e.data.len() > max_entry_data(limit) {
            return Err(Error::WriteTooLarge {
                what: "log entry",
                size: e.data.len(),
                limit: max_entry_data(limit),
            });
        }
    }
    let total: usize = entries.iter().map(len).sum();
    if final_overhead + total <= limit {
        return Ok((Vec::new(), 0..entries.len()));
    }
    let mut parts = Vec::new();
    let (mut start, mut bytes) = (0, PART_OVERHEAD);
    for (i, e) in entries.iter().enumerate() {
        if bytes + len(e) > limit {
            parts.push(start..i);
            (start, bytes) = (i, PART_OVERHEAD);
        }
        bytes += len(e);
    }
    let rest = bytes - PART_OVERHEAD;
    if final_overhead + rest <= limit {
        return Ok((parts, start..entries.len()));
    }
    parts.push(start..entries.len());
    Ok((parts, entries.len()..entries.len()))
}

/// Frames `w` into `out` (for segment `seq`) as records of at most `limit` bytes: parts,
/// then the final write record, which names `file` as the snapshot's file. `payload` is
/// scratch space. Returns the records framed.
///
/// # Errors
/// [`Error::WriteTooLarge`] (nothing is framed then).
pub(crate) fn frame_write(
    out: &mut Vec<u8>,
    payload: &mut Vec<u8>,
    (seq, limit): (u64, usize),
    w: &GroupWrite,
    file: Option<&SnapshotFile>,
) -> Result<usize> {
    frame_split(out, payload, (seq, limit), w.group, &w.entries, |p, es| {
        encode_write(p, w, file, es)
    })
}

/// Frames a checkpoint of `st` like [`frame_write`].
///
/// # Errors
/// As [`frame_write`].
pub(crate) fn frame_checkpoint(
    out: &mut Vec<u8>,
    payload: &mut Vec<u8>,
    (seq, limit): (u64, usize),
    (group, st): (u64, &RaftState),
    file: Option<&SnapshotFile>,
) -> Result<usize> {
    frame_split(out, payload, (seq, limit), group, &st.entries, |p, es| {
        encode_checkpoint(p, group, st, file, es)
    })
}

/// Frames `entries` as part records followed by the final record `last` builds around
/// the entries left for it, each record at most `limit` bytes.
fn frame_split(
    out: &mut Vec<u8>,
    payload: &mut Vec<u8>,
    (seq, limit): (u64, usize),
    group: u64,
    entries: &[Entry],
    last: impl Fn(&mut Vec<u8>, &[Entry]),
) -> Result<usize> {
    payload.clear();
    last(payload, &[]);
    let (parts, rest) = split(entries, payload.len(), limit)?;
    for r in &parts {
        payload.clear();
        encode_part(payload, group, &entries[r.clone()]);
        super::segment::frame(out, seq, payload);
    }
    payload.clear();
    last(payload, &entries[rest]);
    super::segment::frame(out, seq, payload);
    Ok(parts.len() + 1)
}

fn put_body(
    out: &mut Vec<u8>,
    snap: Option<(&SnapshotMeta, Option<&SnapshotFile>)>,
    entries: &[Entry],
    hs: Option<&HardState>,
) {
    let mut flags = 0;
    if let Some((_, file)) = snap {
        flags |= HAS_SNAP;
        if file.is_some() {
            flags |= HAS_FILE;
        }
    }
    if hs.is_some() {
        flags |= HAS_HS;
    }
    codec::put_u8(out, flags);
    if let Some((m, file)) = snap {
        codec::put_snapshot_meta(out, m);
        if let Some(f) = file {
            codec::put_bytes(out, f.name.as_bytes());
            codec::put_u64(out, f.len);
            codec::put_u32(out, f.crc);
        }
    }
    codec::put_entries(out, entries);
    if let Some(hs) = hs {
        codec::put_hard_state(out, hs);
    }
}

/// A decoded record.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) kind: u8,
    pub(crate) group: u64,
    pub(crate) snap: Option<SnapshotMeta>,
    /// The file of `snap` (`None` in records of the older format).
    pub(crate) file: Option<SnapshotFile>,
    pub(crate) write: GroupWrite,
    pub(crate) conf: Option<crate::ConfState>,
}

pub(crate) fn decode(buf: &[u8]) -> Result<Decoded> {
    let mut r = Reader::new(buf, "wal record");
    let kind = r.u8()?;
    if kind != REC_WRITE && kind != REC_CHECKPOINT && kind != REC_PART {
        return Err(r.err("unknown record type"));
    }
    let group = r.u64()?;
    if kind == REC_PART {
        let entries = codec::get_entries(&mut r)?;
        r.finish()?;
        return Ok(Decoded {
            kind,
            group,
            snap: None,
            file: None,
            write: GroupWrite {
                group,
                entries,
                ..GroupWrite::default()
            },
            conf: None,
        });
    }
    let flags = r.u8()?;
    if flags & !(HAS_SNAP | HAS_HS | HAS_FILE) != 0
        || (flags & HAS_FILE != 0 && flags & HAS_SNAP == 0)
    {
        return Err(r.err("unknown record flags"));
    }
    let snap = if flags & HAS_SNAP != 0 {
        Some(codec::get_snapshot_meta(&mut r)?)
    } else {
        None
    };
    let file = if flags & HAS_FILE != 0 {
        let name = r.bytes()?;
        let name = std::str::from_utf8(&name)
            .map_err(|_| r.err("snapshot file name is not UTF-8"))?
            .to_owned();
        Some(SnapshotFile {
            name,
            len: r.u64()?,
            crc: r.u32()?,
        })
    } else {
        None
    };
    let entries = codec::get_entries(&mut r)?;
    let hard_state = if flags & HAS_HS != 0 {
        Some(codec::get_hard_state(&mut r)?)
    } else {
        None
    };
    let conf = if kind == REC_CHECKPOINT {
        Some(codec::get_conf_state(&mut r)?)
    } else {
        None
    };
    r.finish()?;
    Ok(Decoded {
        kind,
        group,
        snap,
        file,
        write: GroupWrite {
            group,
            snapshot: None,
            entries,
            hard_state,
        },
        conf,
    })
}
