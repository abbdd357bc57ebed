//! No lost or doubled update under 64 threads.

use std::collections::HashSet;

use surge_hotspot::{Config, Hints};

use crate::common::{Kind, Op, TestExec, coordinator};

#[test]
fn sixty_four_threads_lose_and_double_nothing() {
    assert_eq!(
        Config::default().spin_yields,
        surge_hotspot::DEFAULT_SPIN_YIELDS
    );
    lose_and_double_nothing(Config::default());
}

/// The same with members that sleep at once (no yielding first), and with members that yield
/// so long they hardly ever sleep: the wait strategy must not change any result.
#[test]
fn any_spin_yields_setting_loses_and_doubles_nothing() {
    for spin_yields in [0, 100_000] {
        lose_and_double_nothing(Config::default().with_spin_yields(spin_yields));
    }
}

fn lose_and_double_nothing(config: Config) {
    const THREADS: u64 = 64;
    const EACH: u64 = 60;
    let hot = coordinator(TestExec::default(), config);
    let results: Vec<Vec<(u64, Result<i64, String>)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let hot = &hot;
                s.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            let id = t * 1000 + i;
                            // Every 7th op would exceed a bound and must fail alone.
                            let max = if id % 7 == 3 { -1 } else { i64::MAX };
                            let op = Op {
                                id,
                                kind: Kind::Add {
                                    delta: 1,
                                    min: 0,
                                    max,
                                },
                            };
                            let r = hot.execute(&42, op, Hints::hot_update());
                            (id, r.map_err(|e| e.to_string()))
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut seen = HashSet::new();
    let mut ok = 0i64;
    for (id, r) in results.into_iter().flatten() {
        match r {
            Ok(v) => {
                assert!(id % 7 != 3, "op {id} should have been rejected");
                assert!(seen.insert(v), "post-update value {v} returned twice");
                ok += 1;
            }
            Err(e) => assert!(id % 7 == 3 && e.contains("rejected"), "op {id}: {e}"),
        }
    }
    let final_value = hot.executor().value(42);
    assert_eq!(
        final_value, ok,
        "sum of successful increments equals the final value"
    );
    assert_eq!(
        seen,
        (1..=ok).collect::<HashSet<_>>(),
        "values are exactly 1..=final"
    );
    let s = hot.stats();
    assert_eq!(s.leader_count + s.follower_count, THREADS * EACH);
    assert!(
        !hot.executor()
            .overlap_seen
            .load(std::sync::atomic::Ordering::SeqCst)
    );
    assert_eq!(hot.in_flight(&42), 0);
}
