//! How far each reader of the stream has the records, and how far they were collected:
//! [`StreamPosition`] and the registry keys that keep them.
//!
//! # Layout
//!
//! ```text
//! position key   := LANES_PREFIX "!pos/" owner:u64
//! position value := lower_record_ts:u64 done_ts:u64 updated_ms:u64
//! collected key  := LANES_PREFIX "!collected"    (records below may be gone)
//! swept key      := LANES_PREFIX "!swept"        (records below are gone)
//! mark value     := record_ts:u64
//! ```
//!
//! (big-endian). Both live in the lane registry's range, which only readers list and which
//! users may not write; neither has a lane's shape, so the registry listing skips them.

use super::error::StreamDecodeError;

/// The registry key that says below which `record_ts` records may have been collected.
pub(crate) const COLLECTED_KEY: &[u8] = b"\xff\xffstream.!collected";

/// The registry key that says below which `record_ts` every record is gone.
pub(crate) const SWEPT_KEY: &[u8] = b"\xff\xffstream.!swept";

/// The prefix of every position key.
pub(crate) const POSITIONS_PREFIX: &[u8] = b"\xff\xffstream.!pos/";

/// The smallest key above every position key (`'/' + 1 = '0'`).
pub(crate) const POSITIONS_END: &[u8] = b"\xff\xffstream.!pos0";

/// Where one reader of the stream stands, as it last published it
/// ([`crate::TxnClient::stream_publish_position`]).
///
/// # Invariants
/// The reader needs no record with `record_ts < lower_record_ts` any more: a collection
/// below it ([`crate::TxnClient::stream_collect`]) takes nothing from this reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamPosition {
    /// Who published it (a node id, for a node's stream copy).
    pub owner: u64,
    /// The smallest `record_ts` the reader may still need.
    pub lower_record_ts: u64,
    /// The reader has every transaction committed at or below this timestamp.
    pub done_ts: u64,
    /// When it was published: the physical milliseconds of the publishing transaction's
    /// start timestamp (the oracle's clock, not the reader's).
    pub updated_ms: u64,
}

/// The key of `owner`'s position.
pub(crate) fn position_key(owner: u64) -> Vec<u8> {
    [POSITIONS_PREFIX, &owner.to_be_bytes()].concat()
}

/// The value of a position (`owner` is in its key).
pub(crate) fn encode_position(p: &StreamPosition) -> Vec<u8> {
    [
        p.lower_record_ts.to_be_bytes(),
        p.done_ts.to_be_bytes(),
        p.updated_ms.to_be_bytes(),
    ]
    .concat()
}

/// Reads one big-endian `u64` of `what` at `at`.
fn u64_at(bytes: &[u8], at: usize, what: &'static str) -> Result<u64, StreamDecodeError> {
    bytes
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| {
            StreamDecodeError::new(
                what,
                at,
                format!("{} bytes, want at least {}", bytes.len(), at + 8),
            )
        })
}

/// A position from its key and value.
///
/// # Errors
/// [`StreamDecodeError`] naming the field when either is not a position's.
pub(crate) fn decode_position(
    key: &[u8],
    value: &[u8],
) -> Result<StreamPosition, StreamDecodeError> {
    let owner_bytes = key.strip_prefix(POSITIONS_PREFIX).ok_or_else(|| {
        StreamDecodeError::new("position key", 0, "not under the positions prefix")
    })?;
    if owner_bytes.len() != 8 {
        return Err(StreamDecodeError::new(
            "position key",
            POSITIONS_PREFIX.len(),
            format!("{} bytes of owner, want 8", owner_bytes.len()),
        ));
    }
    if value.len() != 24 {
        return Err(StreamDecodeError::new(
            "position value",
            0,
            format!("{} bytes, want 24", value.len()),
        ));
    }
    Ok(StreamPosition {
        owner: u64_at(owner_bytes, 0, "position owner")?,
        lower_record_ts: u64_at(value, 0, "position lower_record_ts")?,
        done_ts: u64_at(value, 8, "position done_ts")?,
        updated_ms: u64_at(value, 16, "position updated_ms")?,
    })
}

/// A mark (collected or swept) from its value.
///
/// # Errors
/// [`StreamDecodeError`] when it is not 8 bytes.
pub(crate) fn decode_mark(value: &[u8]) -> Result<u64, StreamDecodeError> {
    if value.len() != 8 {
        return Err(StreamDecodeError::new(
            "stream mark",
            0,
            format!("{} bytes, want 8", value.len()),
        ));
    }
    u64_at(value, 0, "stream mark")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::keys::{
        LANES_PREFIX, RESERVED_END, STREAM_PREFIX, is_reserved_key, is_table_lane,
    };

    #[test]
    fn positions_round_trip_and_stay_in_the_registry_range() {
        let p = StreamPosition {
            owner: 3,
            lower_record_ts: 1 << 40,
            done_ts: (1 << 40) + 7,
            updated_ms: 123_456,
        };
        let key = position_key(p.owner);
        assert_eq!(decode_position(&key, &encode_position(&p)).unwrap(), p);
        for k in [key.as_slice(), COLLECTED_KEY, SWEPT_KEY, POSITIONS_END] {
            assert!(k > LANES_PREFIX && k < STREAM_PREFIX && k < RESERVED_END);
            assert!(is_reserved_key(k));
            assert!(!is_table_lane(&k[LANES_PREFIX.len()..]));
        }
        assert!(key.as_slice() < POSITIONS_END);
        assert!(position_key(u64::MAX).as_slice() < POSITIONS_END);
    }

    #[test]
    fn damaged_positions_name_the_field() {
        let key = position_key(1);
        let e = decode_position(&key, &[0; 10]).unwrap_err();
        assert!(e.to_string().contains("position value"), "{e}");
        let e = decode_position(&key[..key.len() - 1], &[0; 24]).unwrap_err();
        assert!(e.to_string().contains("position key"), "{e}");
        let e = decode_position(b"other", &[0; 24]).unwrap_err();
        assert!(e.to_string().contains("position key"), "{e}");
        assert_eq!(decode_mark(&9u64.to_be_bytes()).unwrap(), 9);
        assert!(decode_mark(&[1, 2]).is_err());
    }
}
