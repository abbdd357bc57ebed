//! What a client reads from a node: `ServerFrame`s in length-prefixed frames. Nothing may
//! panic; whatever decodes must survive a round trip. The checks are
//! `surgedb::wire::checks`, which `tests/wire_props.rs` runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::wire::ServerFrame;
use surgedb::wire::checks::{check_decoded, check_stream};

fuzz_target!(|data: &[u8]| {
    if let Err(e) = check_stream(data, check_decoded::<ServerFrame>) {
        panic!("{e}");
    }
});
