//! What a client reads from a node: `ServerFrame`s in length-prefixed frames. Nothing may
//! panic; whatever decodes must survive a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::wire::ServerFrame;
use surgedb_fuzz::check_stream;

fuzz_target!(|data: &[u8]| {
    check_stream::<ServerFrame>(data, |_| {});
});
