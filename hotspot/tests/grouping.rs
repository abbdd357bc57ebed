//! Group formation: arrival order, the `max_group_size` split, pooled group objects, counters.

use surge_hotspot::{Config, Hints};

use crate::common::{TestExec, add, coordinator, run_held_group};

#[test]
fn requests_arriving_during_a_commit_form_the_next_group_in_arrival_order() {
    let hot = coordinator(TestExec::with_value(7, 100), Config::default());
    let h = Hints::hot_update();
    let ops: Vec<_> = (1..=5).map(|i| (add(i, i as i64), h)).collect();
    let rs = run_held_group(&hot, 7, &ops);
    let got: Vec<i64> = rs.into_iter().map(|r| r.unwrap()).collect();
    // Each member sees its predecessor's result: 100+1, +2, +3, +4, +5.
    assert_eq!(got, vec![101, 103, 106, 110, 115]);
    let s = hot.stats();
    assert_eq!((s.leader_count, s.follower_count), (2, 4), "{s:?}");
    assert_eq!(s.max_group_size, 5);
    assert_eq!(s.mean_group_size(), 3.0);
    let hist = hot.executor().history.lock().unwrap().clone();
    assert_eq!(hist, vec![vec![0], vec![1, 2, 3, 4, 5]]);
    assert!(
        !hot.executor()
            .overlap_seen
            .load(std::sync::atomic::Ordering::SeqCst)
    );
}

#[test]
fn max_group_size_splits_a_long_queue_into_ordered_groups() {
    let cfg = Config::default().with_max_group_size(2);
    let hot = coordinator(TestExec::with_value(1, 0), cfg);
    let h = Hints::hot_update();
    let ops: Vec<_> = (1..=5).map(|i| (add(i, 1), h)).collect();
    let rs = run_held_group(&hot, 1, &ops);
    let got: Vec<i64> = rs.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(got, vec![1, 2, 3, 4, 5]);
    let hist = hot.executor().history.lock().unwrap().clone();
    assert_eq!(hist, vec![vec![0], vec![1, 2], vec![3, 4], vec![5]]);
    let s = hot.stats();
    assert_eq!(
        (s.leader_count, s.follower_count, s.max_group_size),
        (4, 2, 2),
        "{s:?}"
    );
}

#[test]
fn group_objects_are_pooled_and_reused_across_keys() {
    let hot = coordinator(TestExec::default(), Config::default());
    for key in 0..10u64 {
        assert_eq!(
            hot.execute(&key, add(key, 1), Hints::hot_update()).unwrap(),
            1
        );
        assert_eq!(hot.in_flight(&key), 0);
        assert_eq!(hot.waiting(&key), 0);
    }
    let s = hot.stats();
    // One object created, returned to the free list after each request, reused 9 times.
    assert_eq!(
        (s.total_count, s.reuse_count, s.free_count),
        (1, 9, 1),
        "{s:?}"
    );
    assert_eq!((s.leader_count, s.follower_count, s.fail_count), (10, 0, 0));
    let rows = s.status_rows();
    for name in [
        "Group_update_leader_count",
        "Group_update_follower_count",
        "Group_update_fail_count",
        "Group_update_total_count",
        "Group_update_free_count",
        "Group_update_reuse_count",
        "Group_update_ignore_count",
    ] {
        assert!(rows.iter().any(|(n, _)| *n == name), "missing {name}");
    }
}

#[test]
fn a_member_affecting_no_row_is_counted_as_ignored() {
    use crate::common::{Kind, Op};
    let hot = coordinator(TestExec::with_value(3, 9), Config::default());
    let h = Hints::new().commit_on_success();
    let r = hot
        .execute(
            &3,
            Op {
                id: 1,
                kind: Kind::NoOp,
            },
            h,
        )
        .unwrap();
    assert_eq!(r, 9);
    assert_eq!(hot.stats().ignore_count, 1);
}
