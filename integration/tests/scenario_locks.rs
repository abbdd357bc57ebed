//! The locks scenario shows what in-memory pessimistic locks (TiKV 6.0) promise, with counts
//! that add up.

use surgedb::scenarios::run_locks;

#[test]
fn locks_scenario_migrates_on_purpose_and_loses_only_on_crash() {
    let report = run_locks().expect("scenario runs");
    assert_eq!(report.t1_locks, 3);
    // 512 KiB of ~200-byte entries: thousands fit, not unbounded.
    assert!((1_000..10_000).contains(&report.t2_locks), "{report:?}");
    assert!(report.region_bytes_when_full <= 512 << 10, "{report:?}");
    assert!(
        report.fallback_reason.contains("region lock budget full"),
        "{report:?}"
    );
    // Every lock of region 1 either stays or moves: the counts add up.
    assert_eq!(
        report.stayed_after_split + report.moved_by_split,
        report.t1_locks + report.t2_locks
    );
    // Of all the locks only "stock/42" sorts at or after "m"; "acct/..." and "fill/..." stay.
    assert_eq!(report.moved_by_split, 1);
    assert_eq!(report.proposed_before_transfer, report.moved_by_split);
    assert_eq!(report.held_by_new_leader, report.moved_by_split);
    assert_eq!(report.lost_on_crash, report.moved_by_split);
    assert!(!report.t1_lock_found_at_prewrite);
    let chain: Vec<(u64, u64)> = report
        .deadlock_chain
        .iter()
        .map(|w| (w.txn, w.wait_for_txn))
        .collect();
    assert_eq!(chain, [(200, 100), (100, 200)]);
    assert_eq!(report.deadlock_chain[0].key, b"acct/0001");
    assert_eq!(report.node_bytes_at_end, 0);
}

#[test]
fn locks_report_prints_the_deadlock_as_sentences_and_the_counts_that_add_up() {
    let report = run_locks().expect("scenario runs");
    let text = report.to_string();
    assert!(
        text.contains("txn 200 waits for txn 100 on key acct/0001"),
        "{text}"
    );
    assert!(
        text.contains("txn 100 waits for txn 200 on key fill/"),
        "{text}"
    );
    assert!(!text.contains("[("), "no Debug tuples: {text}");
    let total = report.t1_locks + report.t2_locks;
    assert!(text.contains(&format!("= {total} locks")), "{text}");
    assert!(
        text.contains(&format!(
            "{} + {} = {total}",
            report.stayed_after_split, report.moved_by_split
        )),
        "{text}"
    );
    assert!(
        text.lines().last().unwrap().starts_with("Shows: "),
        "{text}"
    );
}
