//! The decoder checks that the fuzz targets (`integration/fuzz`) and the property tests
//! (`tests/wire_props.rs`) both run on bytes from anywhere: a stream read frame by frame as a
//! node or a client reads its peer, each body decoded, and whatever decodes encoded and
//! decoded again. One copy for both; not an API.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::frame::{FrameError, MAX_FRAME, read_frame};
use super::messages::{MAGIC, PROTOCOL_VERSION, decode_hello, encode_hello};

/// What a check found wrong: a decoder bug.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckFailure {
    /// A frame read consumed other than its prefix and body.
    #[error("a frame of {body} bytes consumed {consumed} bytes of the stream")]
    FramePastItself {
        /// Bytes the read took from the stream.
        consumed: usize,
        /// The body's length.
        body: usize,
    },
    /// An over-limit length was reported with the wrong figures.
    #[error("TooLarge {{ len: {len}, max: {max} }} (the limit is {MAX_FRAME})")]
    TooLargeMisreported {
        /// The reported length.
        len: usize,
        /// The reported limit.
        max: usize,
    },
    /// Reading a byte slice failed other than by ending or an over-limit length.
    #[error("reading a byte slice failed: {detail}")]
    ReadFailed {
        /// The error.
        detail: String,
    },
    /// A decoded value did not survive encoding and decoding again.
    #[error("{value} decoded, but encoding and decoding it gave {again}")]
    RoundTrip {
        /// The decoded value (`Debug`).
        value: String,
        /// What the round trip gave (`Debug` of the value or of the error).
        again: String,
    },
    /// An accepted hello does not start with the magic and our version.
    #[error("a hello starting {prefix:02x?} was accepted")]
    HelloPrefix {
        /// Its first eight bytes.
        prefix: Vec<u8>,
    },
}

/// How a stream read by [`check_stream`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRead {
    /// Frames read whole.
    pub frames: usize,
    /// The body buffer's capacity at the end: what reading cost, which must follow the bytes
    /// that arrived, never the lengths claimed.
    pub buffer_capacity: usize,
}

/// Reads `data` as a stream of frames until it ends or a length prefix is over the limit
/// (framing is lost: the peer closes the connection there), handing every body to
/// `on_body`.
///
/// # Errors
/// `on_body`'s failure, or a read that took more than its frame, reported an over-limit
/// length wrongly, or failed otherwise (a slice fails no read).
pub fn check_stream(
    data: &[u8],
    mut on_body: impl FnMut(&[u8]) -> Result<(), CheckFailure>,
) -> Result<StreamRead, CheckFailure> {
    let mut stream = data;
    let mut body = Vec::new();
    let mut frames = 0;
    loop {
        let left = stream.len();
        match read_frame(&mut stream, &mut body) {
            Ok(()) => {
                let consumed = left - stream.len();
                if consumed != 4 + body.len() {
                    return Err(CheckFailure::FramePastItself {
                        consumed,
                        body: body.len(),
                    });
                }
                frames += 1;
                on_body(&body)?;
            }
            Err(FrameError::TooLarge { len, max }) => {
                if len <= max || max != MAX_FRAME {
                    return Err(CheckFailure::TooLargeMisreported { len, max });
                }
                break;
            }
            Err(FrameError::Closed) => break,
            Err(e) => {
                return Err(CheckFailure::ReadFailed {
                    detail: e.to_string(),
                });
            }
        }
    }
    Ok(StreamRead {
        frames,
        buffer_capacity: body.capacity(),
    })
}

/// Decodes `body` as a `T`; what decodes must encode and decode from that to an equal value.
/// (Not necessarily to the same bytes: postcard accepts overlong varints, and the txn crate
/// maps a corrupt-record name it does not know to a generic one.)
///
/// # Errors
/// [`CheckFailure::RoundTrip`] when the decoded value does not survive the round trip.
pub fn check_decoded<T>(body: &[u8]) -> Result<(), CheckFailure>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let Ok(value) = postcard::from_bytes::<T>(body) else {
        return Ok(());
    };
    let again = postcard::to_allocvec(&value)
        .map_err(|e| format!("encoding failed: {e}"))
        .and_then(|bytes| {
            postcard::from_bytes::<T>(&bytes).map_err(|e| format!("decoding failed: {e}"))
        });
    match again {
        Ok(again) if again == value => Ok(()),
        Ok(again) => Err(CheckFailure::RoundTrip {
            value: format!("{value:?}"),
            again: format!("{again:?}"),
        }),
        Err(e) => Err(CheckFailure::RoundTrip {
            value: format!("{value:?}"),
            again: e,
        }),
    }
}

/// Decodes `body` as a hello: one that passes carries [`MAGIC`] and [`PROTOCOL_VERSION`]
/// and survives its own round trip.
///
/// # Errors
/// [`CheckFailure::HelloPrefix`] or [`CheckFailure::RoundTrip`].
pub fn check_hello(body: &[u8]) -> Result<(), CheckFailure> {
    let Ok(hello) = decode_hello(body) else {
        return Ok(());
    };
    if body.get(..4) != Some(&MAGIC[..])
        || body.get(4..8) != Some(&PROTOCOL_VERSION.to_le_bytes()[..])
    {
        return Err(CheckFailure::HelloPrefix {
            prefix: body.iter().take(8).copied().collect(),
        });
    }
    match decode_hello(&encode_hello(&hello)) {
        Ok(again) if again == hello => Ok(()),
        again => Err(CheckFailure::RoundTrip {
            value: format!("{hello:?}"),
            again: format!("{again:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ClientFrame, Hello, ServerFrame, write_frame};

    #[test]
    fn a_stream_of_frames_and_hellos_passes_and_counts_its_frames() {
        let hello = encode_hello(&Hello {
            cluster_id: Some("c".into()),
            from_node: None,
        });
        let frame = postcard::to_allocvec(&ClientFrame::ServerStats { id: 9 }).expect("encode");
        let mut wire = Vec::new();
        for body in [&hello, &frame, &vec![0xff; 3]] {
            write_frame(&mut wire, body).expect("write");
        }
        let got = check_stream(&wire, |b| {
            check_hello(b)?;
            check_decoded::<ClientFrame>(b)?;
            check_decoded::<ServerFrame>(b)
        });
        assert_eq!(got.map(|r| r.frames), Ok(3));
    }

    #[test]
    fn an_over_limit_length_ends_the_stream() {
        let mut wire = ((MAX_FRAME + 1) as u32).to_le_bytes().to_vec();
        wire.extend_from_slice(b"rest");
        let got = check_stream(&wire, |_| panic!("no body"));
        assert_eq!(got.map(|r| (r.frames, r.buffer_capacity)), Ok((0, 0)));
    }

    /// What the checks report: a check that cannot fail would pass these too.
    #[test]
    fn failures_are_reported() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"x").expect("write");
        let refuse = |_: &[u8]| {
            Err(CheckFailure::ReadFailed {
                detail: "refused".into(),
            })
        };
        assert!(matches!(
            check_stream(&wire, refuse),
            Err(CheckFailure::ReadFailed { .. })
        ));
        // A type whose decoding is not the inverse of its encoding.
        #[derive(Debug, PartialEq)]
        struct Lossy(u8);
        impl Serialize for Lossy {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u8(self.0.wrapping_add(1))
            }
        }
        impl<'de> serde::Deserialize<'de> for Lossy {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Lossy, D::Error> {
                u8::deserialize(d).map(Lossy)
            }
        }
        assert_eq!(
            check_decoded::<Lossy>(&[5]),
            Err(CheckFailure::RoundTrip {
                value: "Lossy(5)".into(),
                again: "Lossy(6)".into(),
            })
        );
    }
}
