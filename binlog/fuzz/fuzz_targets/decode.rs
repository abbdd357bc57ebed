//! Fuzzes the decoders: any bytes, as a whole file and as one event under both checksum
//! settings, must give a value or an error, never a panic. A decoded event, re-encoded,
//! must decode to the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use surge_binlog::{BINLOG_MAGIC, ChecksumAlg, Event, decode_file_bytes};

fuzz_target!(|data: &[u8]| {
    for alg in [ChecksumAlg::Crc32, ChecksumAlg::Off] {
        if let Ok(ev) = Event::decode(data, alg) {
            let again = Event::decode(&ev.encode(alg), alg).expect("re-encoded event decodes");
            assert_eq!(again.body, ev.body);
            assert_eq!(again.header.log_pos, ev.header.log_pos);
        }
    }
    let mut file = BINLOG_MAGIC.to_vec();
    file.extend_from_slice(data);
    let _ = decode_file_bytes(&file);
    let _ = decode_file_bytes(data);
});
