//! COM_STMT_EXECUTE's parameter decoder: a parameter count, optionally types bound by an
//! earlier execution, and a body. Nothing may panic; decoded values must survive the
//! encoder and decode again, with and without the types resent. The check is
//! `surgedb::mysql::checks::check_execute`, which `tests/mysql_codec_props.rs` runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surgedb::mysql::checks::check_execute;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = check_execute(data) {
        panic!("{e}");
    }
});
