//! The client protocol: length-prefixed frames of postcard-encoded messages, opened by a
//! versioned handshake.
//!
//! A connection starts with the client's hello frame (`SRGD`, [`surge_txn::PROTOCOL_VERSION`]
//! as `u32` little-endian, then a postcard [`Hello`]); the server answers
//! [`ServerFrame::Welcome`] or [`ServerFrame::Error`] and closes. After the welcome the client
//! sends [`ClientFrame`]s, one at a time, each answered by one [`ServerFrame`] carrying the
//! same request id. Every frame is `[len u32 LE][body]` with `len <= MAX_FRAME`.

mod frame;
mod messages;

pub use frame::{FrameError, MAX_FRAME, read_frame, write_frame};
pub use messages::{
    ClientFrame, Hello, MAGIC, ServerFrame, ServerStats, WireError, decode_hello, encode_hello,
    encode_hello_with_version,
};
