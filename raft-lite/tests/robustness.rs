//! Arbitrary messages (any type, any values, from any node) stepped into a node in every
//! role never panic and never break the log's ordering invariants.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use bytes::Bytes;
use proptest::prelude::*;
use surge_raft_lite::*;

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..8,
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1u64 << 62),
        any::<u64>()
    ]
}

fn kind() -> impl Strategy<Value = MessageKind> {
    prop_oneof![
        (value(), value()).prop_map(|(last_index, last_term)| MessageKind::PreVote {
            last_index,
            last_term
        }),
        any::<bool>().prop_map(|reject| MessageKind::PreVoteResp { reject }),
        (value(), value(), any::<bool>()).prop_map(|(last_index, last_term, transfer)| {
            MessageKind::Vote {
                last_index,
                last_term,
                transfer,
            }
        }),
        any::<bool>().prop_map(|reject| MessageKind::VoteResp { reject }),
        (
            value(),
            value(),
            proptest::collection::vec((value(), value()), 0..4),
            value()
        )
            .prop_map(|(prev_index, prev_term, es, commit)| MessageKind::Append {
                prev_index,
                prev_term,
                entries: es
                    .into_iter()
                    .map(|(index, term)| Entry {
                        index,
                        term,
                        kind: EntryKind::Normal,
                        data: Bytes::new()
                    })
                    .collect(),
                commit,
            }),
        (value(), any::<bool>(), value()).prop_map(|(index, reject, hint)| {
            MessageKind::AppendResp {
                index,
                reject,
                hint,
            }
        }),
        (value(), value())
            .prop_map(|(commit, read_seq)| MessageKind::Heartbeat { commit, read_seq }),
        value().prop_map(|read_seq| MessageKind::HeartbeatResp { read_seq }),
        (value(), value()).prop_map(|(index, term)| MessageKind::Snapshot {
            snapshot: Snapshot {
                meta: SnapshotMeta {
                    index,
                    term,
                    conf: ConfState::with_voters([1, 2, 3])
                },
                data: Bytes::new(),
            },
        }),
        Just(MessageKind::TimeoutNow),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    (0u64..5, value(), kind()).prop_map(|(from, term, kind)| Message {
        from,
        to: 1,
        term,
        kind,
    })
}

fn cycle(n: &mut RawNode) {
    while n.has_ready() {
        let _ = n.ready().unwrap();
        n.advance();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn arbitrary_messages_never_panic(role in 0u8..3, msgs in proptest::collection::vec(message(), 1..40)) {
        let mut c = Config::new(1);
        c.pre_vote = role == 2;
        let mut n = RawNode::new(c, RaftState::bootstrap([1, 2, 3])).unwrap();
        if role >= 1 {
            n.campaign_now().unwrap();
            cycle(&mut n);
            let t = n.term();
            if role == 1 {
                n.step(Message { from: 2, to: 1, term: t, kind: MessageKind::VoteResp { reject: false } }).unwrap();
                cycle(&mut n);
                let _ = n.propose(Bytes::from_static(b"x"));
            }
        }
        for m in msgs {
            n.step(m).unwrap();
            cycle(&mut n);
            let _ = n.tick();
            cycle(&mut n);
            prop_assert!(n.applied() <= n.committed());
            prop_assert!(n.committed() <= n.last_index());
            prop_assert!(n.term() < MAX_TERM_OR_INDEX);
        }
    }
}
