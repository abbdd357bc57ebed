//! Decodes arbitrary bytes as a stream record: the decoder must refuse bad input with an
//! error, never panic, and whatever it accepts must encode back to the same bytes (the
//! layout has one encoding per record). Its groups' events are decoded too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surge_txn::{decode_stream_record, encode_stream_record, stream_events_from_cache_bytes};

fuzz_target!(|data: &[u8]| {
    if let Ok(groups) = decode_stream_record(data) {
        assert_eq!(encode_stream_record(&groups), data);
        for g in &groups {
            let _ = g.decode_events();
        }
    }
    let _ = stream_events_from_cache_bytes(data);
});
