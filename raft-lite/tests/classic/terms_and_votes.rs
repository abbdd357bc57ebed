//! Term handling and the vote rules (Raft §5.1, §5.2, §5.4.1).

use crate::common::*;
use surge_raft_lite::*;

#[test]
fn test_update_term_from_message() {
    for role in ["follower", "candidate", "leader"] {
        let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
        match role {
            "candidate" => {
                n.campaign_now().unwrap();
                let _ = cycle(&mut n);
            }
            "leader" => make_leader(&mut n, &[1, 2, 3]),
            _ => {}
        }
        n.step(msg(2, 1, 9, append((0, 0), &[], 0))).unwrap();
        assert_eq!(n.term(), 9, "{role}");
        assert_eq!(n.role(), Role::Follower, "{role}");
        assert_eq!(n.leader(), Some(2), "{role}");
    }
}

#[test]
fn test_reject_stale_term_message() {
    let mut n = node_with_log(1, &[1, 2, 3], &[(1, 1)], 5);
    n.step(msg(2, 1, 3, append((1, 1), &[(2, 3)], 0))).unwrap();
    let rd = cycle(&mut n);
    assert_eq!(n.last_index(), 1, "stale append ignored");
    // The stale leader is told our term so it steps down.
    let m = &rd.persisted_messages[0];
    assert_eq!((m.to, m.term), (2, 5));
    n.step(msg(
        2,
        1,
        3,
        MessageKind::Vote {
            last_index: 9,
            last_term: 9,
            transfer: false,
        },
    ))
    .unwrap();
    assert_eq!(n.hard_state().vote, 0);
}

#[test]
fn test_old_leader_steps_down_on_newer_term_answer() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    make_leader(&mut n, &[1, 2, 3]);
    let t = n.term();
    n.step(msg(
        2,
        1,
        t + 3,
        MessageKind::AppendResp {
            index: 0,
            reject: false,
            hint: 0,
        },
    ))
    .unwrap();
    assert_eq!(n.role(), Role::Follower);
    assert_eq!(n.term(), t + 3);
}

#[test]
fn test_vote_request_up_to_date_is_lexicographic() {
    // Our log ends at (index 3, term 2).
    let cases = [
        ((3, 2), true),
        ((4, 2), true),
        ((2, 2), false),
        ((1, 3), true), // higher last term wins even with a shorter log
        ((9, 1), false),
    ];
    for ((li, lt), grant) in cases {
        let mut n = node_with_log(1, &[1, 2, 3], &[(1, 1), (2, 2), (3, 2)], 2);
        n.step(msg(
            2,
            1,
            3,
            MessageKind::Vote {
                last_index: li,
                last_term: lt,
                transfer: false,
            },
        ))
        .unwrap();
        let rd = cycle(&mut n);
        let rej = matches!(
            rd.persisted_messages[0].kind,
            MessageKind::VoteResp { reject: true }
        );
        assert_eq!(!rej, grant, "candidate log ({li},{lt})");
    }
}

#[test]
fn test_voter_votes_once_per_term() {
    let mut n = node_with_log(1, &[1, 2, 3], &[], 1);
    let v = |from| {
        msg(
            from,
            1,
            2,
            MessageKind::Vote {
                last_index: 0,
                last_term: 0,
                transfer: false,
            },
        )
    };
    n.step(v(2)).unwrap();
    n.step(v(3)).unwrap();
    n.step(v(2)).unwrap();
    let rd = cycle(&mut n);
    let grants: Vec<(u64, bool)> = rd
        .persisted_messages
        .iter()
        .map(|m| {
            (
                m.to,
                matches!(m.kind, MessageKind::VoteResp { reject: false }),
            )
        })
        .collect();
    assert_eq!(grants, vec![(2, true), (3, false), (2, true)]);
}

/// Regression: an append whose entries carry a term above the message's own term (no
/// real leader sends that: its log holds no entry of a term it has not reached) was
/// accepted, giving the follower a log that wins every later election. It is refused and
/// counted like other insane input.
#[test]
fn test_entry_term_above_message_term_is_refused() {
    let mut n = node_with_log(2, &[1, 2, 3], &[(1, 1)], 2);
    let before = n.stats().messages_ignored;
    n.step(msg(1, 2, 2, append((1, 1), &[(2, 9)], 1))).unwrap();
    assert_eq!(n.last_index(), 1, "entry of a future term appended");
    assert_eq!(n.stats().messages_ignored, before + 1);
    // Decreasing terms inside one append are refused too.
    n.step(msg(1, 2, 3, append((1, 1), &[(2, 3), (3, 2)], 1)))
        .unwrap();
    assert_eq!(n.last_index(), 1);
    // A vote request claiming a last term above its own term is refused.
    n.step(msg(
        3,
        2,
        4,
        MessageKind::Vote {
            last_index: 5,
            last_term: 7,
            transfer: false,
        },
    ))
    .unwrap();
    assert_eq!(n.stats().messages_ignored, before + 3);
    // A well-formed append still works.
    n.step(msg(1, 2, 3, append((1, 1), &[(2, 2), (3, 3)], 1)))
        .unwrap();
    assert_eq!(n.last_index(), 3);
}
