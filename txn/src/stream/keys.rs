//! Where stream records live in the key space.
//!
//! # Layout
//!
//! ```text
//! key := STREAM_PREFIX record_ts:u64 start_ts:u64 chunk_no:u32   (big-endian)
//! ```
//!
//! `record_ts` first, so that a reader scans only the records taken at or after a bound
//! (`client/stream_reader.rs` explains why that bound is exact). `start_ts` makes the key
//! unique to one transaction; `chunk_no` orders a record's chunks.
//!
//! An external record's payload chunks (`chunks.rs`) are under their own prefix:
//!
//! ```text
//! payload key := STREAM_PAYLOAD_PREFIX start_ts:u64 chunk_no:u32
//! ```
//!
//! The prefixes start with `0xFF 0xFF` so that the records sort after every ordinary key
//! (SQL table keys, `surgedb`.`kv` keys of readable text): they end up in the last region
//! and away from user data. Users may not write keys in the reserved range
//! `[STREAM_PREFIX, 0xFF 0xFF "stream;")`, which holds both prefixes
//! ([`crate::TxnError::ReservedKey`]), and their scans skip it.

use super::error::StreamDecodeError;

/// The prefix of every stream record key: `0xFF 0xFF "stream/"`.
pub const STREAM_PREFIX: &[u8] = b"\xff\xffstream/";

/// The smallest key above every key under [`STREAM_PREFIX`] (`'/' + 1 = '0'`).
pub(crate) const STREAM_END: &[u8] = b"\xff\xffstream0";

/// The prefix of an external record's payload chunks: `0xFF 0xFF "stream:"`.
pub(crate) const STREAM_PAYLOAD_PREFIX: &[u8] = b"\xff\xffstream:";

/// The end of the reserved range `[STREAM_PREFIX, RESERVED_END)` (`':' + 1 = ';'`): both
/// prefixes and the keys between them.
pub(crate) const RESERVED_END: &[u8] = b"\xff\xffstream;";

/// Bytes of a record key.
const KEY_LEN: usize = STREAM_PREFIX.len() + 8 + 8 + 4;

/// Whether `key` is reserved for stream records (user writes refused, scans skip it).
pub(crate) fn is_reserved_key(key: &[u8]) -> bool {
    key >= STREAM_PREFIX && key < RESERVED_END
}

/// The key of payload chunk `chunk_no` of transaction `start_ts`'s external record.
pub(crate) fn payload_key(start_ts: u64, chunk_no: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(STREAM_PAYLOAD_PREFIX.len() + 12);
    k.extend_from_slice(STREAM_PAYLOAD_PREFIX);
    k.extend_from_slice(&start_ts.to_be_bytes());
    k.extend_from_slice(&chunk_no.to_be_bytes());
    k
}

/// The key of chunk `chunk_no` of the record of transaction `start_ts` taken at `record_ts`.
pub(crate) fn record_key(record_ts: u64, start_ts: u64, chunk_no: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(KEY_LEN);
    k.extend_from_slice(STREAM_PREFIX);
    k.extend_from_slice(&record_ts.to_be_bytes());
    k.extend_from_slice(&start_ts.to_be_bytes());
    k.extend_from_slice(&chunk_no.to_be_bytes());
    k
}

/// The first key of records taken at or after `record_ts`.
pub(crate) fn stream_lower_key(record_ts: u64) -> Vec<u8> {
    let mut k = STREAM_PREFIX.to_vec();
    k.extend_from_slice(&record_ts.to_be_bytes());
    k
}

/// `(record_ts, start_ts, chunk_no)` of a record key.
///
/// # Errors
/// [`StreamDecodeError`] when `key` is not a record key (wrong prefix or length).
pub(crate) fn record_key_parts(key: &[u8]) -> Result<(u64, u64, u32), StreamDecodeError> {
    let Some(rest) = key.strip_prefix(STREAM_PREFIX) else {
        return Err(StreamDecodeError::new(
            "key",
            0,
            "not under the stream prefix",
        ));
    };
    if key.len() != KEY_LEN {
        return Err(StreamDecodeError::new(
            "key",
            STREAM_PREFIX.len(),
            format!("{} bytes, a record key has {KEY_LEN}", key.len()),
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
        let keys = [
            record_key(5, 9, 0),
            record_key(5, 9, 1),
            record_key(5, 10, 0),
            record_key(6, 1, 0),
        ];
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(record_key_parts(&keys[1])?, (5, 9, 1));
        assert!(stream_lower_key(6) <= keys[3] && stream_lower_key(6) > keys[2]);
        assert!(
            keys.iter()
                .all(|k| k.as_slice() < STREAM_END && is_reserved_key(k))
        );
        assert!(STREAM_PREFIX < STREAM_END && STREAM_END < STREAM_PAYLOAD_PREFIX);
        assert!(is_reserved_key(&payload_key(1, 2)) && payload_key(1, 2).as_slice() < RESERVED_END);
        assert!(payload_key(1, 2) < payload_key(1, 3) && payload_key(1, 9) < payload_key(2, 0));
        assert!(!is_reserved_key(RESERVED_END) && !is_reserved_key(b"\xff\xffstream"));
        assert!(record_key_parts(b"abc").is_err());
        assert!(record_key_parts(&stream_lower_key(1)).is_err());
        // Ordinary keys sort below the prefix.
        assert!(b"t\x80\x00\x00\x01_r".as_slice() < STREAM_PREFIX);
        assert!(!is_reserved_key(b"\xff\xff"));
        Ok(())
    }
}
