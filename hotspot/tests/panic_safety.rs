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

/// An executor whose group image panics when dropped without being committed (a "drop bomb",
/// as a transaction guard that insists on commit or rollback). `begin` of the first group waits
/// at a gate so followers can queue behind it. Op `< 0` is rejected, `99` panics in `apply`.
mod bomb {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};

    use surge_hotspot::{Applied, GroupExecutor};

    #[derive(Debug)]
    pub struct Armed(pub bool);

    impl Drop for Armed {
        fn drop(&mut self) {
            if self.0 && !std::thread::panicking() {
                panic!("group image dropped without commit");
            }
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("never")]
    pub struct Never;

    #[derive(Debug, Default)]
    pub struct Bomb {
        pub gate_open: Mutex<bool>,
        pub cv: Condvar,
        pub begins: AtomicUsize,
        pub value: Mutex<i64>,
    }

    impl GroupExecutor for Bomb {
        type Key = u64;
        type Op = i64;
        type Output = i64;
        type Change = i64;
        type Reject = &'static str;
        type Error = Never;
        type Group = (i64, Armed);

        fn begin(&self, _key: &u64) -> Result<(i64, Armed), Never> {
            self.begins.fetch_add(1, Ordering::SeqCst);
            let mut open = self.gate_open.lock().unwrap();
            while !*open {
                open = self.cv.wait(open).unwrap();
            }
            Ok((*self.value.lock().unwrap(), Armed(true)))
        }
        fn apply(&self, g: &(i64, Armed), op: &i64) -> Result<Applied<i64, i64>, &'static str> {
            if *op == 99 {
                panic!("apply panics on 99");
            }
            if *op < 0 {
                return Err("negative");
            }
            Ok(Applied::one_row(g.0 + op, g.0 + op))
        }
        fn accept(&self, g: &mut (i64, Armed), next: i64) {
            g.0 = next;
        }
        fn commit(&self, _key: &u64, mut g: (i64, Armed)) -> Result<(), Never> {
            g.1.0 = false;
            *self.value.lock().unwrap() = g.0;
            Ok(())
        }
    }
}

/// Regression: a panic while the coordinator dropped the group image (after every member was
/// rejected, or after a panic in `apply`) escaped the leader, so the leader's thread panicked
/// and the members queued behind it were never woken.
#[test]
fn a_panic_dropping_the_group_image_fails_the_group_and_strands_nobody() {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::common::wait_until;

    for ops in [[-1i64, -2, -3], [-1, 99, 5]] {
        let hot = Arc::new(
            surge_hotspot::Coordinator::new(bomb::Bomb::default(), Config::default()).unwrap(),
        );
        let h = Hints::hot_update();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut threads = Vec::new();
        for (i, op) in ops.into_iter().enumerate() {
            let hot2 = Arc::clone(&hot);
            let tx = tx.clone();
            threads.push(std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    hot2.execute(&1, op, h)
                }));
                let _ = tx.send((i, r.map_err(|_| "execute panicked")));
            }));
            if i == 0 {
                wait_until("leader in begin", 10, || {
                    hot.executor().begins.load(Ordering::SeqCst) == 1
                });
            } else {
                wait_until("member collected", 10, || hot.waiting(&1) == i);
            }
        }
        *hot.executor().gate_open.lock().unwrap() = true;
        hot.executor().cv.notify_all();
        let mut got: Vec<_> = (0..ops.len())
            .map(|_| {
                rx.recv_timeout(Duration::from_secs(20))
                    .expect("a member was stranded")
            })
            .collect();
        got.sort_by_key(|(i, _)| *i);
        for (i, r) in got {
            let r = r.unwrap_or_else(|e| panic!("op {}: {e}", ops[i]));
            if ops.contains(&99) && i > 0 {
                assert!(
                    matches!(
                        r,
                        Err(Error::ExecutorPanicked {
                            phase: Phase::Apply,
                            ..
                        })
                    ),
                    "op {}: {r:?}",
                    ops[i]
                );
            } else {
                assert!(
                    matches!(r, Err(Error::Rejected { .. })),
                    "op {}: {r:?}",
                    ops[i]
                );
            }
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(
            *hot.executor().value.lock().unwrap(),
            0,
            "nothing committed"
        );
        // The key keeps working.
        assert_eq!(hot.execute(&1, 4, h).unwrap(), 4);
        assert_eq!(hot.in_flight(&1), 0);
    }
}
