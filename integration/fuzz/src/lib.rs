//! The checks both fuzz targets run: a byte stream read frame by frame as a node or a client
//! reads its peer, each body decoded, and whatever decodes encoded and decoded again.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use surgedb::wire::{
    FrameError, MAGIC, MAX_FRAME, PROTOCOL_VERSION, decode_hello, encode_hello, read_frame,
};

/// Reads `data` as a stream of frames until it ends or a length prefix is over the limit,
/// decodes every body as a `T` (and hands it to `also`), and checks what decodes.
///
/// # Panics
/// When a frame claims more bytes than the stream holds and still reads, when an over-limit
/// length is reported wrongly, or when a decoded `T` does not survive its own round trip.
pub fn check_stream<T>(data: &[u8], also: impl Fn(&[u8]))
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let mut stream = data;
    let mut body = Vec::new();
    loop {
        let left = stream.len();
        match read_frame(&mut stream, &mut body) {
            Ok(()) => {
                assert_eq!(
                    left - stream.len(),
                    4 + body.len(),
                    "a frame read past itself"
                );
                check_decoded::<T>(&body);
                also(&body);
            }
            Err(FrameError::TooLarge { len, max }) => {
                assert!(len > max && max == MAX_FRAME, "TooLarge {len} of {max}");
                // Framing is lost: the peer closes the connection here.
                return;
            }
            Err(FrameError::Closed) => return,
            // A slice fails no read: anything else is a decoder bug.
            Err(e) => panic!("reading a byte slice failed: {e}"),
        }
    }
}

/// Decodes `body` as a `T`; what decodes must encode and decode from that to an equal
/// value. (Not necessarily to the same bytes: postcard accepts overlong varints, and the txn
/// crate maps a corrupt-record name it does not know to a generic one.)
///
/// # Panics
/// When the decoded value does not survive the round trip.
pub fn check_decoded<T>(body: &[u8])
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let Ok(value) = postcard::from_bytes::<T>(body) else {
        return;
    };
    let again = postcard::to_allocvec(&value).expect("a decoded value encodes");
    assert_eq!(postcard::from_bytes::<T>(&again).ok(), Some(value));
}

/// Decodes `body` as a hello: one that passes carries [`MAGIC`] and [`PROTOCOL_VERSION`] and
/// survives its own round trip.
///
/// # Panics
/// When an accepted hello has another prefix or does not survive the round trip.
pub fn check_hello(body: &[u8]) {
    let Ok(hello) = decode_hello(body) else {
        return;
    };
    assert_eq!(body[..4], MAGIC);
    assert_eq!(body[4..8], PROTOCOL_VERSION.to_le_bytes());
    assert_eq!(decode_hello(&encode_hello(&hello)), Ok(hello));
}
