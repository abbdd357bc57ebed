//! Decodes arbitrary bytes as an engine key, a versioned engine key, a lock and a write
//! record: every decoder must refuse bad input with an error, never panic, and whatever it
//! accepts must encode back to the bytes it consumed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surge_txn::codec::{Lock, Write, decode_key, encode_key, split_ts};

fuzz_target!(|data: &[u8]| {
    if let Ok((key, used)) = decode_key(data) {
        assert_eq!(encode_key(&key), data[..used]);
    }
    if let Ok((encoded, _ts)) = split_ts(data) {
        let _ = decode_key(encoded);
    }
    if let Ok(lock) = Lock::from_bytes(b"k", data) {
        assert_eq!(Lock::from_bytes(b"k", &lock.to_bytes()), Ok(lock));
    }
    if let Ok(write) = Write::from_bytes(b"k", data) {
        assert_eq!(Write::from_bytes(b"k", &write.to_bytes()), Ok(write));
    }
});
