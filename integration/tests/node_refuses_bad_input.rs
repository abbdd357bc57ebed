//! A node answers garbage, a wrong protocol version, another cluster's hello and oversized
//! frames with an error frame, counts them, and keeps serving.

#![allow(clippy::unwrap_used)] // Test helpers in this file: a failure is the test failing.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::SoloNode;
use surge_txn::rpc::{KvRequest, KvResponse, KvService};
use surgedb::RemoteService;
use surgedb::wire::{
    ClientFrame, Hello, MAX_FRAME, PROTOCOL_VERSION, ServerFrame, WireError, encode_hello,
    encode_hello_with_version, read_frame, write_frame,
};

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn answer(s: &mut TcpStream) -> ServerFrame {
    let mut buf = Vec::new();
    read_frame(s, &mut buf).unwrap();
    postcard::from_bytes(&buf).unwrap()
}

fn any_hello() -> Hello {
    Hello {
        cluster_id: None,
        from_node: None,
    }
}

#[test]
fn bad_frames_get_an_error_are_counted_and_the_node_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let node = SoloNode::spawn(&tmp.path().join("n1"), &["--cluster-id", "solo"]);
    let client = node.wait_serving();

    // Not a surgedb client at all: an HTTP request. Its first 4 bytes read as a length of
    // 542 MB, over the limit.
    let mut s = connect(&node.addr);
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(matches!(
        answer(&mut s),
        ServerFrame::Error(WireError::FrameTooLarge { max, .. }) if max == MAX_FRAME as u64
    ));

    // A framed hello with the wrong magic, another version, another cluster.
    let mut s = connect(&node.addr);
    write_frame(&mut s, b"HELOxxxxxxxx").unwrap();
    assert!(matches!(
        answer(&mut s),
        ServerFrame::Error(WireError::BadMagic { found }) if found == b"HELO"
    ));
    let mut s = connect(&node.addr);
    write_frame(
        &mut s,
        &encode_hello_with_version(&any_hello(), PROTOCOL_VERSION + 7),
    )
    .unwrap();
    assert_eq!(
        answer(&mut s),
        ServerFrame::Error(WireError::VersionMismatch {
            ours: PROTOCOL_VERSION,
            theirs: PROTOCOL_VERSION + 7
        })
    );
    let mut s = connect(&node.addr);
    let other = Hello {
        cluster_id: Some("someone-else".into()),
        from_node: None,
    };
    write_frame(&mut s, &encode_hello(&other)).unwrap();
    assert_eq!(
        answer(&mut s),
        ServerFrame::Error(WireError::ClusterMismatch {
            ours: "solo".into(),
            theirs: "someone-else".into()
        })
    );

    // After a good handshake: a body that does not decode is answered and the connection
    // goes on serving; an oversized length closes only that connection.
    let mut s = connect(&node.addr);
    write_frame(&mut s, &encode_hello(&any_hello())).unwrap();
    assert!(matches!(
        answer(&mut s),
        ServerFrame::Welcome { node: 1, .. }
    ));
    write_frame(&mut s, &[0xff; 40]).unwrap();
    assert!(matches!(
        answer(&mut s),
        ServerFrame::Error(WireError::BadFrame { .. })
    ));
    let req = ClientFrame::Request {
        id: 9,
        req: KvRequest::GetTimestamp { count: 1 },
    };
    write_frame(&mut s, &postcard::to_allocvec(&req).unwrap()).unwrap();
    assert!(matches!(
        answer(&mut s),
        ServerFrame::Response {
            id: 9,
            resp: KvResponse::Timestamp { .. }
        }
    ));
    s.write_all(&(u32::MAX).to_le_bytes()).unwrap();
    assert!(matches!(
        answer(&mut s),
        ServerFrame::Error(WireError::FrameTooLarge { .. })
    ));
    let mut rest = Vec::new();
    assert_eq!(
        s.read_to_end(&mut rest).unwrap_or(0),
        0,
        "connection closed"
    );

    // A client of another cluster is refused before any request runs.
    let remote = RemoteService::new(
        1,
        node.addr.parse().unwrap(),
        surgedb::RemoteConfig::default().with_cluster_id(Some("someone-else".into())),
    );
    let refused = remote.call(KvRequest::NodeStatus).unwrap_err();
    assert!(refused.to_string().contains("someone-else"), "{refused}");

    // Counted, and the node still serves transactions.
    let stats = client.router().remote(1).unwrap().server_stats().unwrap();
    assert_eq!(stats.bad_frames, 2, "{stats:?}");
    assert!(stats.bad_handshakes >= 4, "{stats:?}");
    let mut t = client.txn().begin(surge_txn::TxnMode::Optimistic).unwrap();
    t.put(b"still", b"serving").unwrap();
    t.commit().unwrap();
    assert_eq!(
        client.txn().get(b"still").unwrap(),
        Some(b"serving".to_vec())
    );
    let out = node.stop();
    assert!(out.status.success(), "{out:?}");
}
