//! Engine keys: the memcomparable encoding of user keys, with an optional timestamp suffix.
//!
//! The encoding is TiKV's `codec::bytes::encode_bytes` (itself from the MyRocks/TiDB key
//! format): the key is cut into groups of [`GROUP`] bytes; every group is written in full,
//! the last one padded with zeros, and followed by a marker byte `0xFF - padding`. A full
//! group that is not the last has marker `0xFF`; the last group always has a marker below
//! `0xFF` (a key whose length is a multiple of 8 ends with an all-padding group).
//!
//! # Invariants
//! - Order: `a < b` (bytewise) exactly when `encode_key(a) < encode_key(b)`.
//! - Prefix-free: no encoded key is a proper prefix of another, so an encoded key followed
//!   by any suffix (such as a timestamp) still sorts within its own key's slot.
//! - `encode_key_with_ts` appends `!ts` big-endian, so for one key the newest version sorts
//!   first, as the write and default column families need.

use super::error::EngineError;

/// Bytes of user key per group.
const GROUP: usize = 8;
/// The marker of a full group that is followed by more groups.
const MARKER_FULL: u8 = 0xFF;
/// Bytes of the timestamp suffix.
const TS_LEN: usize = 8;

/// The memcomparable encoding of `user_key` (the lock column family's key).
pub fn encode_key(user_key: &[u8]) -> Vec<u8> {
    let groups = user_key.len() / GROUP + 1;
    let mut out = Vec::with_capacity(groups * (GROUP + 1) + TS_LEN);
    encode_into(user_key, &mut out);
    out
}

/// The engine key of `user_key`'s version at `ts`: [`encode_key`] followed by `!ts`
/// big-endian, so that newer versions sort first (the write and default column families).
pub fn encode_key_with_ts(user_key: &[u8], ts: u64) -> Vec<u8> {
    let mut out = encode_key(user_key);
    out.extend_from_slice(&(!ts).to_be_bytes());
    out
}

fn encode_into(user_key: &[u8], out: &mut Vec<u8>) {
    let mut chunks = user_key.chunks_exact(GROUP);
    for chunk in chunks.by_ref() {
        out.extend_from_slice(chunk);
        out.push(MARKER_FULL);
    }
    // The last group: the remainder (possibly empty) padded with zeros. `pad` is 1..=8, so
    // the marker is 0xF7..=0xFE and never equals MARKER_FULL.
    let rest = chunks.remainder();
    let pad = GROUP - rest.len();
    out.extend_from_slice(rest);
    out.extend(std::iter::repeat_n(0u8, pad));
    out.push(MARKER_FULL - pad as u8);
}

/// Decodes the user key at the start of `encoded`; returns it and the number of bytes it
/// took (anything after that, such as a timestamp, is left to the caller).
///
/// # Errors
/// [`EngineError::BadKey`] when the bytes end inside a group, a marker says more than 8
/// bytes of padding, or the padding is not zeros.
pub fn decode_key(encoded: &[u8]) -> Result<(Vec<u8>, usize), EngineError> {
    let mut key = Vec::with_capacity(encoded.len() / (GROUP + 1) * GROUP);
    let mut offset = 0;
    loop {
        let Some(group) = encoded.get(offset..offset + GROUP + 1) else {
            return Err(EngineError::BadKey {
                offset,
                reason: "truncated group",
            });
        };
        let (bytes, marker) = group.split_at(GROUP);
        let marker = marker[0];
        offset += GROUP + 1;
        if marker == MARKER_FULL {
            key.extend_from_slice(bytes);
            continue;
        }
        let pad = usize::from(MARKER_FULL - marker);
        if pad > GROUP {
            return Err(EngineError::BadKey {
                offset: offset - 1,
                reason: "marker claims more than 8 padding bytes",
            });
        }
        let (data, padding) = bytes.split_at(GROUP - pad);
        if padding.iter().any(|&b| b != 0) {
            return Err(EngineError::BadKey {
                offset: offset - 1 - pad,
                reason: "non-zero padding",
            });
        }
        key.extend_from_slice(data);
        return Ok((key, offset));
    }
}

/// Splits an engine key made by [`encode_key_with_ts`] into the encoded user key and the
/// timestamp.
///
/// # Errors
/// [`EngineError::BadKey`] when the key is too short to hold a group and a timestamp, or its
/// key part is not a whole number of groups.
pub fn split_ts(encoded_with_ts: &[u8]) -> Result<(&[u8], u64), EngineError> {
    let Some(key_len) = encoded_with_ts.len().checked_sub(TS_LEN) else {
        return Err(EngineError::BadKey {
            offset: 0,
            reason: "shorter than a timestamp",
        });
    };
    if key_len == 0 || key_len % (GROUP + 1) != 0 {
        return Err(EngineError::BadKey {
            offset: key_len,
            reason: "key part is not a whole number of groups",
        });
    }
    let (key, ts) = encoded_with_ts.split_at(key_len);
    let mut buf = [0u8; TS_LEN];
    buf.copy_from_slice(ts);
    Ok((key, !u64::from_be_bytes(buf)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings_match_tikv_layout() {
        let cases: Vec<(&[u8], Vec<u8>)> = vec![
            (b"", vec![0, 0, 0, 0, 0, 0, 0, 0, 0xF7]),
            (b"\x01\x02\x03", vec![1, 2, 3, 0, 0, 0, 0, 0, 0xFA]),
            (
                b"12345678",
                [b"12345678".as_slice(), &[0xFF], &[0; 8], &[0xF7]].concat(),
            ),
            (
                b"123456789",
                [b"12345678".as_slice(), &[0xFF], b"9", &[0; 7], &[0xF8]].concat(),
            ),
        ];
        for (key, want) in cases {
            assert_eq!(encode_key(key), want, "key {key:?}");
            assert_eq!(decode_key(&want).unwrap(), (key.to_vec(), want.len()));
        }
    }

    #[test]
    fn malformed_keys_are_errors() {
        let cases: Vec<(&[u8], &str)> = vec![
            (b"", "truncated group"),
            (&[1, 2, 3], "truncated group"),
            (&[0, 0, 0, 0, 0, 0, 0, 0, 0xFF], "truncated group"),
            (
                &[0, 0, 0, 0, 0, 0, 0, 0, 0x00],
                "marker claims more than 8 padding bytes",
            ),
            (&[1, 2, 3, 0, 0, 9, 0, 0, 0xFA], "non-zero padding"),
        ];
        for (bytes, reason) in cases {
            match decode_key(bytes) {
                Err(EngineError::BadKey { reason: got, .. }) => assert_eq!(got, reason),
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn timestamps_sort_newest_first_and_split_back() {
        let older = encode_key_with_ts(b"k", 5);
        let newer = encode_key_with_ts(b"k", 9);
        assert!(newer < older);
        assert_eq!(split_ts(&older).unwrap(), (encode_key(b"k").as_slice(), 5));
        assert!(split_ts(&older[..7]).is_err());
        assert!(split_ts(&older[1..]).is_err());
    }
}
