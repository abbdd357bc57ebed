//! Over TCP, a request whose answer fails after it was sent may have run: a commit answered
//! with bytes that do not decode is not taken as "did not run", neither by the txn client
//! above a `TcpRouter` nor by `Client`'s own `call`. The nodes here are scripted fakes that
//! speak the wire protocol: each "runs" a request (records it) and then answers as told.

use std::io::{BufReader, BufWriter};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use surgedb::txn::rpc::{KvRequest, KvResponse, KvService};
use surgedb::txn::{RegionEpoch, RegionError, RegionInfo, TxnError, TxnMode};
use surgedb::wire::{ClientFrame, ServerFrame, read_frame, write_frame};
use surgedb::{Client, ClientOptions, RemoteConfig};

/// How a fake node answers a request it ran.
enum Answer {
    Reply(KvResponse),
    /// A frame whose body does not decode as a `ServerFrame`.
    Undecodable,
    /// The reply, one byte every 200 ms.
    Trickle(KvResponse),
}

type Script = dyn Fn(u64, &KvRequest) -> Answer + Send + Sync;

/// Fake nodes `1..=n` on loopback; every request they receive is logged by name.
struct FakeCluster {
    addrs: Vec<String>,
    log: Arc<Mutex<Vec<(u64, &'static str)>>>,
}

impl FakeCluster {
    fn start(n: u64, script: impl Fn(u64, &KvRequest) -> Answer + Send + Sync + 'static) -> Self {
        let listeners: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
            .collect();
        let addrs: Vec<String> = listeners
            .iter()
            .map(|l| l.local_addr().expect("addr").to_string())
            .collect();
        let peers: Vec<(u64, String)> = (1..=n).zip(addrs.iter().cloned()).collect();
        let log = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        for (node, listener) in (1..=n).zip(listeners) {
            let (peers, log, script) = (peers.clone(), Arc::clone(&log), Arc::clone(&script));
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let (peers, log, script) =
                        (peers.clone(), Arc::clone(&log), Arc::clone(&script));
                    std::thread::spawn(move || serve(node, stream, &peers, &log, &*script));
                }
            });
        }
        FakeCluster { addrs, log }
    }

    fn count(&self, name: &str) -> usize {
        self.log
            .lock()
            .expect("log")
            .iter()
            .filter(|(_, n)| *n == name)
            .count()
    }
}

fn send(w: &mut impl std::io::Write, frame: &ServerFrame) -> bool {
    let body = postcard::to_allocvec(frame).expect("encode");
    write_frame(w, &body).is_ok()
}

fn serve(
    node: u64,
    stream: std::net::TcpStream,
    peers: &[(u64, String)],
    log: &Mutex<Vec<(u64, &'static str)>>,
    script: &Script,
) {
    let mut r = BufReader::new(stream.try_clone().expect("clone"));
    let mut w = BufWriter::new(stream);
    let mut buf = Vec::new();
    if read_frame(&mut r, &mut buf).is_err() {
        return;
    }
    let welcome = ServerFrame::Welcome {
        node,
        cluster_id: "fake".into(),
        peers: peers.to_vec(),
    };
    if !send(&mut w, &welcome) {
        return;
    }
    while read_frame(&mut r, &mut buf).is_ok() {
        let Ok(ClientFrame::Request { id, req }) = postcard::from_bytes::<ClientFrame>(&buf) else {
            return;
        };
        log.lock().expect("log").push((node, req.name()));
        let ok = match script(node, &req) {
            Answer::Reply(resp) => send(&mut w, &ServerFrame::Response { id, resp }),
            Answer::Undecodable => write_frame(&mut w, &[0xff, 0xff, 0xff]).is_ok(),
            Answer::Trickle(resp) => {
                let mut framed = Vec::new();
                let body =
                    postcard::to_allocvec(&ServerFrame::Response { id, resp }).expect("encode");
                write_frame(&mut framed, &body).expect("frame");
                framed.iter().all(|byte| {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    std::io::Write::write_all(&mut w, &[*byte]).is_ok()
                        && std::io::Write::flush(&mut w).is_ok()
                })
            }
        };
        if !ok {
            return;
        }
    }
}

/// A commit of key `a` in region 2 (start_ts 10, commit_ts 11).
fn commit_of_a() -> KvRequest {
    KvRequest::Commit {
        ctx: surgedb::txn::rpc::Context {
            region_id: 2,
            epoch: RegionEpoch {
                version: 1,
                conf_ver: 1,
            },
            gc_hold_ts: 0,
        },
        keys: vec![b"a".to_vec()],
        start_ts: 10,
        commit_ts: 11,
    }
}

/// Regions `[, "m")` (id 2) and `["m", )` (id 3), led by node 1.
fn regions() -> Vec<RegionInfo> {
    let epoch = RegionEpoch {
        version: 1,
        conf_ver: 1,
    };
    vec![
        RegionInfo {
            id: 2,
            start: vec![],
            end: b"m".to_vec(),
            epoch,
            peers: vec![1],
        },
        RegionInfo {
            id: 3,
            start: b"m".to_vec(),
            end: vec![],
            epoch,
            peers: vec![1],
        },
    ]
}

#[test]
fn a_primary_commit_answered_undecodably_over_tcp_is_undetermined_and_not_rolled_back() {
    let ts = AtomicU64::new(1 << 30);
    let cluster = FakeCluster::start(1, move |_, req| {
        Answer::Reply(match req {
            KvRequest::GetTimestamp { .. } => KvResponse::Timestamp {
                ts: ts.fetch_add(1, Ordering::SeqCst) + 1,
            },
            KvRequest::GetRegion { key } => KvResponse::Regions {
                regions: regions()
                    .into_iter()
                    .filter(|r| r.contains(key))
                    .map(|r| (r, Some(1)))
                    .collect(),
            },
            KvRequest::Prewrite { .. } => KvResponse::Prewrite {
                one_pc_commit_ts: 0,
            },
            // The primary's commit is applied; its answer does not decode.
            KvRequest::Commit { keys, .. } if keys == &[b"a".to_vec()] => {
                return Answer::Undecodable;
            }
            _ => KvResponse::Done,
        })
    });
    let client = Client::connect(&cluster.addrs, ClientOptions::default()).expect("connect");
    let mut t = client.txn().begin(TxnMode::Optimistic).expect("begin");
    t.put(b"a", b"1").expect("put");
    t.put(b"z", b"1").expect("put");
    match t.commit() {
        Err(TxnError::Undetermined { .. }) => {}
        other => panic!("the primary commit may have run: undetermined, got {other:?}"),
    }
    assert_eq!(
        cluster.count("commit"),
        1,
        "the primary's commit was sent once"
    );
    assert_eq!(
        cluster.count("batch_rollback"),
        0,
        "a transaction whose commit may have applied is not rolled back"
    );
}

#[test]
fn client_call_does_not_try_another_node_after_a_sent_request_failed() {
    // Node 1 runs the request and answers garbage; node 2 would say it is not the leader,
    // which reads as "not run there" and must not stand for the request's outcome.
    let cluster = FakeCluster::start(2, |node, req| match (node, req) {
        (1, KvRequest::Commit { .. }) => Answer::Undecodable,
        (_, KvRequest::Commit { ctx, .. }) => {
            Answer::Reply(KvResponse::RegionError(RegionError::NotLeader {
                region_id: ctx.region_id,
                leader: None,
            }))
        }
        _ => Answer::Reply(KvResponse::Done),
    });
    let client = Client::connect(&cluster.addrs[..1], ClientOptions::default()).expect("connect");
    let commit = commit_of_a();
    match client.call(commit) {
        Err(surgedb::txn::ServiceError::Protocol { node: 1, .. }) => {}
        other => panic!("node 1's failure after it ran the commit must be returned, got {other:?}"),
    }
    assert_eq!(cluster.count("commit"), 1, "not sent to another node");
}

#[test]
fn an_answer_trickled_byte_by_byte_ends_at_the_request_timeout() {
    // Each byte arrives well within the timeout; the answer as a whole would take seconds.
    let cluster = FakeCluster::start(1, |_, req| match req {
        KvRequest::Commit { .. } => Answer::Trickle(KvResponse::Done),
        _ => Answer::Reply(KvResponse::Done),
    });
    let remote = RemoteConfig::default().with_request_timeout(std::time::Duration::from_secs(1));
    let client = Client::connect(
        &cluster.addrs[..1],
        ClientOptions::default().with_remote(remote),
    )
    .expect("connect");
    let commit = commit_of_a();
    let start = std::time::Instant::now();
    let outcome = client.call(commit);
    let took = start.elapsed();
    assert!(
        matches!(outcome, Err(surgedb::txn::ServiceError::Timeout { .. })),
        "a trickled answer past its deadline is a timeout, got {outcome:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(3),
        "the 1 s deadline held for the whole answer, took {took:?}"
    );
}
