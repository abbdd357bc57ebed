//! Property tests of the engine key codec and the Lock/Write record codecs.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a failed unwrap is a failed test

use proptest::prelude::*;
use surge_txn::codec::{
    Lock, LockType, Write, WriteType, decode_key, encode_key, encode_key_with_ts, split_ts,
};

fn lock_type() -> impl Strategy<Value = LockType> {
    prop_oneof![
        Just(LockType::Put),
        Just(LockType::Delete),
        Just(LockType::Lock),
        Just(LockType::Pessimistic)
    ]
}

fn write_type() -> impl Strategy<Value = WriteType> {
    prop_oneof![
        Just(WriteType::Put),
        Just(WriteType::Delete),
        Just(WriteType::Lock),
        Just(WriteType::Rollback)
    ]
}

proptest! {
    #[test]
    fn encoding_preserves_order(a in prop::collection::vec(any::<u8>(), 0..40), b in prop::collection::vec(any::<u8>(), 0..40)) {
        prop_assert_eq!(a.cmp(&b), encode_key(&a).cmp(&encode_key(&b)));
    }

    #[test]
    fn encoding_round_trips(key in prop::collection::vec(any::<u8>(), 0..100), suffix in prop::collection::vec(any::<u8>(), 0..10)) {
        let mut encoded = encode_key(&key);
        let len = encoded.len();
        encoded.extend_from_slice(&suffix);
        prop_assert_eq!(decode_key(&encoded).unwrap(), (key, len));
    }

    #[test]
    fn no_encoded_key_is_a_prefix_of_another(a in prop::collection::vec(any::<u8>(), 0..40), b in prop::collection::vec(any::<u8>(), 0..40)) {
        prop_assume!(a != b);
        let (ea, eb) = (encode_key(&a), encode_key(&b));
        prop_assert!(!eb.starts_with(&ea) && !ea.starts_with(&eb));
    }

    #[test]
    fn versions_sort_by_key_then_newest_first(a in prop::collection::vec(any::<u8>(), 0..20), b in prop::collection::vec(any::<u8>(), 0..20), ta: u64, tb: u64) {
        let (ea, eb) = (encode_key_with_ts(&a, ta), encode_key_with_ts(&b, tb));
        prop_assert_eq!(ea.cmp(&eb), a.cmp(&b).then(tb.cmp(&ta)));
        let encoded = encode_key(&a);
        prop_assert_eq!(split_ts(&ea).unwrap(), (encoded.as_slice(), ta));
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Ok((key, used)) = decode_key(&bytes) {
            prop_assert_eq!(&encode_key(&key)[..], &bytes[..used]);
        }
        let _ = split_ts(&bytes);
    }

    #[test]
    fn lock_codec_round_trips(
        lock_type in lock_type(),
        primary in prop::collection::vec(any::<u8>(), 0..20),
        start_ts: u64, ttl: u64, for_update_ts: u64, txn_size: u64, min_commit_ts: u64,
        short_value in prop::option::of(prop::collection::vec(any::<u8>(), 0..300)),
    ) {
        let lock = Lock { lock_type, primary, start_ts, ttl, short_value, for_update_ts, txn_size, min_commit_ts };
        prop_assert_eq!(Lock::from_bytes(b"k", &lock.to_bytes()).unwrap(), lock);
    }

    #[test]
    fn write_codec_round_trips(
        write_type in write_type(), start_ts: u64, protected: bool, has_overlapped_rollback: bool,
        short_value in prop::option::of(prop::collection::vec(any::<u8>(), 0..300)),
    ) {
        let write = Write { write_type, start_ts, short_value, protected, has_overlapped_rollback };
        prop_assert_eq!(Write::from_bytes(b"k", &write.to_bytes()).unwrap(), write);
    }

    #[test]
    fn record_decoders_refuse_or_accept_arbitrary_bytes_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = Lock::from_bytes(b"k", &bytes);
        let _ = Write::from_bytes(b"k", &bytes);
    }
}
