//! Where stream records live in the key space.
//!
//! # Layout
//!
//! ```text
//! key := lane STREAM_PREFIX !record_ts:u64 start_ts:u64 chunk_no:u32   (big-endian)
//! ```
//!
//! `record_ts` first, so that a reader scans only the records taken at or after a bound
//! (`client/stream_reader.rs` explains why that bound is exact; [`record_ts_range`] gives
//! the keys). `start_ts` makes the key unique to one transaction; `chunk_no` orders a
//! record's chunks.
//!
//! `record_ts` is stored complemented (`!record_ts`), so a lane holds its newest records
//! first, right after its table's rows. A region that grows by records splits near the
//! middle of its keys, which are mostly records: newest first, the rows keep the newest
//! half of their lane with them, and later records land beside the rows, so a
//! transaction on one table still commits in one phase. Oldest first, the split would
//! leave the rows with the oldest records and every later record in the next region: all
//! later commits of the table would take two phases (measured: one-phase commits fell
//! from about all to 19% two minutes into a `oltp_write_only` run).
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

/// The record key layout this build writes: 2, newest record first (layout 1, oldest
/// first, had no mark).
pub(crate) const KEY_LAYOUT: u32 = 2;

/// What the stored stream settings start with: [`KEY_LAYOUT`] (the caller's settings
/// follow).
pub(crate) const LAYOUT_MARK: &[u8] = b"surge-stream-key-layout=2\n";

/// The layout named by stored stream settings: `"1"` when unmarked.
pub(crate) fn layout_of_settings(stored: &[u8]) -> String {
    stored
        .strip_prefix(b"surge-stream-key-layout=")
        .and_then(|rest| rest.split(|&b| b == b'\n').next())
        .map_or_else(
            || "1".to_owned(),
            |l| String::from_utf8_lossy(l).into_owned(),
        )
}

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
    k.extend_from_slice(&(!record_ts).to_be_bytes());
    k.extend_from_slice(&start_ts.to_be_bytes());
    k.extend_from_slice(&chunk_no.to_be_bytes());
    k
}

/// The key range `[start, end)` of `lane`'s records with `lo <= record_ts < hi`
/// (`hi == u64::MAX`: no upper bound). Newest records come first in it (module docs).
pub(crate) fn record_ts_range(lane: &[u8], lo: u64, hi: u64) -> (Vec<u8>, Vec<u8>) {
    // A key starts with `!record_ts`: `record_ts <= hi - 1` is `!record_ts >= !(hi - 1)`,
    // and `record_ts > lo - 1` is `!record_ts < !(lo - 1)`.
    let at = |ts: u64| [lane, STREAM_PREFIX, &(!ts).to_be_bytes()].concat();
    let start = match hi {
        0 => return (lane_end(lane), lane_end(lane)),
        u64::MAX => lane_start(lane),
        hi => at(hi - 1),
    };
    let end = match lo {
        0 => lane_end(lane),
        lo => at(lo - 1),
    };
    (start, end)
}

/// The key range of the records of the table that `key` is a row or index key of (a
/// TiDB-style table key outside the reserved ranges), `None` for any other key.
pub(crate) fn records_of_table_key(key: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let lane = lane_of(key);
    (!lane.is_empty() && !is_reserved_key(key)).then(|| (lane_start(lane), lane_end(lane)))
}

/// The first key of `lane`'s records ([`STREAM_PREFIX`] after the lane).
fn lane_start(lane: &[u8]) -> Vec<u8> {
    [lane, STREAM_PREFIX].concat()
}

/// The smallest key above every record key of `lane`.
fn lane_end(lane: &[u8]) -> Vec<u8> {
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
    Ok((!u64_at(0), u64_at(8), u32::from_be_bytes(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_newest_record_first_then_txn_then_chunk() -> Result<(), StreamDecodeError> {
        for lane in [&b""[..], b"t\x80\x00\x00\x00\x00\x00\x00\x05"] {
            let keys = [
                record_key(lane, 6, 1, 0),
                record_key(lane, 5, 9, 0),
                record_key(lane, 5, 9, 1),
                record_key(lane, 5, 10, 0),
            ];
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(record_key_parts(&keys[2])?, (5, 9, 1));
            assert_eq!(record_key_parts(&record_key(lane, 0, 0, 0))?, (0, 0, 0));
            assert_eq!(
                record_key_parts(&record_key(lane, u64::MAX, 1, 2))?,
                (u64::MAX, 1, 2)
            );
            assert!(keys.iter().all(|k| k.as_slice() < lane_end(lane).as_slice()
                && k.as_slice() >= lane_start(lane).as_slice()
                && is_reserved_key(k)));
            let (start, end) = record_ts_range(lane, 6, u64::MAX);
            assert!(start <= keys[0] && keys[0] < end && keys[1] >= end);
            assert!(record_key_parts(&end).is_err());
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

    #[test]
    fn a_table_key_names_its_tables_records() {
        let table = b"t\x80\x00\x00\x00\x00\x00\x00\x05";
        let row = [&table[..], b"_r\x80\x01"].concat();
        let (start, end) = records_of_table_key(&row).expect("a row key");
        let rec = record_key(table, 7, 8, 0);
        assert!(start <= rec && rec < end && row < start);
        assert_eq!(
            records_of_table_key(&rec),
            None,
            "a record key is not a row's"
        );
        assert_eq!(records_of_table_key(b"kv/key"), None);
    }

    #[test]
    fn the_layout_mark_names_its_layout() {
        assert_eq!(layout_of_settings(LAYOUT_MARK), KEY_LAYOUT.to_string());
        assert_eq!(layout_of_settings(b"server_id=1 domain_id=0"), "1");
        assert_eq!(layout_of_settings(b"surge-stream-key-layout=7\nx"), "7");
    }
}

#[cfg(test)]
mod range_props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A record key lies in `record_ts_range(lane, lo, hi)` exactly when
        /// `lo <= record_ts < hi` (or `hi` is `u64::MAX`).
        #[test]
        fn a_range_holds_exactly_its_records(
            record_ts in prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64), any::<u64>()],
            lo in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
            hi in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
            start_ts in any::<u64>(),
            chunk_no in any::<u32>(),
            table in any::<bool>(),
        ) {
            let lane: &[u8] = if table { b"t\x80\x00\x00\x00\x00\x00\x00\x05" } else { b"" };
            let key = record_key(lane, record_ts, start_ts, chunk_no);
            let (start, end) = record_ts_range(lane, lo, hi);
            let inside = start <= key && key < end;
            let want = lo <= record_ts && (record_ts < hi || hi == u64::MAX);
            prop_assert_eq!(inside, want, "record_ts {} in [{}, {})", record_ts, lo, hi);
            prop_assert!(start.as_slice() >= lane_start(lane).as_slice() || start >= end);
            prop_assert!(end.as_slice() <= lane_end(lane).as_slice());
        }
    }
}
