//! Properties of the client protocol's decoders: whatever bytes arrive, reading and decoding
//! them returns errors, never panics or allocates what a length prefix merely claims; what is
//! written is read back equal and in order; a stream cut anywhere yields an error, never a
//! wrong frame; a hello of another version or magic is refused by name.
//! (`integration/fuzz` runs the same checks, `surgedb::wire::checks`, coverage-guided.)
#![allow(clippy::unwrap_used)] // strategies and helpers outside #[test] fns

use std::fmt::Debug;

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::Index;
use serde::Serialize;
use serde::de::DeserializeOwned;
use surge_txn::{
    HotHints, HotOp, HotOutcome, HotReject, KeyError, LockMode, RegionEpoch, RegionError,
    RegionInfo, ServiceError, TxnError, TxnMode, WaitForEdge,
    actions::{CommitKind, Mutation, PessimisticAction, TxnProps},
    rpc::{Context, KvRequest, KvResponse, LockKey},
};
use surgedb::wire::checks::{check_decoded, check_hello, check_stream};
use surgedb::wire::{
    ClientFrame, CoordinatorState, FrameError, Hello, MAGIC, MAX_FRAME, PROTOCOL_VERSION,
    ServerFrame, ServerStats, TxnFailure, TxnOp, TxnReply, WireError, decode_hello, encode_hello,
    encode_hello_with_version, read_frame, write_frame,
};

// ---- strategies ----

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..=max)
}

/// Mostly short keys, some of a few KiB.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![4 => bytes(16), 1 => bytes(2 << 10)]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![3 => bytes(32), 1 => bytes(4 << 10)]
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,24}"
}

fn ctx() -> impl Strategy<Value = Context> {
    (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()).prop_map(
        |(region_id, version, conf_ver, gc_hold_ts)| Context {
            region_id,
            epoch: RegionEpoch { version, conf_ver },
            gc_hold_ts,
        },
    )
}

fn region_info() -> impl Strategy<Value = RegionInfo> {
    (
        any::<u64>(),
        key(),
        key(),
        any::<(u64, u64)>(),
        vec(any::<u64>(), 0..4),
    )
        .prop_map(|(id, start, end, (version, conf_ver), peers)| RegionInfo {
            id,
            start,
            end,
            epoch: RegionEpoch { version, conf_ver },
            peers,
        })
}

fn mutation() -> impl Strategy<Value = (Mutation, PessimisticAction)> {
    let m = prop_oneof![
        (key(), value()).prop_map(|(key, value)| Mutation::Put { key, value }),
        key().prop_map(|key| Mutation::Delete { key }),
        key().prop_map(|key| Mutation::Lock { key }),
        key().prop_map(|key| Mutation::CheckNotExists { key }),
    ];
    let action = prop_oneof![
        Just(PessimisticAction::SkipPessimisticCheck),
        Just(PessimisticAction::DoPessimisticCheck),
    ];
    (m, action)
}

fn txn_props() -> impl Strategy<Value = TxnProps> {
    (
        any::<[u64; 5]>(),
        key(),
        option::of(any::<u64>()).prop_map(|ts| match ts {
            Some(commit_ts) => CommitKind::OnePc { commit_ts },
            None => CommitKind::TwoPc,
        }),
    )
        .prop_map(
            |([start_ts, lock_ttl, for_update_ts, txn_size, min_commit_ts], primary, kind)| {
                TxnProps {
                    start_ts,
                    primary,
                    lock_ttl,
                    for_update_ts,
                    txn_size,
                    min_commit_ts,
                    commit_kind: kind,
                }
            },
        )
}

/// The txn crate's requests: the region reads and writes with their payloads, and a few of
/// the placement, detector and admin kinds.
fn kv_request() -> impl Strategy<Value = KvRequest> {
    let ts = || vec(any::<u64>(), 0..4);
    prop_oneof![
        (ctx(), key(), any::<u64>(), ts()).prop_map(|(ctx, key, version, bypass_locks)| {
            KvRequest::Get {
                ctx,
                key,
                version,
                bypass_locks,
            }
        }),
        (ctx(), vec(key(), 0..6), any::<u64>(), ts()).prop_map(
            |(ctx, keys, version, bypass_locks)| KvRequest::BatchGet {
                ctx,
                keys,
                version,
                bypass_locks,
            }
        ),
        (
            ctx(),
            key(),
            option::of(key()),
            any::<usize>(),
            any::<u64>(),
            ts()
        )
            .prop_map(|(ctx, start, end, limit, version, bypass_locks)| {
                KvRequest::Scan {
                    ctx,
                    start,
                    end,
                    limit,
                    version,
                    bypass_locks,
                }
            }),
        (
            ctx(),
            vec((key(), any::<bool>()), 0..4),
            key(),
            any::<[u64; 4]>(),
            option::of(any::<u64>()),
            any::<bool>(),
        )
            .prop_map(
                |(
                    ctx,
                    keys,
                    primary,
                    [start_ts, lock_ttl, for_update_ts, min_commit_ts],
                    wait,
                    need_value,
                )| {
                    KvRequest::AcquirePessimisticLock {
                        ctx,
                        keys: keys
                            .into_iter()
                            .map(|(key, should_not_exist)| LockKey {
                                key,
                                should_not_exist,
                            })
                            .collect(),
                        primary,
                        start_ts,
                        lock_ttl,
                        for_update_ts,
                        wait_timeout_ms: wait,
                        need_value,
                        min_commit_ts,
                    }
                }
            ),
        (ctx(), vec(mutation(), 0..5), txn_props()).prop_map(|(ctx, mutations, props)| {
            KvRequest::Prewrite {
                ctx,
                mutations,
                props,
            }
        }),
        (ctx(), vec(key(), 0..4), any::<u64>(), any::<u64>()).prop_map(
            |(ctx, keys, start_ts, commit_ts)| KvRequest::Commit {
                ctx,
                keys,
                start_ts,
                commit_ts,
            }
        ),
        any::<u32>().prop_map(|count| KvRequest::GetTimestamp { count }),
        (any::<u64>(), any::<u64>(), key()).prop_map(|(txn, wait_for_txn, key)| {
            KvRequest::DetectDeadlock {
                txn,
                wait_for_txn,
                key,
            }
        }),
        (any::<u64>(), option::of(key())).prop_map(|(region_id, split_key)| {
            KvRequest::SplitRegion {
                region_id,
                split_key,
            }
        }),
        (any::<u64>(), region_info(), value(), any::<u64>()).prop_map(
            |(target, source, data, target_version)| KvRequest::CommitMerge {
                target,
                source,
                data,
                target_version,
            }
        ),
        (vec(region_info(), 0..3), vec(any::<u64>(), 0..3))
            .prop_map(|(put, remove)| KvRequest::ReportRegions { put, remove }),
        prop_oneof![
            Just(LockMode::Sync),
            Just(LockMode::Pipelined),
            Just(LockMode::InMemory)
        ]
        .prop_map(|mode| KvRequest::SetLockMode { mode }),
        Just(KvRequest::AllocRegionId),
        any::<u64>().prop_map(|count| KvRequest::AllocRegionIds { count }),
        Just(KvRequest::NodeStatus),
    ]
}

/// Hints with each of the three set or not.
fn hints(commit_on_success: bool, rollback_on_fail: bool, target: Option<u64>) -> HotHints {
    let mut h = HotHints::new();
    if commit_on_success {
        h = h.commit_on_success();
    }
    if rollback_on_fail {
        h = h.rollback_on_fail();
    }
    if let Some(n) = target {
        h = h.target_affect_row(n);
    }
    h
}

fn txn_op() -> impl Strategy<Value = TxnOp> {
    let txn = any::<u64>;
    prop_oneof![
        prop_oneof![Just(TxnMode::Optimistic), Just(TxnMode::Pessimistic)]
            .prop_map(|mode| TxnOp::Begin { mode }),
        (txn(), key()).prop_map(|(txn, key)| TxnOp::Get { txn, key }),
        (txn(), vec(key(), 0..6)).prop_map(|(txn, keys)| TxnOp::BatchGet { txn, keys }),
        (txn(), key(), option::of(key()), any::<u64>()).prop_map(|(txn, start, end, limit)| {
            TxnOp::Scan {
                txn,
                start,
                end,
                limit,
            }
        }),
        (txn(), key()).prop_map(|(txn, key)| TxnOp::GetForUpdate { txn, key }),
        (txn(), key(), value()).prop_map(|(txn, key, value)| TxnOp::Put { txn, key, value }),
        (txn(), key(), value()).prop_map(|(txn, key, value)| TxnOp::Insert { txn, key, value }),
        (txn(), key()).prop_map(|(txn, key)| TxnOp::Delete { txn, key }),
        txn().prop_map(|txn| TxnOp::Commit { txn }),
        txn().prop_map(|txn| TxnOp::Rollback { txn }),
        (
            key(),
            any::<(i64, Option<i64>, Option<i64>)>(),
            any::<(bool, bool, Option<u64>)>()
        )
            .prop_map(
                |(key, (delta, min, max), (cos, rof, target))| TxnOp::HotUpdate {
                    key,
                    op: HotOp { delta, min, max },
                    hints: hints(cos, rof, target),
                }
            ),
        Just(TxnOp::State),
    ]
}

fn client_frame() -> impl Strategy<Value = ClientFrame> {
    prop_oneof![
        (any::<u64>(), kv_request()).prop_map(|(id, req)| ClientFrame::Request { id, req }),
        any::<u64>().prop_map(|id| ClientFrame::ServerStats { id }),
        (any::<u64>(), txn_op()).prop_map(|(id, op)| ClientFrame::Txn { id, op }),
    ]
}

fn txn_error() -> impl Strategy<Value = TxnError> {
    prop_oneof![
        (any::<[u64; 3]>(), key()).prop_map(|([a, b, c], key)| TxnError::WriteConflict {
            start_ts: a,
            conflict_start_ts: b,
            conflict_commit_ts: c,
            key,
        }),
        vec((any::<u64>(), any::<u64>(), key()), 0..3).prop_map(|edges| TxnError::Deadlock {
            chain: edges
                .into_iter()
                .map(|(txn, wait_for_txn, key)| WaitForEdge {
                    txn,
                    wait_for_txn,
                    key,
                })
                .collect(),
        }),
        (any::<u64>(), key())
            .prop_map(|(start_ts, key)| TxnError::PessimisticLockNotFound { start_ts, key }),
        (any::<u64>(), text())
            .prop_map(|(start_ts, detail)| TxnError::Undetermined { start_ts, detail }),
        (any::<u64>(), option::of(any::<u64>())).prop_map(|(region_id, leader)| {
            TxnError::Region(RegionError::NotLeader { region_id, leader })
        }),
        (any::<u64>(), any::<u64>()).prop_map(|(node, timeout_ms)| {
            TxnError::Unavailable(ServiceError::Timeout { node, timeout_ms })
        }),
        (key(), any::<u64>())
            .prop_map(|(key, lock_ts)| TxnError::Key(KeyError::LockWaitTimeout { key, lock_ts })),
        (key(), any::<(i64, i64)>(), any::<bool>()).prop_map(|(key, (value, min), rollback)| {
            TxnError::HotUpdateRejected {
                key,
                reason: HotReject::BelowMin { value, min },
                rollback,
            }
        }),
        Just(TxnError::TxnFinished),
    ]
}

fn txn_result() -> impl Strategy<Value = Result<TxnReply, TxnFailure>> {
    prop_oneof![
        any::<(u64, u64)>().prop_map(|(txn, start_ts)| Ok(TxnReply::Begun { txn, start_ts })),
        option::of(value()).prop_map(|v| Ok(TxnReply::Value(v))),
        vec((key(), value()), 0..4).prop_map(|pairs| Ok(TxnReply::Pairs(pairs))),
        Just(Ok(TxnReply::Done)),
        any::<u64>().prop_map(|commit_ts| Ok(TxnReply::Committed { commit_ts })),
        any::<(Option<i64>, u64, Option<u64>, usize)>().prop_map(
            |(value, affected_rows, commit_ts, group_writes)| Ok(TxnReply::Hot(HotOutcome {
                value,
                affected_rows,
                commit_ts,
                group_writes,
            }))
        ),
        (any::<u64>(), option::of(text())).prop_map(|(attempts, last_error)| Ok(TxnReply::State(
            CoordinatorState::Recovering {
                attempts,
                last_error,
            }
        ))),
        txn_error().prop_map(|e| Err(TxnFailure::Txn(e))),
        (any::<u64>(), text())
            .prop_map(|(node, detail)| Err(TxnFailure::NotReady { node, detail })),
        any::<u64>().prop_map(|txn| Err(TxnFailure::NoSuchTxn { txn })),
    ]
}

fn server_frame() -> impl Strategy<Value = ServerFrame> {
    prop_oneof![
        (any::<u64>(), text(), vec((any::<u64>(), text()), 0..4)).prop_map(
            |(node, cluster_id, peers)| ServerFrame::Welcome {
                node,
                cluster_id,
                peers,
            }
        ),
        (
            any::<u64>(),
            prop_oneof![
                option::of(value()).prop_map(|value| KvResponse::Get { value }),
                vec((key(), value()), 0..4).prop_map(|pairs| KvResponse::Pairs { pairs }),
                any::<u64>().prop_map(|ts| KvResponse::Timestamp { ts }),
                Just(KvResponse::Done),
                (any::<u64>(), option::of(any::<u64>())).prop_map(|(region_id, leader)| {
                    KvResponse::RegionError(RegionError::NotLeader { region_id, leader })
                }),
            ]
        )
            .prop_map(|(id, resp)| ServerFrame::Response { id, resp }),
        (any::<u64>(), text()).prop_map(|(id, detail)| ServerFrame::Unavailable { id, detail }),
        (any::<u64>(), any::<[u64; 8]>()).prop_map(|(id, c)| ServerFrame::Stats {
            id,
            stats: ServerStats {
                connections: c[0],
                open_connections: c[1],
                refused_busy: c[2],
                bad_handshakes: c[3],
                bad_frames: c[4],
                requests: c[5],
                txn_ops: c[6],
                txns_rolled_back_on_close: c[7],
            },
        }),
        (any::<u64>(), txn_result()).prop_map(|(id, result)| ServerFrame::Txn { id, result }),
        prop_oneof![
            bytes(4).prop_map(|found| WireError::BadMagic { found }),
            any::<(u32, u32)>()
                .prop_map(|(ours, theirs)| WireError::VersionMismatch { ours, theirs }),
            text().prop_map(|detail| WireError::BadFrame { detail }),
            any::<u64>().prop_map(|max| WireError::Busy { max }),
        ]
        .prop_map(ServerFrame::Error),
    ]
}

fn hello() -> impl Strategy<Value = Hello> {
    (option::of(text()), option::of(any::<u64>())).prop_map(|(cluster_id, from_node)| Hello {
        cluster_id,
        from_node,
    })
}

// ---- helpers ----

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).unwrap()
}

/// `frames` written back to back into one stream, with where each ends.
fn stream_of<T: Serialize>(frames: &[T]) -> (Vec<u8>, Vec<usize>) {
    let mut wire = Vec::new();
    let mut ends = Vec::new();
    for frame in frames {
        write_frame(&mut wire, &encode(frame)).unwrap();
        ends.push(wire.len());
    }
    (wire, ends)
}

/// `frames` written back to back are read back equal and in order, then the stream is closed.
fn read_back_in_order<T>(frames: &[T]) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let (wire, _) = stream_of(frames);
    let mut stream = wire.as_slice();
    let mut body = Vec::new();
    for frame in frames {
        read_frame(&mut stream, &mut body).unwrap();
        prop_assert_eq!(&postcard::from_bytes::<T>(&body).unwrap(), frame);
    }
    prop_assert!(matches!(
        read_frame(&mut stream, &mut body),
        Err(FrameError::Closed)
    ));
    Ok(())
}

/// Reads `data` as a connection does, decoding every body as a hello and as both frame kinds
/// (the checks `integration/fuzz` runs too), until the stream ends or framing is lost;
/// returns how many frames were read.
fn read_and_decode_all(data: &[u8]) -> Result<usize, TestCaseError> {
    let read = check_stream(data, |body| {
        check_decoded::<ClientFrame>(body)?;
        check_decoded::<ServerFrame>(body)?;
        check_hello(body)
    })
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    // Memory follows the bytes that arrived (std's read_to_end grows by doubling), never
    // the lengths claimed.
    prop_assert!(
        read.buffer_capacity <= 2 * data.len() + 64,
        "{}",
        read.buffer_capacity
    );
    Ok(read.frames)
}

// ---- properties ----

// Default case count (256; `PROPTEST_CASES` raises it): the whole file runs in about a
// second in debug.
proptest! {
    /// Raw bytes: most length prefixes are huge, so this mostly checks the refusal paths.
    #[test]
    fn arbitrary_bytes_never_panic(data in bytes(512)) {
        read_and_decode_all(&data)?;
    }

    /// Well-framed garbage, and valid frames with a byte changed: the decoders proper.
    #[test]
    fn garbage_and_damaged_bodies_never_panic(
        garbage in vec(bytes(48), 0..6),
        client in client_frame(),
        server in server_frame(),
        at in any::<(Index, Index)>(),
        byte in any::<u8>(),
    ) {
        let mut bodies = garbage;
        for (mut body, at) in [(encode(&client), at.0), (encode(&server), at.1)] {
            let i = at.index(body.len());
            body[i] = byte;
            bodies.push(body);
        }
        let mut wire = Vec::new();
        for body in &bodies {
            write_frame(&mut wire, body).unwrap();
        }
        prop_assert_eq!(read_and_decode_all(&wire)?, bodies.len());
    }

    #[test]
    fn a_length_over_the_limit_is_refused_before_any_allocation(
        len in (MAX_FRAME as u32 + 1)..=u32::MAX,
        tail in bytes(64),
    ) {
        let mut input = len.to_le_bytes().to_vec();
        input.extend_from_slice(&tail);
        let mut body = Vec::new();
        let got = read_frame(&mut input.as_slice(), &mut body);
        prop_assert!(
            matches!(got, Err(FrameError::TooLarge { len: l, max }) if l == len as usize && max == MAX_FRAME),
            "{:?}", got
        );
        prop_assert_eq!(body.capacity(), 0);
    }

    /// A claim of up to `MAX_FRAME` bytes costs only what arrives.
    #[test]
    fn a_frame_cut_short_costs_what_arrived(
        len in 1..=MAX_FRAME as u32,
        sent in bytes(4 << 10),
    ) {
        prop_assume!((len as usize) > sent.len());
        let mut input = len.to_le_bytes().to_vec();
        input.extend_from_slice(&sent);
        let mut body = Vec::new();
        let got = read_frame(&mut input.as_slice(), &mut body);
        prop_assert!(matches!(got, Err(FrameError::Closed)), "{:?}", got);
        // std's read_to_end grows by doubling from a small probe.
        prop_assert!(body.capacity() <= 2 * sent.len() + 64, "{} for {}", body.capacity(), sent.len());
    }

    #[test]
    fn client_frames_are_read_back_equal_and_in_order(frames in vec(client_frame(), 1..6)) {
        read_back_in_order(&frames)?;
    }

    #[test]
    fn server_frames_are_read_back_equal_and_in_order(frames in vec(server_frame(), 1..6)) {
        read_back_in_order(&frames)?;
    }

    /// The frames wholly before the cut are read as sent; the one it falls in is `Closed`.
    #[test]
    fn a_stream_cut_anywhere_gives_an_error_not_a_wrong_frame(
        frames in vec(client_frame(), 1..4),
        cut in any::<Index>(),
    ) {
        let (wire, ends) = stream_of(&frames);
        let cut = cut.index(wire.len());
        let mut stream = &wire[..cut];
        let mut body = Vec::new();
        let whole = ends.iter().filter(|&&end| end <= cut).count();
        for frame in &frames[..whole] {
            read_frame(&mut stream, &mut body).unwrap();
            prop_assert_eq!(&postcard::from_bytes::<ClientFrame>(&body).unwrap(), frame);
        }
        let got = read_frame(&mut stream, &mut body);
        prop_assert!(matches!(got, Err(FrameError::Closed)), "{:?}", got);
    }

    /// A body cut short (a frame whose length prefix lies) never decodes: postcard reads a
    /// value's bytes in order, so the cut body runs out before the value is complete.
    #[test]
    fn a_body_cut_short_does_not_decode(frame in client_frame(), reply in server_frame(), cut in any::<Index>()) {
        let body = encode(&frame);
        prop_assert!(postcard::from_bytes::<ClientFrame>(&body[..cut.index(body.len())]).is_err());
        let body = encode(&reply);
        prop_assert!(postcard::from_bytes::<ServerFrame>(&body[..cut.index(body.len())]).is_err());
    }

    #[test]
    fn hellos_round_trip(hello in hello()) {
        prop_assert_eq!(decode_hello(&encode_hello(&hello)), Ok(hello));
    }

    #[test]
    fn a_hello_of_another_version_is_refused_naming_both(
        hello in hello(),
        theirs in any::<u32>().prop_filter("another version", |v| *v != PROTOCOL_VERSION),
    ) {
        let got = decode_hello(&encode_hello_with_version(&hello, theirs));
        prop_assert_eq!(&got, &Err(WireError::VersionMismatch { ours: PROTOCOL_VERSION, theirs }));
        let message = got.unwrap_err().to_string();
        prop_assert!(message.contains(&format!("protocol version {theirs} is not supported")), "{}", message);
        prop_assert!(message.contains(&format!("speaks {PROTOCOL_VERSION}")), "{}", message);
    }

    #[test]
    fn a_hello_with_bad_magic_is_refused_naming_it(
        hello in hello(),
        magic in any::<[u8; 4]>().prop_filter("another magic", |m| *m != MAGIC),
        cut in any::<Index>(),
    ) {
        let mut body = encode_hello(&hello);
        body[..4].copy_from_slice(&magic);
        // Whole, or cut anywhere (even inside the magic).
        for body in [&body[..], &body[..cut.index(body.len())]] {
            let found = body[..body.len().min(4)].to_vec();
            let got = decode_hello(body);
            prop_assert_eq!(&got, &Err(WireError::BadMagic { found: found.clone() }));
            let message = got.unwrap_err().to_string();
            prop_assert!(message.contains(&format!("{found:02x?}")), "{}", message);
            prop_assert!(message.contains(&format!("want {MAGIC:02x?}")), "{}", message);
        }
    }

}
