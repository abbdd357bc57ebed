//! A panicking executor fails its group; nobody is left waiting.

use std::sync::atomic::Ordering;

use surge_hotspot::{Config, Error, Hints, Phase};

use crate::common::{Kind, Op, TestExec, add, coordinator, run_held_group};

#[test]
fn a_panic_in_apply_fails_the_group_and_wakes_every_member() {
    let hot = coordinator(TestExec::with_value(2, 0), Config::default());
    let h = Hints::hot_update();
    let ops = [
        (add(1, 1), h),
        (
            Op {
                id: 2,
                kind: Kind::Fail,
            },
            h,
        ),
        (
            Op {
                id: 3,
                kind: Kind::Panic,
            },
            h,
        ),
        (add(4, 1), h),
    ];
    let rs = run_held_group(&hot, 2, &ops);
    assert!(matches!(
        rs[0],
        Err(Error::ExecutorPanicked {
            phase: Phase::Apply,
            group_size: 4
        })
    ));
    assert!(
        matches!(rs[1], Err(Error::Rejected { .. })),
        "failed alone before the panic"
    );
    assert!(matches!(
        rs[2],
        Err(Error::ExecutorPanicked {
            phase: Phase::Apply,
            ..
        })
    ));
    assert!(matches!(
        rs[3],
        Err(Error::ExecutorPanicked {
            phase: Phase::Apply,
            ..
        })
    ));
    assert_eq!(hot.executor().value(2), 0);
    // The key is not stuck.
    assert_eq!(hot.execute(&2, add(5, 1), h).unwrap(), 1);
}

#[test]
fn a_panic_in_commit_fails_the_group_and_the_key_keeps_working() {
    let hot = coordinator(TestExec::with_value(2, 0), Config::default());
    let h = Hints::hot_update();
    let ops = [(add(1, 1), h), (add(2, 1), h)];
    // Armed before the held leader (id 0) reaches its commit: its group and the members'
    // group both panic there, after the gate opens.
    hot.executor().panic_commit.store(true, Ordering::SeqCst);
    let rs = run_held_group(&hot, 2, &ops);
    for r in &rs {
        assert!(
            matches!(
                r,
                Err(Error::ExecutorPanicked {
                    phase: Phase::Commit,
                    ..
                })
            ),
            "{r:?}"
        );
    }
    hot.executor().panic_commit.store(false, Ordering::SeqCst);
    assert_eq!(hot.execute(&2, add(3, 5), h).unwrap(), 5);
    assert_eq!(
        hot.stats().group_fail_count,
        2,
        "held leader's group and the members' group"
    );
}
