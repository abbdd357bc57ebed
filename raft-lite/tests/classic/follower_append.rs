//! Follower truncation: only at the first conflicting entry (Raft §5.3).

use crate::common::*;

#[test]
fn test_log_replication_with_reordered_message() {
    let mut f = node_with_log(2, &[1, 2, 3], &[(1, 1)], 1);
    // The newer append arrives first...
    f.step(msg(1, 2, 1, append((1, 1), &[(2, 1), (3, 1)], 0)))
        .unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(3, false, 0)]);
    // ...then the older one, a prefix of it: nothing is truncated, and the ack is for
    // what this message proves (index 2), not for our whole log.
    f.step(msg(1, 2, 1, append((1, 1), &[(2, 1)], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(2, false, 0)]);
    assert_eq!(
        f.last_index(),
        3,
        "a stale append must not drop a matching suffix"
    );
}

#[test]
fn test_follower_append_entries() {
    // (prev, entries, resulting log terms)
    let cases: Vec<((u64, u64), Vec<(u64, u64)>, Vec<u64>)> = vec![
        ((2, 2), vec![(3, 3)], vec![1, 2, 3]),
        ((1, 1), vec![(2, 3), (3, 4)], vec![1, 3, 4]),
        ((0, 0), vec![(1, 1)], vec![1, 2]),
        ((0, 0), vec![(1, 3)], vec![3]),
    ];
    for (prev, es, want) in cases {
        let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 2)], 2);
        f.step(msg(1, 2, 4, append(prev, &es, 0))).unwrap();
        let rd = cycle(&mut f);
        let got: Vec<u64> = (1..=f.last_index())
            .map(|i| f.term_at(i).unwrap())
            .collect();
        assert_eq!(got, want, "prev {prev:?} entries {es:?}");
        let first_new = es
            .iter()
            .find(|(i, t)| f.term_at(*i) == Some(*t))
            .map(|e| e.0);
        if let (Some(fst), Some(last)) = (rd.entries.first(), rd.entries.last()) {
            assert!(fst.index >= first_new.unwrap_or(1));
            assert_eq!(last.index, f.last_index());
        }
    }
}

#[test]
fn test_follower_check_msg_append() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 2)], 2);
    // prev term mismatch at 2: reject with hint.
    f.step(msg(1, 2, 2, append((2, 3), &[], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(2, true, 2)]);
    // prev beyond our log: reject, hint = our last index.
    f.step(msg(1, 2, 2, append((5, 2), &[], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(5, true, 2)]);
    // match: accept.
    f.step(msg(1, 2, 2, append((2, 2), &[], 0))).unwrap();
    let rd = cycle(&mut f);
    assert_eq!(append_resp(&rd), vec![(2, false, 0)]);
}

#[test]
fn test_handle_msg_append() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 2)], 2);
    // Commit is capped by what the message proves: leader commit 3, message ends at 2.
    f.step(msg(1, 2, 2, append((1, 1), &[(2, 2)], 3))).unwrap();
    let _ = cycle(&mut f);
    assert_eq!(f.committed(), 2);
    f.step(msg(1, 2, 2, append((2, 2), &[(3, 2), (4, 2)], 3)))
        .unwrap();
    let rd = cycle(&mut f);
    assert_eq!(f.committed(), 3);
    assert_eq!(
        rd.committed_entries
            .iter()
            .map(|e| e.index)
            .collect::<Vec<_>>(),
        vec![3]
    );
}

#[test]
fn test_committed_entry_never_overwritten() {
    let mut f = node_with_log(2, &[1, 2], &[(1, 1), (2, 1)], 1);
    f.step(msg(1, 2, 1, append((2, 1), &[], 2))).unwrap();
    let _ = cycle(&mut f);
    assert_eq!(f.committed(), 2);
    // A (buggy) append that conflicts below commit is refused, log unchanged.
    f.step(msg(1, 2, 3, append((0, 0), &[(1, 1), (2, 3)], 2)))
        .unwrap();
    let _ = cycle(&mut f);
    assert_eq!(f.term_at(2), Some(1));
}
