//! The stream record: the binlog transactions one store transaction contributes to the
//! replication stream, and its byte layout.
//!
//! # Layout (version 1, all integers big-endian)
//!
//! ```text
//! record := "SSTR" version:u8 group_count:u32 group{group_count}
//! group  := kind:u8 event_count:u32 event{event_count}
//! event  := len:u32 bytes{len}
//! ```
//!
//! - `version` is [`STREAM_RECORD_VERSION`]; a decoder refuses any other.
//! - `kind` is 1 for [`StreamGroupKind::Transactional`], 2 for
//!   [`StreamGroupKind::Standalone`].
//! - each event's `bytes` are one binlog event as `surge_binlog::Event::encode` writes it
//!   with `ChecksumAlg::Off`: the 19-byte v4 header (timestamp, type, server id, size,
//!   `log_pos` 0, flags) and the body, no checksum. They depend on no file position: a
//!   reader decodes them (`Event::decode(bytes, ChecksumAlg::Off)`), sets its own
//!   timestamp and server id, and encodes them at its own offsets (`Event::encode_at`).
//!   The header's size field equals `len` (checked by the decoder).
//!
//! The GTID event that opens a group and the Xid that closes a transactional one are not
//! in the record: they carry the reader's own sequence numbers and xids.

use surge_binlog::{ChecksumAlg, Event, EventType};

use super::error::StreamDecodeError;

/// The version of the record layout written by this crate.
pub const STREAM_RECORD_VERSION: u8 = 1;

const MAGIC: &[u8; 4] = b"SSTR";
/// Length of a binlog v4 event header.
const EVENT_HEADER_LEN: usize = 19;
/// Length of a CRC-32 trailer.
const CRC_LEN: usize = 4;
/// MariaDB's Query event type code (type byte at offset 4 of the header).
const QUERY_EVENT_TYPE: u8 = 2;

/// How a replica must see a [`StreamGroup`] end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamGroupKind {
    /// Row events (Table_map, Write/Update/Delete_rows, Annotate_rows): a transactional
    /// group, opened by a transactional GTID and closed by an Xid.
    Transactional,
    /// Statements only (DDL Query events): a standalone group, opened by a GTID with the
    /// standalone flag, no Xid (MariaDB logs DDL so).
    Standalone,
}

impl StreamGroupKind {
    fn to_byte(self) -> u8 {
        match self {
            StreamGroupKind::Transactional => 1,
            StreamGroupKind::Standalone => 2,
        }
    }

    fn from_byte(b: u8) -> Option<StreamGroupKind> {
        match b {
            1 => Some(StreamGroupKind::Transactional),
            2 => Some(StreamGroupKind::Standalone),
            _ => None,
        }
    }
}

/// One binlog transaction as a replica must see it: its events without the GTID and Xid
/// that frame it (see the module docs for the event form).
///
/// A normal store transaction gives one group; a hot-row group gives one per member, in
/// member order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamGroup {
    /// Transactional (closes with Xid) or standalone (DDL).
    pub kind: StreamGroupKind,
    /// The events, each encoded as `surge_binlog::Event::encode(ChecksumAlg::Off)` with
    /// `log_pos` 0.
    pub events: Vec<Vec<u8>>,
}

impl StreamGroup {
    /// The group of `events` (position-independent, no checksum), its kind read from them:
    /// standalone when every event is a Query event (DDL), else transactional (a mix of
    /// rows and statements stays in one transactional group, as the coordinator's binlog
    /// writes it).
    pub fn new(events: Vec<Vec<u8>>) -> StreamGroup {
        let standalone = !events.is_empty()
            && events
                .iter()
                .all(|e| e.get(4).copied() == Some(QUERY_EVENT_TYPE));
        StreamGroup {
            kind: if standalone {
                StreamGroupKind::Standalone
            } else {
                StreamGroupKind::Transactional
            },
            events,
        }
    }

    /// The group of the events a `surge_binlog::TxnCache` holds (its
    /// `encoded_events()`: CRC-32 events with `log_pos` 0, one after the other).
    ///
    /// # Errors
    /// [`StreamDecodeError`] when the bytes do not split into whole events.
    pub fn from_cache_bytes(bytes: &[u8]) -> Result<StreamGroup, StreamDecodeError> {
        stream_events_from_cache_bytes(bytes).map(StreamGroup::new)
    }

    /// The events decoded (each checked as a whole binlog event).
    ///
    /// # Errors
    /// [`StreamDecodeError`] naming the event's index when one does not decode.
    pub fn decode_events(&self) -> Result<Vec<Event>, StreamDecodeError> {
        self.events
            .iter()
            .enumerate()
            .map(|(i, bytes)| decode_event(i, bytes))
            .collect()
    }

    /// The events decoded, as [`StreamGroup::decode_events`], each event's bytes freed as
    /// soon as it is decoded: a reader that keeps only the decoded events (a replica
    /// stream's writer) then holds a large group about once, not twice.
    ///
    /// # Errors
    /// As [`StreamGroup::decode_events`].
    pub fn into_decoded_events(self) -> Result<Vec<Event>, StreamDecodeError> {
        let mut out = Vec::with_capacity(self.events.len());
        for (i, bytes) in self.events.into_iter().enumerate() {
            out.push(decode_event(i, &bytes)?);
        }
        Ok(out)
    }

    /// The number of bytes of its events.
    pub fn event_bytes(&self) -> usize {
        self.events.iter().map(Vec::len).sum()
    }
}

/// Event `i` of a group, decoded from its record form.
fn decode_event(i: usize, bytes: &[u8]) -> Result<Event, StreamDecodeError> {
    Event::decode(bytes, ChecksumAlg::Off)
        .map_err(|e| StreamDecodeError::new("event", 0, format!("event #{i} of the group: {e}")))
}

/// Splits `bytes` (CRC-32 events with `log_pos` 0, as a `TxnCache` holds them) into events
/// without their checksum, each with its size field fixed: exactly what
/// `Event::encode(ChecksumAlg::Off)` gives for the same event.
///
/// # Errors
/// [`StreamDecodeError`] when the bytes do not split into whole events.
pub fn stream_events_from_cache_bytes(bytes: &[u8]) -> Result<Vec<Vec<u8>>, StreamDecodeError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < EVENT_HEADER_LEN + CRC_LEN {
            return Err(StreamDecodeError::new(
                "cache event",
                at,
                format!("{} bytes left, not a whole event", rest.len()),
            ));
        }
        let size = u32::from_le_bytes([rest[9], rest[10], rest[11], rest[12]]) as usize;
        if size < EVENT_HEADER_LEN + CRC_LEN || size > rest.len() {
            return Err(StreamDecodeError::new(
                "cache event",
                at,
                format!("event size {size} with {} bytes left", rest.len()),
            ));
        }
        let mut ev = rest[..size - CRC_LEN].to_vec();
        let new_size = (size - CRC_LEN) as u32;
        ev[9..13].copy_from_slice(&new_size.to_le_bytes());
        // A Format_description always carries a CRC; a cache never holds one.
        if ev[4] == EventType::FormatDescription.code() {
            return Err(StreamDecodeError::new(
                "cache event",
                at,
                "a Format_description event in a transaction's events",
            ));
        }
        out.push(ev);
        at += size;
    }
    Ok(out)
}

/// Encodes `groups` as a record (see the module docs).
pub fn encode_stream_record(groups: &[StreamGroup]) -> Vec<u8> {
    let size: usize = groups
        .iter()
        .map(|g| 5 + g.events.len() * 4 + g.event_bytes())
        .sum();
    let mut out = Vec::with_capacity(9 + size);
    out.extend_from_slice(MAGIC);
    out.push(STREAM_RECORD_VERSION);
    out.extend_from_slice(&(groups.len() as u32).to_be_bytes());
    for g in groups {
        out.push(g.kind.to_byte());
        out.extend_from_slice(&(g.events.len() as u32).to_be_bytes());
        for e in &g.events {
            out.extend_from_slice(&(e.len() as u32).to_be_bytes());
            out.extend_from_slice(e);
        }
    }
    out
}

/// A cursor over record bytes whose reads fail with the offset instead of panicking.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], StreamDecodeError> {
        let rest = &self.bytes[self.at..];
        if rest.len() < n {
            return Err(StreamDecodeError::new(
                what,
                self.at,
                format!("needs {n} bytes, {} left", rest.len()),
            ));
        }
        let (head, _) = rest.split_at(n);
        self.at += n;
        Ok(head)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, StreamDecodeError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, StreamDecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }
}

/// Decodes a record written by [`encode_stream_record`].
///
/// # Errors
/// [`StreamDecodeError`] naming what and where for a bad magic or version, a count or
/// length past the end, an unknown group kind, an event whose header size differs from its
/// length, or trailing bytes. Never panics, never allocates more than the input's size.
pub fn decode_stream_record(bytes: &[u8]) -> Result<Vec<StreamGroup>, StreamDecodeError> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4, "record header")? != MAGIC {
        return Err(StreamDecodeError::new(
            "record header",
            0,
            "not a stream record (bad magic)",
        ));
    }
    let version = r.u8("record header")?;
    if version != STREAM_RECORD_VERSION {
        return Err(StreamDecodeError::new(
            "record header",
            4,
            format!("version {version}, this decoder reads {STREAM_RECORD_VERSION}"),
        ));
    }
    let group_count = r.u32("record header")? as usize;
    // Each group takes at least 5 bytes: a larger count cannot be right.
    if group_count > r.left() / 5 {
        return Err(StreamDecodeError::new(
            "record header",
            5,
            format!("{group_count} groups in {} bytes", r.left()),
        ));
    }
    let mut groups = Vec::with_capacity(group_count);
    for g in 0..group_count {
        let at = r.at;
        let kind_byte = r.u8("group")?;
        let kind = StreamGroupKind::from_byte(kind_byte).ok_or_else(|| {
            StreamDecodeError::new("group", at, format!("group #{g}: unknown kind {kind_byte}"))
        })?;
        let event_count = r.u32("group")? as usize;
        if event_count > r.left() / 4 {
            return Err(StreamDecodeError::new(
                "group",
                at,
                format!("group #{g}: {event_count} events in {} bytes", r.left()),
            ));
        }
        let mut events = Vec::with_capacity(event_count);
        for _ in 0..event_count {
            let at = r.at;
            let len = r.u32("event")? as usize;
            let ev = r.take(len, "event")?;
            if len < EVENT_HEADER_LEN {
                return Err(StreamDecodeError::new(
                    "event",
                    at,
                    format!("{len} bytes, shorter than an event header"),
                ));
            }
            let size = u32::from_le_bytes([ev[9], ev[10], ev[11], ev[12]]) as usize;
            if size != len {
                return Err(StreamDecodeError::new(
                    "event",
                    at,
                    format!("header says {size} bytes, the record {len}"),
                ));
            }
            events.push(ev.to_vec());
        }
        groups.push(StreamGroup { kind, events });
    }
    if r.left() > 0 {
        return Err(StreamDecodeError::new(
            "record",
            r.at,
            format!("{} trailing bytes", r.left()),
        ));
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use surge_binlog::{EventBody, QueryEvent};

    fn query_event(sql: &str) -> Vec<u8> {
        Event::new(EventBody::Query(QueryEvent::new("d", sql)), 7, 3).encode(ChecksumAlg::Off)
    }

    fn xid_like(n: u64) -> Vec<u8> {
        Event::new(EventBody::AnnotateRows(n.to_le_bytes().to_vec()), 7, 3).encode(ChecksumAlg::Off)
    }

    #[test]
    fn kinds_are_read_from_the_events() {
        assert_eq!(
            StreamGroup::new(vec![query_event("CREATE TABLE t (a INT)")]).kind,
            StreamGroupKind::Standalone
        );
        assert_eq!(
            StreamGroup::new(vec![query_event("x"), xid_like(1)]).kind,
            StreamGroupKind::Transactional
        );
        assert_eq!(
            StreamGroup::new(vec![]).kind,
            StreamGroupKind::Transactional
        );
    }

    #[test]
    fn cache_bytes_become_checksumless_events() -> Result<(), Box<dyn std::error::Error>> {
        let evs = [
            Event::new(EventBody::Query(QueryEvent::new("d", "DROP TABLE t")), 9, 4),
            Event::new(EventBody::AnnotateRows(b"UPDATE t SET a=1".to_vec()), 9, 4),
        ];
        let mut cache = Vec::new();
        for e in &evs {
            e.encode_into(&mut cache, ChecksumAlg::Crc32);
        }
        let got = stream_events_from_cache_bytes(&cache)?;
        let want: Vec<Vec<u8>> = evs.iter().map(|e| e.encode(ChecksumAlg::Off)).collect();
        assert_eq!(got, want);
        let group = StreamGroup::new(got);
        let decoded = group.decode_events()?;
        assert_eq!(decoded[0].body, evs[0].body);
        assert_eq!(decoded[1].body, evs[1].body);
        // A cut event is refused with its offset.
        let e = stream_events_from_cache_bytes(&cache[..cache.len() - 1])
            .err()
            .ok_or("cut")?;
        assert_eq!(e.offset, evs[0].encode(ChecksumAlg::Crc32).len());
        Ok(())
    }

    #[test]
    fn bad_records_are_refused_with_a_clear_error() {
        let good = encode_stream_record(&[StreamGroup::new(vec![query_event("DROP TABLE t")])]);
        assert!(decode_stream_record(&good).is_ok());
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"XXXX".to_vec(), "magic"),
            (
                {
                    let mut b = good.clone();
                    b[4] = 9;
                    b
                },
                "version 9",
            ),
            (
                {
                    let mut b = good.clone();
                    b[9] = 7;
                    b
                },
                "unknown kind 7",
            ),
            (
                {
                    let mut b = good.clone();
                    b.push(0);
                    b
                },
                "trailing",
            ),
            (good[..good.len() - 3].to_vec(), "left"),
            (
                {
                    let mut b = good.clone();
                    b[5..9].copy_from_slice(&u32::MAX.to_be_bytes());
                    b
                },
                "groups in",
            ),
        ];
        for (bytes, needle) in cases {
            let e = decode_stream_record(&bytes).expect_err(needle);
            assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
        }
    }

    fn arb_event() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            "[a-z ]{1,40}".prop_map(|s| query_event(&s)),
            proptest::collection::vec(any::<u8>(), 0..300).prop_map(|b| {
                Event::new(EventBody::AnnotateRows(b), 1, 2).encode(ChecksumAlg::Off)
            }),
        ]
    }

    fn arb_group() -> impl Strategy<Value = StreamGroup> {
        (proptest::collection::vec(arb_event(), 0..6), any::<bool>()).prop_map(
            |(events, standalone)| StreamGroup {
                kind: if standalone {
                    StreamGroupKind::Standalone
                } else {
                    StreamGroupKind::Transactional
                },
                events,
            },
        )
    }

    proptest! {
        #[test]
        fn records_round_trip(groups in proptest::collection::vec(arb_group(), 0..5)) {
            let bytes = encode_stream_record(&groups);
            prop_assert_eq!(decode_stream_record(&bytes), Ok(groups));
        }

        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(decoded) = decode_stream_record(&bytes) {
                prop_assert_eq!(encode_stream_record(&decoded), bytes.clone());
            }
            let _ = stream_events_from_cache_bytes(&bytes);
        }

        #[test]
        fn decoding_a_damaged_record_never_panics(
            groups in proptest::collection::vec(arb_group(), 1..4),
            flip in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut bytes = encode_stream_record(&groups);
            let i = flip.index(bytes.len());
            bytes[i] = byte;
            // What the decoder accepts has one encoding: the bytes it was given.
            if let Ok(decoded) = decode_stream_record(&bytes) {
                prop_assert_eq!(encode_stream_record(&decoded), bytes);
            }
        }
    }
}
