//! A leader alone commits at once: no timed wait, whatever `max_wait` is.

use std::time::{Duration, Instant};

use surge_hotspot::{Config, Hints};

use crate::common::{TestExec, add, coordinator};

#[test]
fn a_lone_client_never_sleeps_max_wait() {
    // With AliSQL's rule (always sleep one max_wait slice) 50 requests would take 50 s.
    let cfg = Config::default().with_max_wait(Duration::from_secs(1));
    let hot = coordinator(TestExec::default(), cfg);
    let t = Instant::now();
    for i in 1..=50u64 {
        assert_eq!(
            hot.execute(&9, add(i, 1), Hints::hot_update()).unwrap(),
            i as i64
        );
    }
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    let s = hot.stats();
    assert_eq!(
        (s.leader_count, s.follower_count, s.timed_wait_count),
        (50, 0, 0),
        "{s:?}"
    );
    assert_eq!(s.mean_group_size(), 1.0);
}

#[test]
fn timed_wait_is_bounded_by_max_wait() {
    // Two clients in lock-step: the second one's leader may wait for the first to come back,
    // but never more than max_wait per group.
    let cfg = Config::default().with_max_wait(Duration::from_millis(2));
    let hot = coordinator(TestExec::default(), cfg);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for i in 0..100u64 {
                    hot.execute(&1, add(i, 1), Hints::hot_update()).unwrap();
                }
            });
        }
    });
    let st = hot.stats();
    assert_eq!(hot.executor().value(1), 200);
    // Upper bound: every group waited the full 2 ms (and groups hold >= 1 member).
    let bound = Duration::from_millis(2) * u32::try_from(st.leader_count).unwrap();
    assert!(
        t.elapsed() < bound + Duration::from_secs(5),
        "{:?} {st:?}",
        t.elapsed()
    );
    assert!(
        st.leader_wait_ns < bound.as_nanos() as u64 + 2_000_000_000,
        "{st:?}"
    );
}
