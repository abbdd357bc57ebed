//! Where stream records live in the key space.
//!
//! # Layout
//!
//! ```text
//! key := lane STREAM_PREFIX record_ts:u64 start_ts:u64 chunk_no:u32   (big-endian)
//! ```
//!
//! `record_ts` first, so that a reader scans only the records taken at or after a bound
//! (`client/stream_reader.rs` explains why that bound is exact). `start_ts` makes the key
//! unique to one transaction; `chunk_no` orders a record's chunks.
//!
//! # Lanes
//!
//! A record goes in the *lane* of its transaction's primary key ([`lane_of`]), so that it
//! lies in the same region as the rest of a transaction that touches one table, which then
//! commits in one phase instead of two across two regions:
//! - a TiDB-style table key, `t` + the 8-byte table id + `_` + ..., has the lane `t{id}`
//!   (9 bytes): its records sort after every row and index key of that table and before
//!   the next table (`0xFF` is above `_`);
//! - every other key has the empty lane: its records are under [`STREAM_PREFIX`], after
//!   every ordinary key, in the last region.
//!
//! A reader must know every lane that may hold a record: a coordinator registers a
//! non-empty lane under `LANES_PREFIX ++ lane` (in a transaction of its own, committed
//! before its first record there), every record of the lane takes a `record_ts` at or
//! above that registration's commit_ts, and a reader lists the registry at its timestamp
//! (`client/stream_reader.rs` says why that is enough).
//!
//! An external record's payload chunks (`chunks.rs`) are under their own prefix, always in
//! the empty lane:
//!
//! ```text
//! payload key := STREAM_PAYLOAD_PREFIX start_ts:u64 chunk_no:u32
//! ```
//!
//! The prefixes start with `0xFF 0xFF` so that they sort after every ordinary key (SQL
//! table keys, `surgedb`.`kv` keys of readable text). Users may not write keys in the
//! reserved ranges, `[LANES_PREFIX, 0xFF 0xFF "stream;")` (the registry, the empty lane's
//! records and the payloads) and the same after a table lane, `t{id} ++ [STREAM_PREFIX,
//! 0xFF 0xFF "stream;")` ([`crate::TxnError::ReservedKey`]), and their scans skip them.

use super::error::StreamDecodeError;

/// The prefix of every stream record key of the empty lane (after a table lane, of that
/// lane's records): `0xFF 0xFF "stream/"`.
pub const STREAM_PREFIX: &[u8] = b"\xff\xffstream/";

/// The smallest key above every key under [`STREAM_PREFIX`] (`'/' + 1 = '0'`).
pub(crate) const STREAM_END: &[u8] = b"\xff\xffstream0";

/// The prefix of an external record's payload chunks: `0xFF 0xFF "stream:"`.
pub(crate) const STREAM_PAYLOAD_PREFIX: &[u8] = b"\xff\xffstream:";

/// The prefix of the lane registry (`'.' + 1 = '/'`: it ends where [`STREAM_PREFIX`]
/// starts).
pub(crate) const LANES_PREFIX: &[u8] = b"\xff\xffstream.";

/// The end of the reserved range `[LANES_PREFIX, RESERVED_END)` (`':' + 1 = ';'`): the
/// registry, both prefixes and the keys between them.
pub(crate) const RESERVED_END: &[u8] = b"\xff\xffstream;";

/// The registry's entry for the stream's settings (not a lane: lanes start with `t`).
pub(crate) const SETTINGS_KEY: &[u8] = b"\xff\xffstream.!settings";

/// Bytes of a table lane: `t` and the 8-byte table id.
const TABLE_LANE_LEN: usize = 9;

/// Whether `lane` (a registry entry's key after [`LANES_PREFIX`]) has a lane's shape.
pub(crate) fn is_table_lane(lane: &[u8]) -> bool {
    lane.len() == TABLE_LANE_LEN && lane[0] == b't'
}

/// Bytes of a record key after its lane.
const KEY_LEN: usize = STREAM_PREFIX.len() + 8 + 8 + 4;

/// The lane of a transaction whose primary key is `key` (module docs): `t{id}` for a
/// TiDB-style table key, else empty.
pub(crate) fn lane_of(key: &[u8]) -> &[u8] {
    if key.len() > TABLE_LANE_LEN && key[0] == b't' && key[TABLE_LANE_LEN] == b'_' {
        &key[..TABLE_LANE_LEN]
    } else {
        &[]
    }
}

/// Whether `key` lies in `[LANES_PREFIX, RESERVED_END)`.
fn in_reserved_range(key: &[u8]) -> bool {
    key >= LANES_PREFIX && key < RESERVED_END
}

/// How many bytes of lane a reserved `key` starts with (`Some(0)` for the empty lane), or
/// `None` when it is not reserved.
fn reserved_lane_len(key: &[u8]) -> Option<usize> {
    if in_reserved_range(key) {
        return Some(0);
    }
    let after = key.get(TABLE_LANE_LEN..)?;
    (key[0] == b't' && after >= STREAM_PREFIX && after < RESERVED_END).then_some(TABLE_LANE_LEN)
}

/// Whether `key` is reserved for the stream (user writes refused, scans skip it).
pub(crate) fn is_reserved_key(key: &[u8]) -> bool {
    reserved_lane_len(key).is_some()
}

/// The registry key of a non-empty `lane`.
pub(crate) fn lane_registry_key(lane: &[u8]) -> Vec<u8> {
    [LANES_PREFIX, lane].concat()
}

/// The key of payload chunk `chunk_no` of transaction `start_ts`'s external record.
pub(crate) fn payload_key(start_ts: u64, chunk_no: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(STREAM_PAYLOAD_PREFIX.len() + 12);
    k.extend_from_slice(STREAM_PAYLOAD_PREFIX);
    k.extend_from_slice(&start_ts.to_be_bytes());
    k.extend_from_slice(&chunk_no.to_be_bytes());
    k
}

/// The key of chunk `chunk_no` of the record of transaction `start_ts` taken at `record_ts`
/// in `lane`.
pub(crate) fn record_key(lane: &[u8], record_ts: u64, start_ts: u64, chunk_no: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(lane.len() + KEY_LEN);
    k.extend_from_slice(lane);
    k.extend_from_slice(STREAM_PREFIX);
    k.extend_from_slice(&record_ts.to_be_bytes());
    k.extend_from_slice(&start_ts.to_be_bytes());
    k.extend_from_slice(&chunk_no.to_be_bytes());
    k
}

/// The first key of `lane`'s records taken at or after `record_ts`.
pub(crate) fn stream_lower_key(lane: &[u8], record_ts: u64) -> Vec<u8> {
    [lane, STREAM_PREFIX, &record_ts.to_be_bytes()].concat()
}

/// The first key of `lane`'s records ([`STREAM_PREFIX`] after the lane).
pub(crate) fn lane_start(lane: &[u8]) -> Vec<u8> {
    [lane, STREAM_PREFIX].concat()
}

/// The smallest key above every record key of `lane`.
pub(crate) fn lane_end(lane: &[u8]) -> Vec<u8> {
    [lane, STREAM_END].concat()
}

/// `(record_ts, start_ts, chunk_no)` of a record key (of any lane).
///
/// # Errors
/// [`StreamDecodeError`] when `key` is not a record key (wrong prefix or length).
pub(crate) fn record_key_parts(key: &[u8]) -> Result<(u64, u64, u32), StreamDecodeError> {
    let lane = reserved_lane_len(key).unwrap_or(0);
    let Some(rest) = key[lane..].strip_prefix(STREAM_PREFIX) else {
        return Err(StreamDecodeError::new(
            "key",
            0,
            "not under the stream prefix",
        ));
    };
    if rest.len() + STREAM_PREFIX.len() != KEY_LEN {
        return Err(StreamDecodeError::new(
            "key",
            lane + STREAM_PREFIX.len(),
            format!(
                "{} bytes after the lane, a record key has {KEY_LEN}",
                key.len() - lane
            ),
        ));
    }
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&rest[i..i + 8]);
        u64::from_be_bytes(b)
    };
    let mut c = [0u8; 4];
    c.copy_from_slice(&rest[16..20]);
    Ok((u64_at(0), u64_at(8), u32::from_be_bytes(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_record_ts_then_txn_then_chunk() -> Result<(), StreamDecodeError> {
        for lane in [&b""[..], b"t\x80\x00\x00\x00\x00\x00\x00\x05"] {
            let keys = [
                record_key(lane, 5, 9, 0),
                record_key(lane, 5, 9, 1),
                record_key(lane, 5, 10, 0),
                record_key(lane, 6, 1, 0),
            ];
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(record_key_parts(&keys[1])?, (5, 9, 1));
            assert!(stream_lower_key(lane, 6) <= keys[3] && stream_lower_key(lane, 6) > keys[2]);
            assert!(keys.iter().all(|k| k.as_slice() < lane_end(lane).as_slice()
                && k.as_slice() >= lane_start(lane).as_slice()
                && is_reserved_key(k)));
            assert!(record_key_parts(&stream_lower_key(lane, 1)).is_err());
        }
        assert!(STREAM_PREFIX < STREAM_END && STREAM_END < STREAM_PAYLOAD_PREFIX);
        assert!(is_reserved_key(&payload_key(1, 2)) && payload_key(1, 2).as_slice() < RESERVED_END);
        assert!(payload_key(1, 2) < payload_key(1, 3) && payload_key(1, 9) < payload_key(2, 0));
        assert!(!is_reserved_key(RESERVED_END) && !is_reserved_key(b"\xff\xffstream"));
        assert!(record_key_parts(b"abc").is_err());
        // Ordinary keys sort below the prefix and are not reserved.
        assert!(b"t\x80\x00\x00\x01_r".as_slice() < STREAM_PREFIX);
        assert!(!is_reserved_key(b"\xff\xff"));
        Ok(())
    }

    #[test]
    fn a_table_lane_sorts_inside_its_table() {
        let table = b"t\x80\x00\x00\x00\x00\x00\x00\x05";
        let next = b"t\x80\x00\x00\x00\x00\x00\x00\x06";
        let row = [&table[..], b"_r\x80\x00\x00\x00\x00\x00\x00\x01"].concat();
        let index = [&table[..], b"_i\x80\x00\x00\x00\x00\x00\x00\x01\xff\xff"].concat();
        assert_eq!(lane_of(&row), table);
        assert_eq!(lane_of(&index), table);
        let rec = record_key(lane_of(&row), 1, 2, 0);
        assert!(row < rec && index < rec && rec.as_slice() < next.as_slice());
        assert!(!is_reserved_key(&row) && !is_reserved_key(&index) && !is_reserved_key(table));
        // Keys that are not table keys have the empty lane.
        assert_eq!(lane_of(b"kv/key"), b"");
        assert_eq!(lane_of(b"t\x80\x00\x00\x00\x00\x00\x00\x05"), b"");
        assert_eq!(lane_of(b"tablename-x"), b"");
        assert_eq!(lane_of(&record_key(b"", 1, 2, 3)), b"");
        // The registry is reserved and sorts before the empty lane's records.
        let reg = lane_registry_key(table);
        assert!(is_reserved_key(&reg) && reg.as_slice() < STREAM_PREFIX);
        assert!(LANES_PREFIX < STREAM_PREFIX);
        assert!(is_table_lane(table) && !is_table_lane(b"") && !is_table_lane(b"!settings"));
        assert!(is_reserved_key(SETTINGS_KEY) && SETTINGS_KEY < STREAM_PREFIX);
    }
}
