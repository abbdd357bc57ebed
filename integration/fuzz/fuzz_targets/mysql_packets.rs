//! What a MySQL connection reads from a client: bytes split into packets
//! (`[len u24][seq u8][payload]`, 16 MiB chunks joined). Nothing may panic; the packets that
//! decode must re-frame to exactly the bytes read. The check is
//! `surgedb::mysql::checks::check_packets`, which `tests/mysql_codec_props.rs` runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::mysql::checks::check_packets;

fuzz_target!(|data: &[u8]| {
    // A small limit so the fuzzer reaches the max_allowed_packet refusal too.
    for max in [64, 1 << 20] {
        if let Err(e) = check_packets(data, max) {
            panic!("{e}");
        }
    }
});
