//! A hand-written, bounded binary codec for messages, entries and log metadata.
//!
//! Integers are little-endian fixed width; byte strings and lists carry a `u32` length.
//! Decoding never trusts a length: every count is checked against the bytes that remain,
//! so malformed input is refused with [`Error::Decode`] (naming what and where) and never
//! causes a panic or a large allocation.

use bytes::Bytes;

use crate::{ConfState, Entry, EntryKind, Error, HardState, Message, MessageKind, Result};
use crate::{Snapshot, SnapshotMeta};

/// Largest byte string (entry data, snapshot data) the codec accepts: 256 MiB.
pub const MAX_BYTES_LEN: usize = 256 << 20;

pub(crate) fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    // Lengths above u32 are refused at the API boundary (MAX_BYTES_LEN), so this fits.
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

/// A bounds-checked reader over a byte slice.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { buf, pos: 0, what }
    }
    pub(crate) fn err(&self, reason: &'static str) -> Error {
        Error::Decode {
            what: self.what,
            offset: self.pos,
            reason,
        }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.err("unexpected end of input"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    pub(crate) fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.err("boolean is neither 0 nor 1")),
        }
    }
    pub(crate) fn bytes(&mut self) -> Result<Bytes> {
        let n = self.u32()? as usize;
        if n > MAX_BYTES_LEN {
            return Err(self.err("byte string longer than the limit"));
        }
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }
    /// A list length, checked against the remaining input at `min_item` bytes per item.
    pub(crate) fn count(&mut self, min_item: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item) > self.remaining() {
            return Err(self.err("list length exceeds the input"));
        }
        Ok(n)
    }
    pub(crate) fn finish(self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.err("trailing bytes"));
        }
        Ok(())
    }
}

/// Appends the encoding of `cs`.
pub(crate) fn put_conf_state(out: &mut Vec<u8>, cs: &ConfState) {
    put_u32(out, cs.voters.len() as u32);
    for v in &cs.voters {
        put_u64(out, *v);
    }
    put_u32(out, cs.learners.len() as u32);
    for v in &cs.learners {
        put_u64(out, *v);
    }
}

pub(crate) fn get_conf_state(r: &mut Reader<'_>) -> Result<ConfState> {
    let mut cs = ConfState::default();
    // Ids must be strictly increasing: one encoding per configuration, so whatever
    // decodes re-encodes to the same bytes.
    let n = r.count(8)?;
    for _ in 0..n {
        let id = r.u64()?;
        if cs.voters.last().is_some_and(|last| *last >= id) {
            return Err(r.err("voter ids are not strictly increasing"));
        }
        cs.voters.insert(id);
    }
    let n = r.count(8)?;
    for _ in 0..n {
        let id = r.u64()?;
        if cs.voters.contains(&id) {
            return Err(r.err("node is both voter and learner"));
        }
        if cs.learners.last().is_some_and(|last| *last >= id) {
            return Err(r.err("learner ids are not strictly increasing"));
        }
        cs.learners.insert(id);
    }
    Ok(cs)
}

/// Encodes a membership configuration (the data of a conf-change entry).
pub fn encode_conf_state(cs: &ConfState) -> Bytes {
    let mut out = Vec::with_capacity(8 + 8 * (cs.voters.len() + cs.learners.len()));
    put_conf_state(&mut out, cs);
    Bytes::from(out)
}

/// Decodes what [`encode_conf_state`] wrote.
///
/// # Errors
/// [`Error::Decode`] on malformed input.
pub fn decode_conf_state(buf: &[u8]) -> Result<ConfState> {
    let mut r = Reader::new(buf, "conf state");
    let cs = get_conf_state(&mut r)?;
    r.finish()?;
    Ok(cs)
}

pub(crate) fn put_entry(out: &mut Vec<u8>, e: &Entry) {
    put_u64(out, e.term);
    put_u64(out, e.index);
    put_u8(
        out,
        match e.kind {
            EntryKind::Normal => 0,
            EntryKind::ConfChange => 1,
            EntryKind::Noop => 2,
        },
    );
    put_bytes(out, &e.data);
}

/// Smallest encoding of an entry, used to bound list lengths.
pub(crate) const MIN_ENTRY_LEN: usize = 8 + 8 + 1 + 4;

pub(crate) fn get_entry(r: &mut Reader<'_>) -> Result<Entry> {
    let term = r.u64()?;
    let index = r.u64()?;
    let kind = match r.u8()? {
        0 => EntryKind::Normal,
        1 => EntryKind::ConfChange,
        2 => EntryKind::Noop,
        _ => return Err(r.err("unknown entry kind")),
    };
    let data = r.bytes()?;
    if index == 0 {
        return Err(r.err("entry index 0"));
    }
    Ok(Entry {
        term,
        index,
        kind,
        data,
    })
}

/// Reads a list of entries and checks that their indexes are consecutive.
pub(crate) fn get_entries(r: &mut Reader<'_>) -> Result<Vec<Entry>> {
    let n = r.count(MIN_ENTRY_LEN)?;
    let mut v: Vec<Entry> = Vec::with_capacity(n);
    for _ in 0..n {
        let e = get_entry(r)?;
        if let Some(prev) = v.last()
            && Some(e.index) != prev.index.checked_add(1)
        {
            return Err(r.err("entry indexes are not consecutive"));
        }
        v.push(e);
    }
    Ok(v)
}

pub(crate) fn put_entries(out: &mut Vec<u8>, es: &[Entry]) {
    put_u32(out, es.len() as u32);
    for e in es {
        put_entry(out, e);
    }
}

pub(crate) fn put_hard_state(out: &mut Vec<u8>, hs: &HardState) {
    put_u64(out, hs.term);
    put_u64(out, hs.vote);
    put_u64(out, hs.commit);
}

pub(crate) fn get_hard_state(r: &mut Reader<'_>) -> Result<HardState> {
    Ok(HardState {
        term: r.u64()?,
        vote: r.u64()?,
        commit: r.u64()?,
    })
}

pub(crate) fn put_snapshot_meta(out: &mut Vec<u8>, m: &SnapshotMeta) {
    put_u64(out, m.index);
    put_u64(out, m.term);
    put_conf_state(out, &m.conf);
}

pub(crate) fn get_snapshot_meta(r: &mut Reader<'_>) -> Result<SnapshotMeta> {
    Ok(SnapshotMeta {
        index: r.u64()?,
        term: r.u64()?,
        conf: get_conf_state(r)?,
    })
}

/// Appends the encoding of `(group, msg)` to `out`.
pub fn encode_message(group: u64, msg: &Message, out: &mut Vec<u8>) {
    put_u64(out, group);
    put_u64(out, msg.from);
    put_u64(out, msg.to);
    put_u64(out, msg.term);
    match &msg.kind {
        MessageKind::PreVote {
            last_index,
            last_term,
        } => {
            put_u8(out, 1);
            put_u64(out, *last_index);
            put_u64(out, *last_term);
        }
        MessageKind::PreVoteResp { reject } => {
            put_u8(out, 2);
            put_u8(out, u8::from(*reject));
        }
        MessageKind::Vote {
            last_index,
            last_term,
            transfer,
        } => {
            put_u8(out, 3);
            put_u64(out, *last_index);
            put_u64(out, *last_term);
            put_u8(out, u8::from(*transfer));
        }
        MessageKind::VoteResp { reject } => {
            put_u8(out, 4);
            put_u8(out, u8::from(*reject));
        }
        MessageKind::Append {
            prev_index,
            prev_term,
            entries,
            commit,
        } => {
            put_u8(out, 5);
            put_u64(out, *prev_index);
            put_u64(out, *prev_term);
            put_u64(out, *commit);
            put_entries(out, entries);
        }
        MessageKind::AppendResp {
            index,
            reject,
            hint,
        } => {
            put_u8(out, 6);
            put_u64(out, *index);
            put_u8(out, u8::from(*reject));
            put_u64(out, *hint);
        }
        MessageKind::Heartbeat { commit, read_seq } => {
            put_u8(out, 7);
            put_u64(out, *commit);
            put_u64(out, *read_seq);
        }
        MessageKind::HeartbeatResp { read_seq } => {
            put_u8(out, 8);
            put_u64(out, *read_seq);
        }
        MessageKind::Snapshot { snapshot } => {
            put_u8(out, 9);
            put_snapshot_meta(out, &snapshot.meta);
            put_bytes(out, &snapshot.data);
        }
        MessageKind::TimeoutNow => put_u8(out, 10),
        MessageKind::SnapshotChunk {
            id,
            meta,
            seq,
            last,
            data,
        } => {
            put_u8(out, 11);
            put_u64(out, *id);
            put_snapshot_meta(out, meta);
            put_u32(out, *seq);
            put_u8(out, u8::from(*last));
            put_bytes(out, data);
        }
        MessageKind::SnapshotChunkAck {
            id,
            index,
            seq,
            accepted,
        } => {
            put_u8(out, 12);
            put_u64(out, *id);
            put_u64(out, *index);
            put_u32(out, *seq);
            put_u8(out, u8::from(*accepted));
        }
    }
}

/// Decodes what [`encode_message`] wrote: the group id and the message.
///
/// # Errors
/// [`Error::Decode`] naming the offset for truncated input, unknown tags, bad booleans,
/// lengths beyond the input, non-consecutive entries, node id 0 or trailing bytes.
pub fn decode_message(buf: &[u8]) -> Result<(u64, Message)> {
    let mut r = Reader::new(buf, "message");
    let group = r.u64()?;
    let from = r.u64()?;
    let to = r.u64()?;
    let term = r.u64()?;
    if from == 0 || to == 0 {
        return Err(r.err("node id 0"));
    }
    let kind = match r.u8()? {
        1 => MessageKind::PreVote {
            last_index: r.u64()?,
            last_term: r.u64()?,
        },
        2 => MessageKind::PreVoteResp { reject: r.bool()? },
        3 => MessageKind::Vote {
            last_index: r.u64()?,
            last_term: r.u64()?,
            transfer: r.bool()?,
        },
        4 => MessageKind::VoteResp { reject: r.bool()? },
        5 => {
            let prev_index = r.u64()?;
            let prev_term = r.u64()?;
            let commit = r.u64()?;
            let entries = get_entries(&mut r)?;
            if entries
                .first()
                .is_some_and(|e| Some(e.index) != prev_index.checked_add(1))
            {
                return Err(r.err("first entry does not follow prev_index"));
            }
            MessageKind::Append {
                prev_index,
                prev_term,
                entries,
                commit,
            }
        }
        6 => MessageKind::AppendResp {
            index: r.u64()?,
            reject: r.bool()?,
            hint: r.u64()?,
        },
        7 => MessageKind::Heartbeat {
            commit: r.u64()?,
            read_seq: r.u64()?,
        },
        8 => MessageKind::HeartbeatResp { read_seq: r.u64()? },
        9 => {
            let meta = get_snapshot_meta(&mut r)?;
            let data = r.bytes()?;
            MessageKind::Snapshot {
                snapshot: Snapshot { meta, data },
            }
        }
        10 => MessageKind::TimeoutNow,
        11 => MessageKind::SnapshotChunk {
            id: r.u64()?,
            meta: get_snapshot_meta(&mut r)?,
            seq: r.u32()?,
            last: r.bool()?,
            data: r.bytes()?,
        },
        12 => MessageKind::SnapshotChunkAck {
            id: r.u64()?,
            index: r.u64()?,
            seq: r.u32()?,
            accepted: r.bool()?,
        },
        _ => return Err(r.err("unknown message tag")),
    };
    r.finish()?;
    Ok((
        group,
        Message {
            from,
            to,
            term,
            kind,
        },
    ))
}

/// Scratch buffers (a WAL record, a transport frame) keep at most this much capacity
/// between uses: one large entry must not pin its size for the life of the node.
pub(crate) const SCRATCH_KEEP: usize = 1 << 20;

/// Gives back the memory of a scratch buffer grown past [`SCRATCH_KEEP`] (after its
/// contents were written out; it is emptied).
pub(crate) fn release_scratch(buf: &mut Vec<u8>) {
    if buf.capacity() > SCRATCH_KEEP {
        *buf = Vec::new();
    }
}
