//! The wire codec: round trips of arbitrary messages, and malformed input (random bytes,
//! truncations, bit flips) refused with an error, never a panic.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use bytes::Bytes;
use proptest::prelude::*;
use surge_raft_lite::*;

fn entry() -> impl Strategy<Value = (u64, u8, Vec<u8>)> {
    (
        0u64..100,
        0u8..3,
        proptest::collection::vec(any::<u8>(), 0..40),
    )
}

fn conf() -> impl Strategy<Value = ConfState> {
    (
        proptest::collection::btree_set(1u64..10, 0..5),
        proptest::collection::btree_set(10u64..20, 0..3),
    )
        .prop_map(|(voters, learners)| ConfState { voters, learners })
}

fn kind() -> impl Strategy<Value = MessageKind> {
    prop_oneof![
        (any::<u64>(), any::<u64>()).prop_map(|(last_index, last_term)| MessageKind::PreVote {
            last_index,
            last_term
        }),
        any::<bool>().prop_map(|reject| MessageKind::PreVoteResp { reject }),
        (any::<u64>(), any::<u64>(), any::<bool>()).prop_map(
            |(last_index, last_term, transfer)| MessageKind::Vote {
                last_index,
                last_term,
                transfer
            }
        ),
        any::<bool>().prop_map(|reject| MessageKind::VoteResp { reject }),
        (
            0u64..1000,
            any::<u64>(),
            proptest::collection::vec(entry(), 0..6),
            any::<u64>()
        )
            .prop_map(|(prev_index, prev_term, es, commit)| MessageKind::Append {
                prev_index,
                prev_term,
                entries: es
                    .into_iter()
                    .enumerate()
                    .map(|(i, (term, k, data))| Entry {
                        index: prev_index + 1 + i as u64,
                        term,
                        kind: [EntryKind::Normal, EntryKind::ConfChange, EntryKind::Noop]
                            [k as usize],
                        data: Bytes::from(data),
                    })
                    .collect(),
                commit,
            }),
        (any::<u64>(), any::<bool>(), any::<u64>()).prop_map(|(index, reject, hint)| {
            MessageKind::AppendResp {
                index,
                reject,
                hint,
            }
        }),
        (any::<u64>(), any::<u64>())
            .prop_map(|(commit, read_seq)| MessageKind::Heartbeat { commit, read_seq }),
        any::<u64>().prop_map(|read_seq| MessageKind::HeartbeatResp { read_seq }),
        (
            any::<u64>(),
            any::<u64>(),
            conf(),
            proptest::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(index, term, conf, data)| MessageKind::Snapshot {
                snapshot: Snapshot {
                    meta: SnapshotMeta { index, term, conf },
                    data: Bytes::from(data)
                },
            }),
        Just(MessageKind::TimeoutNow),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            conf(),
            any::<u32>(),
            any::<bool>(),
            proptest::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(id, index, term, conf, seq, last, data)| {
                MessageKind::SnapshotChunk {
                    id,
                    meta: SnapshotMeta { index, term, conf },
                    seq,
                    last,
                    data: Bytes::from(data),
                }
            }),
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<bool>()).prop_map(
            |(id, index, seq, accepted)| MessageKind::SnapshotChunkAck {
                id,
                index,
                seq,
                accepted,
            }
        ),
    ]
}

fn message() -> impl Strategy<Value = (u64, Message)> {
    (any::<u64>(), 1u64..50, 1u64..50, any::<u64>(), kind()).prop_map(
        |(group, from, to, term, kind)| {
            (
                group,
                Message {
                    from,
                    to,
                    term,
                    kind,
                },
            )
        },
    )
}

proptest! {
    #[test]
    fn message_round_trip((group, msg) in message()) {
        let mut buf = Vec::new();
        encode_message(group, &msg, &mut buf);
        let (g, m) = decode_message(&buf).unwrap();
        prop_assert_eq!(g, group);
        prop_assert_eq!(m, msg);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_message(&bytes);
        let _ = decode_conf_state(&bytes);
    }

    #[test]
    fn truncated_or_flipped_messages_are_refused_or_decoded((group, msg) in message(), cut in 0usize..1000, flip in 0usize..1000) {
        let mut buf = Vec::new();
        encode_message(group, &msg, &mut buf);
        let cut = cut % buf.len();
        prop_assert!(decode_message(&buf[..cut]).is_err(), "a strict prefix never decodes");
        let i = flip % buf.len();
        buf[i] ^= 0x80;
        // May decode to another valid message (never panics); if so, its encoding is
        // exactly these bytes (one encoding per message, as the fuzz target asserts).
        if let Ok((g, m)) = decode_message(&buf) {
            let mut again = Vec::new();
            encode_message(g, &m, &mut again);
            prop_assert_eq!(again, buf);
        }
    }

    #[test]
    fn conf_state_round_trip(cs in conf()) {
        prop_assert_eq!(decode_conf_state(&encode_conf_state(&cs)).unwrap(), cs);
    }
}

#[test]
fn malformed_messages_name_what_and_where() {
    // A huge entry count with no bytes behind it: refused without allocating.
    let mut buf = Vec::new();
    encode_message(
        1,
        &Message {
            from: 1,
            to: 2,
            term: 1,
            kind: MessageKind::Append {
                prev_index: 0,
                prev_term: 0,
                entries: vec![],
                commit: 0,
            },
        },
        &mut buf,
    );
    let n = buf.len();
    buf[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    match decode_message(&buf) {
        Err(Error::Decode {
            what,
            offset,
            reason,
        }) => {
            assert_eq!(what, "message");
            assert!(offset > 0);
            assert!(reason.contains("exceeds"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Node id 0 and unknown tags.
    let mut bad = vec![0u8; 33];
    bad[8] = 1;
    assert!(decode_message(&bad).is_err());
    let mut tag = Vec::new();
    encode_message(
        1,
        &Message {
            from: 1,
            to: 2,
            term: 0,
            kind: MessageKind::TimeoutNow,
        },
        &mut tag,
    );
    let last = tag.len() - 1;
    tag[last] = 99;
    assert!(matches!(
        decode_message(&tag),
        Err(Error::Decode {
            reason: "unknown message tag",
            ..
        })
    ));
}

#[test]
fn conf_state_has_one_encoding() {
    let mut b = 2u32.to_le_bytes().to_vec();
    b.extend_from_slice(&5u64.to_le_bytes());
    b.extend_from_slice(&3u64.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    assert!(matches!(
        decode_conf_state(&b),
        Err(Error::Decode {
            reason: "voter ids are not strictly increasing",
            offset: 20,
            ..
        })
    ));
    let mut dup = 1u32.to_le_bytes().to_vec();
    dup.extend_from_slice(&5u64.to_le_bytes());
    dup.extend_from_slice(&1u32.to_le_bytes());
    dup.extend_from_slice(&5u64.to_le_bytes());
    assert!(
        decode_conf_state(&dup).is_err(),
        "a voter cannot also be a learner"
    );
}
