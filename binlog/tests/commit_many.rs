//! `Binlog::commit_many`: a batch of transactions is written contiguously, in order, in one
//! group with one fsync, also while other threads commit; empty, foreign and large caches;
//! fail-stop on a failed fsync.

use std::collections::BTreeMap;
use std::sync::Arc;

use surge_binlog::{Binlog, CommitInfo, CommitMethod, Error, Position, TxnCache};

use crate::common::{all_events, first_row_keys, fresh, groups, test_config, verify_all};

/// A cache holding one row `key` = `v`.
fn one_row(log: &Binlog, key: &[u8]) -> TxnCache {
    let mut c = log.new_cache();
    c.put(key, b"v").unwrap();
    c
}

/// The xids of the log's whole transactions, in log order, from `from`.
fn logged_xids(log: &Binlog, from: Option<Position>) -> Vec<u64> {
    log.reader_from(from)
        .unwrap()
        .transactions()
        .map(|t| t.unwrap().xid.unwrap())
        .collect()
}

/// Checks that `infos` (a batch's results) are in the order of `xids`, with consecutive
/// GTIDs and growing end positions.
fn assert_batch_order(infos: &[CommitInfo], xids: &[u64]) {
    let got: Vec<u64> = infos.iter().map(|i| i.xid).collect();
    assert_eq!(got, xids, "results in the order given");
    for w in infos.windows(2) {
        assert_eq!(w[1].gtid.seq_no, w[0].gtid.seq_no + 1, "consecutive GTIDs");
        assert!(w[0].end_position < w[1].end_position);
        assert_eq!(w[0].file, w[1].file, "one file");
    }
}

#[test]
fn a_batch_is_one_group_with_one_fsync_and_reads_back_in_order() {
    let (dir, log) = fresh();
    log.commit(one_row(&log, b"before"), 1).unwrap();
    let before = log.stats();
    let from = log.current_position();
    let xids: Vec<u64> = (100..110).collect();
    let txns = xids
        .iter()
        .map(|x| (one_row(&log, format!("k{x}").as_bytes()), *x))
        .collect();
    let infos = log.commit_many(txns).unwrap();
    assert_batch_order(&infos, &xids);
    assert!(infos.iter().all(|i| i.method == CommitMethod::Copied));
    assert_eq!(infos[0].gtid.seq_no, 2);
    let after = log.stats();
    assert_eq!(after.groups - before.groups, 1, "one group for the batch");
    assert_eq!(after.syncs - before.syncs, 1, "one fsync for the batch");
    assert_eq!(after.commits - before.commits, 10);
    // Read back with the crate's reader: exactly the batch after `from`, in order, each
    // transaction ending where its result says.
    let txns: Vec<_> = log
        .reader_from(Some(from))
        .unwrap()
        .transactions()
        .collect::<Result<_, _>>()
        .unwrap();
    let got: Vec<(u64, u64, u64)> = txns
        .iter()
        .map(|t| (t.gtid.seq_no, t.xid.unwrap(), t.end.offset))
        .collect();
    let want: Vec<(u64, u64, u64)> = infos
        .iter()
        .map(|i| (i.gtid.seq_no, i.xid, i.end_position))
        .collect();
    assert_eq!(got, want);
    drop(log);
    let keys = first_row_keys(dir.path());
    let want_keys: Vec<Vec<u8>> = std::iter::once(b"before".to_vec())
        .chain(xids.iter().map(|x| format!("k{x}").into_bytes()))
        .collect();
    assert_eq!(keys, want_keys);
    verify_all(dir.path());
}

#[test]
fn an_empty_batch_commits_nothing() {
    let (dir, log) = fresh();
    let pos = log.current_position();
    assert_eq!(log.commit_many(Vec::new()).unwrap(), Vec::new());
    assert_eq!(log.stats(), Default::default());
    assert_eq!(log.current_position(), pos);
    // A batch of one is an ordinary copied commit.
    let infos = log.commit_many(vec![(log.new_cache(), 5)]).unwrap();
    assert_eq!((infos.len(), infos[0].xid), (1, 5));
    drop(log);
    let (complete, incomplete) = groups(&all_events(dir.path()).unwrap());
    assert_eq!((complete, incomplete), (vec![(1, 5)], vec![]));
}

#[test]
fn batches_stay_contiguous_and_in_order_among_concurrent_commits() {
    const SINGLE_THREADS: u64 = 4;
    const SINGLES: u64 = 100;
    const BATCH_THREADS: u64 = 3;
    const BATCHES: u64 = 25;
    let (dir, log) = fresh();
    let log = Arc::new(log);
    let singles: Vec<_> = (0..SINGLE_THREADS)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..SINGLES {
                    let xid = t * 1000 + i;
                    log.commit(one_row(&log, &xid.to_le_bytes()), xid).unwrap();
                }
            })
        })
        .collect();
    let batchers: Vec<_> = (0..BATCH_THREADS)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut batches = Vec::new();
                for b in 0..BATCHES {
                    // Sizes 2..=6; xids 1_000_000 + thread, batch, place.
                    let xids: Vec<u64> = (0..2 + (t + b) % 5)
                        .map(|i| 1_000_000 + t * 10_000 + b * 10 + i)
                        .collect();
                    let txns = xids
                        .iter()
                        .map(|x| (one_row(&log, &x.to_le_bytes()), *x))
                        .collect();
                    let infos = log.commit_many(txns).unwrap();
                    assert_batch_order(&infos, &xids);
                    batches.push(xids);
                }
                batches
            })
        })
        .collect();
    singles.into_iter().for_each(|h| h.join().unwrap());
    let batches: Vec<Vec<u64>> = batchers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let xids = logged_xids(&log, None);
    let place: BTreeMap<u64, usize> = xids.iter().enumerate().map(|(i, x)| (*x, i)).collect();
    let n_batched: usize = batches.iter().map(Vec::len).sum();
    assert_eq!(xids.len(), (SINGLE_THREADS * SINGLES) as usize + n_batched);
    assert_eq!(place.len(), xids.len(), "no xid twice");
    for b in &batches {
        let at = place[&b[0]];
        assert_eq!(
            &xids[at..at + b.len()],
            b.as_slice(),
            "batch {b:?} is contiguous and in order"
        );
    }
    let s = log.stats();
    assert_eq!(s.commits as usize, xids.len());
    assert_eq!(s.syncs, s.groups, "one fsync per group");
    let entries = SINGLE_THREADS * SINGLES + BATCH_THREADS * BATCHES;
    assert!(
        s.groups < entries,
        "some group held several commits ({} groups for {entries} calls)",
        s.groups
    );
    drop(log);
    verify_all(dir.path());
}

#[test]
fn a_large_spilled_cache_in_a_batch_is_copied_not_renamed() {
    let (dir, log) = fresh();
    let files = log.files();
    let mut big = log.new_cache();
    for i in 0..24u32 {
        big.put(&i.to_le_bytes(), &[3u8; 64 << 10]).unwrap();
    }
    assert!(big.is_spilled() && big.len() > log.config().large_commit_threshold);
    let before = log.stats();
    let infos = log
        .commit_many(vec![
            (one_row(&log, b"first"), 1),
            (big, 2),
            (one_row(&log, b"last"), 3),
        ])
        .unwrap();
    assert_batch_order(&infos, &[1, 2, 3]);
    assert!(infos.iter().all(|i| i.method == CommitMethod::Copied));
    let after = log.stats();
    assert_eq!(after.renames, 0);
    assert_eq!(after.groups - before.groups, 1);
    assert_eq!(after.syncs - before.syncs, 1);
    assert_eq!(
        log.files(),
        files,
        "no new file: the batch stays in one file"
    );
    assert_eq!(logged_xids(&log, None), vec![1, 2, 3]);
    drop(log);
    // The copied cache's spill file is gone.
    let left = std::fs::read_dir(dir.path().join(surge_binlog::CACHE_DIR_NAME))
        .unwrap()
        .count();
    assert_eq!(left, 0);
    verify_all(dir.path());
}

#[test]
fn a_batch_with_a_cache_of_another_log_is_refused_whole() {
    let (_dir, log) = fresh();
    let (_other_dir, other) = fresh();
    let pos = log.current_position();
    let r = log.commit_many(vec![(one_row(&log, b"a"), 1), (one_row(&other, b"b"), 2)]);
    assert!(
        matches!(&r, Err(Error::Invalid { what: "cache", detail }) if detail.contains("transaction 1")),
        "{r:?}"
    );
    assert_eq!(log.current_position(), pos, "nothing of the batch written");
    assert_eq!(log.stats().commits, 0);
}

#[test]
fn a_failed_fsync_fails_the_whole_batch_and_every_later_commit() {
    let (dir, log) = fresh();
    log.commit(log.new_cache(), 1).unwrap();
    log.__fail_next_fsync_for_tests();
    let r = log.commit_many((10..14).map(|x| (one_row(&log, b"k"), x)).collect());
    assert!(matches!(r, Err(Error::Poisoned { .. })), "{r:?}");
    assert_eq!(
        log.stats().commits,
        1,
        "no transaction of the batch counted"
    );
    assert!(matches!(
        log.commit(log.new_cache(), 2),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(
        log.commit_many(vec![(log.new_cache(), 3)]),
        Err(Error::Poisoned { .. })
    ));
    assert!(log.close().is_err(), "closing a stopped log reports it");
    // The batch's bytes reached the file (only the fsync failed): recovery reports its
    // transactions whole, and nothing partial.
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let report = log.recovery_report().clone();
    let complete: Vec<Option<u64>> = report.complete.iter().map(|t| t.xid).collect();
    assert_eq!(
        complete,
        vec![Some(1), Some(10), Some(11), Some(12), Some(13)]
    );
    assert!(report.incomplete.is_empty());
    drop(log);
    verify_all(dir.path());
}

#[test]
fn a_panicking_leader_fails_its_batch_instead_of_leaving_it_waiting() {
    let (_dir, log) = fresh();
    log.__panic_in_next_group_for_tests();
    // A batch of two is a group of two: its leader (this thread) panics while writing it.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        log.commit_many(vec![(log.new_cache(), 1), (log.new_cache(), 2)])
    }));
    assert!(r.is_err(), "the injected panic");
    assert!(matches!(
        log.commit_many(vec![(log.new_cache(), 3)]),
        Err(Error::Poisoned { .. })
    ));
}
