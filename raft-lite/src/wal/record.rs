//! WAL record payloads: one per group per batch, so a torn batch loses whole groups'
//! writes, never half of one (entries without the hard state written with them).

use crate::codec::{self, Reader};
use crate::{GroupWrite, HardState, RaftState, Result, SnapshotMeta};

/// A group's write: snapshot position (data lives in the group's snapshot file), entries,
/// hard state, applied in that order.
pub(crate) const REC_WRITE: u8 = 1;
/// A group's whole state, written when old segments are retired; replaces what came before.
pub(crate) const REC_CHECKPOINT: u8 = 2;

const HAS_SNAP: u8 = 1;
const HAS_HS: u8 = 2;

pub(crate) fn encode_write(out: &mut Vec<u8>, w: &GroupWrite) {
    codec::put_u8(out, REC_WRITE);
    codec::put_u64(out, w.group);
    put_body(
        out,
        w.snapshot.as_ref().map(|s| &s.meta),
        &w.entries,
        w.hard_state.as_ref(),
    );
}

pub(crate) fn encode_checkpoint(out: &mut Vec<u8>, group: u64, st: &RaftState) {
    codec::put_u8(out, REC_CHECKPOINT);
    codec::put_u64(out, group);
    put_body(
        out,
        st.snapshot.as_ref().map(|s| &s.meta),
        &st.entries,
        Some(&st.hard_state),
    );
    codec::put_conf_state(out, &st.conf);
}

fn put_body(
    out: &mut Vec<u8>,
    snap: Option<&SnapshotMeta>,
    entries: &[crate::Entry],
    hs: Option<&HardState>,
) {
    let mut flags = 0;
    if snap.is_some() {
        flags |= HAS_SNAP;
    }
    if hs.is_some() {
        flags |= HAS_HS;
    }
    codec::put_u8(out, flags);
    if let Some(m) = snap {
        codec::put_snapshot_meta(out, m);
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
    pub(crate) write: GroupWrite,
    pub(crate) conf: Option<crate::ConfState>,
}

pub(crate) fn decode(buf: &[u8]) -> Result<Decoded> {
    let mut r = Reader::new(buf, "wal record");
    let kind = r.u8()?;
    if kind != REC_WRITE && kind != REC_CHECKPOINT {
        return Err(r.err("unknown record type"));
    }
    let group = r.u64()?;
    let flags = r.u8()?;
    if flags & !(HAS_SNAP | HAS_HS) != 0 {
        return Err(r.err("unknown record flags"));
    }
    let snap = if flags & HAS_SNAP != 0 {
        Some(codec::get_snapshot_meta(&mut r)?)
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
        write: GroupWrite {
            group,
            snapshot: None,
            entries,
            hard_state,
        },
        conf,
    })
}
