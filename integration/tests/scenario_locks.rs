//! The locks scenario shows what seed 000 promises.

use surgedb::scenarios::run_locks;

#[test]
fn locks_scenario_migrates_on_purpose_and_loses_only_on_crash() {
    let report = run_locks().expect("scenario runs");
    assert_eq!(report.in_memory_locks, 3);
    // 512 KiB of ~200-byte entries: thousands fit, not unbounded.
    assert!(
        (1_000..10_000).contains(&report.locks_until_region_full),
        "{report:?}"
    );
    assert!(
        report.fallback_reason.contains("region lock budget full"),
        "{report:?}"
    );
    // Of all the locks only "stock/42" sorts at or after "m"; "acct/..." and "fill/..." stay.
    assert_eq!(report.moved_by_split, 1);
    assert_eq!(report.proposed_before_transfer, report.moved_by_split);
    assert_eq!(report.held_by_new_leader, report.moved_by_split);
    assert_eq!(report.lost_on_crash, report.moved_by_split);
    assert!(report.prewrite_finds_lock_gone);
    assert_eq!(report.deadlock_chain, [(200, 100), (100, 200)]);
    assert_eq!(report.node_bytes_at_end, 0);
}
