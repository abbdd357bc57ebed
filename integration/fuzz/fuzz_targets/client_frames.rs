//! What a node reads from a client: a hello (here the whole input, and every frame body),
//! then `ClientFrame`s in length-prefixed frames. Nothing may panic; whatever decodes must
//! survive a round trip. The checks are `surgedb::wire::checks`, which `tests/wire_props.rs`
//! runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::wire::ClientFrame;
use surgedb::wire::checks::{check_decoded, check_hello, check_stream};

fuzz_target!(|data: &[u8]| {
    let checked = check_hello(data).and_then(|()| {
        check_stream(data, |body| {
            check_decoded::<ClientFrame>(body)?;
            check_hello(body)
        })
    });
    if let Err(e) = checked {
        panic!("{e}");
    }
});
