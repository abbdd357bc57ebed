//! Long randomized stress of grouping with a no-I/O executor (fast groups expose races).

use std::time::{Duration, Instant};

use surge_hotspot::{Config, Hints};

use crate::common::{TestExec, add, coordinator};

#[test]
fn fast_groups_never_strand_a_member() {
    let secs: u64 = std::env::var("HOTSPOT_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    // Small max_group_size exercises the split-and-promote path under load.
    let cases = [
        (2u64, 1024),
        (3, 1024),
        (8, 1024),
        (33, 1024),
        (128, 1024),
        (16, 3),
        (64, 5),
    ];
    for (threads, max_group_size) in cases {
        let cfg = Config::default().with_max_group_size(max_group_size);
        let hot = coordinator(TestExec::default(), cfg);
        let (tx, rx) = std::sync::mpsc::channel();
        let hot2 = std::sync::Arc::clone(&hot);
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_millis(secs * 150);
            std::thread::scope(|s| {
                for t in 0..threads {
                    let hot = &hot2;
                    s.spawn(move || {
                        let mut i = 0;
                        while Instant::now() < end {
                            hot.execute(&1, add(t * 1_000_000_000 + i, 1), Hints::hot_update())
                                .unwrap();
                            i += 1;
                        }
                    });
                }
            });
            let _ = tx.send(());
        });
        if rx.recv_timeout(Duration::from_secs(secs + 20)).is_err() {
            panic!(
                "stranded members with {threads} threads: {:?} waiting {} in flight {}",
                hot.stats(),
                hot.waiting(&1),
                hot.in_flight(&1)
            );
        }
        let s = hot.stats();
        assert_eq!(
            hot.executor().value(1) as u64,
            s.leader_count + s.follower_count
        );
    }
}
