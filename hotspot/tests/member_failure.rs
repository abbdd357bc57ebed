//! A failing member fails alone; a failed durable step fails its whole group.

use surge_hotspot::{Config, Error, Hints};

use crate::common::{Kind, Op, TestExec, add, coordinator, run_held_group};

#[test]
fn a_rejected_member_fails_alone_and_the_group_commits() {
    let hot = coordinator(TestExec::with_value(5, 10), Config::default());
    let h = Hints::hot_update();
    let bounded = Op {
        id: 2,
        kind: Kind::Add {
            delta: -100,
            min: 0,
            max: i64::MAX,
        },
    };
    let no_row = Op {
        id: 3,
        kind: Kind::NoOp,
    };
    let ops = [
        (add(1, 1), h),
        (bounded, Hints::new().commit_on_success()),
        (no_row, h),
        (add(4, 1), h),
    ];
    let rs = run_held_group(&hot, 5, &ops);
    assert_eq!(rs[0].as_ref().unwrap(), &11);
    match &rs[1] {
        Err(Error::Rejected {
            position,
            group_size,
            rollback,
            ..
        }) => {
            assert_eq!((*position, *group_size, *rollback), (1, 4, false));
        }
        other => panic!("want Rejected, got {other:?}"),
    }
    match &rs[2] {
        Err(Error::TargetAffectRow {
            expected: 1,
            actual: 0,
            rollback: true,
        }) => {}
        other => panic!("want TargetAffectRow, got {other:?}"),
    }
    assert!(rs[2].as_ref().unwrap_err().rollback_requested());
    assert_eq!(
        rs[3].as_ref().unwrap(),
        &12,
        "member 4 sees member 1, not the failed ones"
    );
    assert_eq!(hot.executor().value(5), 12);
    assert_eq!(hot.stats().fail_count, 2);
}

#[test]
fn a_failed_durable_step_fails_every_member_and_commits_nothing() {
    let hot = coordinator(TestExec::with_value(6, 50), Config::default());
    let h = Hints::hot_update();
    hot.executor().fail_commit_for(2);
    let ops = [
        (add(1, 1), h),
        (add(2, 1), h),
        (
            Op {
                id: 3,
                kind: Kind::Fail,
            },
            h,
        ),
    ];
    let rs = run_held_group(&hot, 6, &ops);
    for r in &rs[..2] {
        match r {
            Err(e @ Error::Durable { group_size: 3, .. }) => {
                assert!(!e.is_member_failure());
                let src = std::error::Error::source(e).unwrap().to_string();
                assert!(src.contains("injected durable failure"), "{src}");
            }
            other => panic!("want Durable, got {other:?}"),
        }
    }
    assert!(matches!(rs[2], Err(Error::Rejected { .. })), "{:?}", rs[2]);
    assert_eq!(
        hot.executor().value(6),
        50,
        "nothing of the failed group is visible"
    );
    let s = hot.stats();
    assert_eq!((s.fail_count, s.group_fail_count), (3, 1), "{s:?}");
    // The key keeps working after the failure, from the last committed value.
    assert_eq!(hot.execute(&6, add(9, 1), h).unwrap(), 51);
}
