//! What a node reads from a client: a hello (here the whole input, and every frame body),
//! then `ClientFrame`s in length-prefixed frames. Nothing may panic; whatever decodes must
//! survive a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::wire::ClientFrame;
use surgedb_fuzz::{check_hello, check_stream};

fuzz_target!(|data: &[u8]| {
    check_hello(data);
    check_stream::<ClientFrame>(data, check_hello);
});
