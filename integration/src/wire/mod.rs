//! The client protocol: length-prefixed frames of postcard-encoded messages, opened by a
//! versioned handshake.
//!
//! A connection starts with the client's hello frame (`SRGD`, [`PROTOCOL_VERSION`] as `u32`
//! little-endian, then a postcard [`Hello`]); the server answers [`ServerFrame::Welcome`] or
//! [`ServerFrame::Error`] and closes. After the welcome the client sends [`ClientFrame`]s,
//! one at a time, each answered by one [`ServerFrame`] carrying the same request id. Every
//! frame is `[len u32 LE][body]` with `len <= MAX_FRAME`.
//!
//! Two kinds of request share a connection: [`ClientFrame::Request`] (a `KvRequest` to the
//! node's storage service) and [`ClientFrame::Txn`] (a [`TxnOp`] to the node's transaction
//! coordinator, answered with a [`TxnReply`] or a [`TxnFailure`]). Coordinator
//! transactions belong to the connection's session: closing the connection rolls back those
//! still open.

// The decoder checks the fuzz targets and `tests/wire_props.rs` share. Not an API.
#[doc(hidden)]
pub mod checks;
mod frame;
mod messages;
mod txn_failure;
mod txn_op;
mod txn_reply;

pub use frame::{FrameError, MAX_FRAME, read_frame, write_frame};
pub use messages::{
    ClientFrame, Hello, MAGIC, PROTOCOL_VERSION, ServerFrame, ServerStats, WireError, decode_hello,
    encode_hello, encode_hello_with_version,
};
pub use txn_failure::TxnFailure;
pub use txn_op::TxnOp;
pub use txn_reply::{CoordinatorState, TxnReply};
