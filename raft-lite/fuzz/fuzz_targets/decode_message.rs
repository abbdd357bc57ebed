//! Any bytes from the network decode to a message or an error, never a panic; whatever
//! decodes re-encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surge_raft_lite::{decode_conf_state, decode_message, encode_message};

fuzz_target!(|data: &[u8]| {
    if let Ok((group, msg)) = decode_message(data) {
        let mut out = Vec::new();
        encode_message(group, &msg, &mut out);
        assert_eq!(out, data, "decode/encode must round-trip");
    }
    let _ = decode_conf_state(data);
});
