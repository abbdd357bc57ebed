//! The messages of the client protocol and the hello frame's fixed prefix.

use serde::{Deserialize, Serialize};
use surge_raft_lite::NodeId;
use surge_txn::rpc::{KvRequest, KvResponse};

use super::txn_failure::TxnFailure;
use super::txn_op::TxnOp;
use super::txn_reply::TxnReply;

/// The first four bytes of every hello frame.
pub const MAGIC: [u8; 4] = *b"SRGD";

/// The client protocol's version, sent in every hello; a node refuses any other.
///
/// 1: [`ClientFrame::Request`] frames carrying the txn crate's `KvRequest` format 1.
/// 2: adds the coordinator sessions ([`ClientFrame::Txn`] / [`ServerFrame::Txn`]).
/// 3: the txn crate's format 2 (its `CommitMerge` carries the target's version;
/// `RegionError::NodeStopping`, in responses and in a [`super::TxnFailure`]'s `TxnError`).
/// 4: the txn crate's format 3 (`ScanWrites` / `Writes` for the replica stream;
/// `TxnError::StreamRecordTooSlow`, `ReservedKey` and `StreamRecord`). 5: the txn
/// crate's format 4 (`Gc` / `Gc`, and `KeyError::TooOld` inside `TxnError::Key`).
/// 6: the txn crate's format 5 (`SetGcHold`, `GcHolds` / `GcHolds`, `GetHeld`).
/// 7: the txn crate's format 6 (`Context::gc_hold_ts` in every region request).
///
/// Bump it whenever these frames or the txn crate's types they carry change encoding. Two
/// checks keep them from drifting apart silently: the assertion below stops the build when
/// the txn crate's `PROTOCOL_VERSION` (its `KvRequest`/`KvResponse` format) moves, and the
/// golden test in `golden_encoding.rs` fails when the bytes of `TxnError` (inside
/// [`super::TxnFailure`]), `TxnFailure`, [`super::TxnReply`] (with the txn crate's
/// `HotOutcome`) or the [`super::TxnOp`]s carrying the txn crate's `TxnMode`, `HotOp` and
/// `HotHints` change, which the txn crate's version does not cover.
pub const PROTOCOL_VERSION: u32 = 7;

const _: () = assert!(
    surge_txn::rpc::PROTOCOL_VERSION == 6,
    "the txn crate's request format changed: bump surgedb's wire PROTOCOL_VERSION"
);

/// What a client says about itself when it connects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The cluster the client means to talk to; `None`: any (a command-line client that
    /// knows only an address). A node refuses a hello naming another cluster.
    pub cluster_id: Option<String>,
    /// The calling node, when a node calls another (deadlock detector, timestamps).
    pub from_node: Option<NodeId>,
}

/// A frame from a client after the handshake.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientFrame {
    /// One request to the node's `KvService`.
    Request {
        /// Echoed in the answer.
        id: u64,
        /// The request.
        req: KvRequest,
    },
    /// The server's own counters (connections, bad frames).
    ServerStats {
        /// Echoed in the answer.
        id: u64,
    },
    /// One operation on the node's transaction coordinator, in this connection's session.
    Txn {
        /// Echoed in the answer.
        id: u64,
        /// The operation.
        op: TxnOp,
    },
}

/// Counters of a node's client server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Connections accepted (handshake passed).
    pub connections: u64,
    /// Connections open now.
    pub open_connections: u64,
    /// Connections refused: over the connection limit.
    pub refused_busy: u64,
    /// Handshakes refused: bad magic, other protocol version, other cluster, garbage.
    pub bad_handshakes: u64,
    /// Frames after the handshake that did not decode or were over the size limit.
    pub bad_frames: u64,
    /// Requests answered.
    pub requests: u64,
    /// Coordinator session operations answered.
    pub txn_ops: u64,
    /// Coordinator transactions rolled back because their connection closed with them open.
    pub txns_rolled_back_on_close: u64,
}

/// Why the server refused a frame or a connection.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum WireError {
    /// The hello did not start with [`MAGIC`]: not a SurgeDB client.
    #[error("bad magic {found:02x?} (want {MAGIC:02x?}): not a surgedb client")]
    BadMagic {
        /// The first bytes received.
        found: Vec<u8>,
    },
    /// The client speaks another protocol version.
    #[error("protocol version {theirs} is not supported (this node speaks {ours})")]
    VersionMismatch {
        /// The node's version.
        ours: u32,
        /// The client's.
        theirs: u32,
    },
    /// The client asked for another cluster.
    #[error("this node belongs to cluster {ours:?}, not {theirs:?}")]
    ClusterMismatch {
        /// The node's cluster.
        ours: String,
        /// The cluster the client named.
        theirs: String,
    },
    /// A frame that did not decode (the connection stays open: framing is intact).
    #[error("bad frame: {detail}")]
    BadFrame {
        /// What the decoder said.
        detail: String,
    },
    /// A frame over the size limit (the connection is closed: framing is lost).
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge {
        /// The length claimed.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The node serves its maximum number of connections.
    #[error("too many connections (limit {max})")]
    Busy {
        /// The limit.
        max: u64,
    },
}

/// A frame from the server.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerFrame {
    /// The handshake passed.
    Welcome {
        /// The node answering.
        node: NodeId,
        /// Its cluster.
        cluster_id: String,
        /// Every node of the cluster with its client address (so that a client given one
        /// address finds the others).
        peers: Vec<(NodeId, String)>,
    },
    /// The answer to [`ClientFrame::Request`].
    Response {
        /// The request's id.
        id: u64,
        /// The node's answer.
        resp: KvResponse,
    },
    /// The node could not take the request (it is stopping).
    Unavailable {
        /// The request's id.
        id: u64,
        /// Why.
        detail: String,
    },
    /// The answer to [`ClientFrame::ServerStats`].
    Stats {
        /// The request's id.
        id: u64,
        /// The counters.
        stats: ServerStats,
    },
    /// The answer to [`ClientFrame::Txn`].
    Txn {
        /// The request's id.
        id: u64,
        /// The coordinator's answer, or why the operation failed.
        result: Result<TxnReply, TxnFailure>,
    },
    /// The frame or the connection was refused.
    Error(WireError),
}

/// Encodes a hello frame body: [`MAGIC`], [`PROTOCOL_VERSION`] (u32 LE), postcard `hello`.
pub fn encode_hello(hello: &Hello) -> Vec<u8> {
    encode_hello_with_version(hello, PROTOCOL_VERSION)
}

/// As [`encode_hello`] with another version (to test a node's refusal).
#[doc(hidden)]
pub fn encode_hello_with_version(hello: &Hello, version: u32) -> Vec<u8> {
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&version.to_le_bytes());
    // Encoding a struct of options and strings into a Vec cannot fail; an empty tail would
    // be refused by the server as a bad hello, which is the right outcome anyway.
    body.extend(postcard::to_allocvec(hello).unwrap_or_default());
    body
}

/// Decodes a hello frame body, checking the magic and the version first (so that a client
/// of another version gets a clear refusal, not a decoding error).
///
/// # Errors
/// [`WireError::BadMagic`], [`WireError::VersionMismatch`], or [`WireError::BadFrame`] if
/// the body ends inside the version or the rest does not decode.
pub fn decode_hello(body: &[u8]) -> Result<Hello, WireError> {
    if !body.starts_with(&MAGIC) {
        return Err(WireError::BadMagic {
            found: body.iter().take(MAGIC.len()).copied().collect(),
        });
    }
    let theirs = match body.get(4..8) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        // The right magic: calling it bad would mislead whoever reads the refusal.
        _ => {
            return Err(WireError::BadFrame {
                detail: format!("hello of {} bytes ends inside its version", body.len()),
            });
        }
    };
    if theirs != PROTOCOL_VERSION {
        return Err(WireError::VersionMismatch {
            ours: PROTOCOL_VERSION,
            theirs,
        });
    }
    postcard::from_bytes(&body[8..]).map_err(|e| WireError::BadFrame {
        detail: format!("hello: {e}"),
    })
}

// Beside the version it guards; a file of its own for the length of its table.
#[cfg(test)]
#[path = "golden_encoding.rs"]
mod golden_encoding;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips_and_refuses_other_magic_and_versions() {
        let hello = Hello {
            cluster_id: Some("c1".into()),
            from_node: Some(2),
        };
        assert_eq!(decode_hello(&encode_hello(&hello)).unwrap(), hello);
        assert!(matches!(
            decode_hello(b"GET / HTTP/1.1"),
            Err(WireError::BadMagic { found }) if found == b"GET "
        ));
        assert_eq!(
            decode_hello(&encode_hello_with_version(&hello, PROTOCOL_VERSION + 1)),
            Err(WireError::VersionMismatch {
                ours: PROTOCOL_VERSION,
                theirs: PROTOCOL_VERSION + 1
            })
        );
        let mut cut = encode_hello(&hello);
        cut.truncate(9);
        assert!(matches!(
            decode_hello(&cut),
            Err(WireError::BadFrame { .. })
        ));
        // The right magic, cut anywhere inside the version: a bad frame, not a bad magic.
        for len in (4..8).rev() {
            cut.truncate(len);
            assert_eq!(
                decode_hello(&cut),
                Err(WireError::BadFrame {
                    detail: format!("hello of {len} bytes ends inside its version")
                })
            );
        }
    }

    #[test]
    fn requests_and_responses_round_trip_through_postcard() {
        let frame = ClientFrame::Request {
            id: 7,
            req: KvRequest::GetTimestamp { count: 3 },
        };
        let bytes = postcard::to_allocvec(&frame).unwrap();
        assert_eq!(postcard::from_bytes::<ClientFrame>(&bytes).unwrap(), frame);
        let reply = ServerFrame::Response {
            id: 7,
            resp: KvResponse::Timestamp { ts: 42 },
        };
        let bytes = postcard::to_allocvec(&reply).unwrap();
        assert_eq!(postcard::from_bytes::<ServerFrame>(&bytes).unwrap(), reply);
    }
}
