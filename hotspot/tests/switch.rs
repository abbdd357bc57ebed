//! The `hotspot` switch, hint eligibility and the automatic mode.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use surge_hotspot::{Config, Hints};

use crate::common::{Kind, Op, TestExec, add, coordinator, wait_until};

#[test]
fn switching_off_and_on_while_traffic_runs_keeps_every_update() {
    const THREADS: u64 = 16;
    const EACH: u64 = 150;
    let hot = coordinator(TestExec::default(), Config::default());
    let stop = AtomicBool::new(false);
    let values: Vec<i64> = std::thread::scope(|s| {
        let toggler = s.spawn(|| {
            let mut on = true;
            while !stop.load(Ordering::Relaxed) {
                on = !on;
                hot.set_hotspot(on);
                std::thread::sleep(Duration::from_micros(300));
            }
        });
        let hs: Vec<_> = (0..THREADS)
            .map(|t| {
                let hot = &hot;
                s.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            // Besides the timed toggler (too slow for a fast release build),
                            // client 0 flips the switch every 10 of its own requests, so both
                            // paths surely run while the others' traffic is in flight.
                            if t == 0 && i % 10 == 0 {
                                hot.set_hotspot((i / 10) % 2 == 1);
                            }
                            hot.execute(&5, add(t * 1000 + i, 1), Hints::hot_update())
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let v = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        toggler.join().unwrap();
        v
    });
    let n = (THREADS * EACH) as i64;
    assert_eq!(hot.executor().value(5), n);
    assert_eq!(
        values.iter().copied().collect::<HashSet<_>>(),
        (1..=n).collect()
    );
    let s = hot.stats();
    assert_eq!(
        s.leader_count + s.follower_count + s.bypass_count,
        n as u64,
        "{s:?}"
    );
    assert!(
        s.bypass_count > 0 && s.leader_count > 0,
        "both paths ran: {s:?}"
    );
    assert!(
        !hot.executor().overlap_seen.load(Ordering::SeqCst),
        "executor calls overlapped"
    );
}

#[test]
fn without_commit_on_success_or_with_the_switch_off_requests_run_alone() {
    let hot = coordinator(TestExec::default(), Config::default());
    assert_eq!(
        hot.execute(&1, add(1, 2), Hints::new().target_affect_row(1))
            .unwrap(),
        2
    );
    hot.set_hotspot(false);
    assert!(!hot.hotspot());
    assert_eq!(hot.execute(&1, add(2, 2), Hints::hot_update()).unwrap(), 4);
    let r = hot.execute(
        &1,
        Op {
            id: 3,
            kind: Kind::Fail,
        },
        Hints::hot_update(),
    );
    assert!(r.unwrap_err().is_member_failure());
    let s = hot.stats();
    assert_eq!(
        (s.bypass_count, s.leader_count, s.fail_count),
        (3, 0, 1),
        "{s:?}"
    );
    assert!(!hot.config().hotspot);
}

#[test]
fn automatic_mode_groups_unhinted_requests_once_concurrency_passes_the_threshold() {
    let cfg = Config::default().with_auto_group_threshold(2);
    let hot = coordinator(TestExec::default(), cfg);
    let exec = std::sync::Arc::clone(hot.executor());
    exec.close_gate();
    let first = {
        let hot = std::sync::Arc::clone(&hot);
        // Alone (1 in flight < 2): the ordinary path, held in its commit.
        std::thread::spawn(move || hot.execute(&8, add(1, 1), Hints::new()))
    };
    wait_until("first in commit", 10, || {
        exec.in_commit.load(Ordering::SeqCst) == 1
    });
    let mut hs = Vec::new();
    for i in 0..3u64 {
        let hot2 = std::sync::Arc::clone(&hot);
        hs.push(std::thread::spawn(move || {
            hot2.execute(&8, add(10 + i, 1), Hints::new())
        }));
        wait_until("grouped", 10, || hot.waiting(&8) == i as usize + 1);
    }
    exec.open_gate();
    assert_eq!(first.join().unwrap().unwrap(), 1);
    let got: Vec<i64> = hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect();
    assert_eq!(got, vec![2, 3, 4]);
    let s = hot.stats();
    assert_eq!(
        (s.bypass_count, s.leader_count, s.follower_count),
        (1, 1, 2),
        "{s:?}"
    );
    hot.set_auto_group_threshold(0);
    assert_eq!(hot.execute(&8, add(20, 1), Hints::new()).unwrap(), 5);
    assert_eq!(hot.stats().bypass_count, 2);
    assert!(hot.set_max_group_size(0).is_err());
    assert!(hot.set_max_wait(Duration::from_secs(5)).is_err());
}

#[test]
fn spin_yields_changes_at_run_time() {
    let hot = coordinator(TestExec::default(), Config::default());
    assert_eq!(hot.config().spin_yields, surge_hotspot::DEFAULT_SPIN_YIELDS);
    hot.set_spin_yields(0);
    assert_eq!(hot.config().spin_yields, 0);
    assert_eq!(hot.execute(&1, add(1, 5), Hints::hot_update()).unwrap(), 5);
}
