//! The snapshot-isolation checker on hand-built histories (each anomaly it must reject and
//! the legal histories near each that it must accept) and on histories of a simulated
//! snapshot-isolation store, with outcomes hidden (accepted) and one read corrupted
//! (rejected).

use std::collections::BTreeMap;

use crate::{KeyRead, ReadKind, SplitMix64, TxnOutcome, TxnRecord, check_snapshot_isolation};

const ACK: fn(u64) -> TxnOutcome = |commit_ts| TxnOutcome::Committed { commit_ts };
const UNKNOWN: TxnOutcome = TxnOutcome::Unknown;
const ABORTED: TxnOutcome = TxnOutcome::Aborted;

/// A transaction: `id` started at `start_ts`, read `reads` (key, writer seen) at its
/// snapshot, wrote `writes`. Wall-clock times follow the timestamps (x1000), so a commit is
/// acknowledged before every transaction that starts after its timestamp.
fn txn(
    id: u64,
    start_ts: u64,
    reads: &[(u64, u64)],
    writes: &[u64],
    outcome: TxnOutcome,
) -> TxnRecord {
    let end = match outcome {
        TxnOutcome::Committed { commit_ts } => commit_ts,
        _ => start_ts + 1,
    };
    TxnRecord {
        id,
        client: 1,
        start_ts,
        reads: reads
            .iter()
            .map(|&(key, saw)| KeyRead {
                key,
                saw,
                kind: ReadKind::Snapshot,
                invoke: start_ts * 1000 - 500,
            })
            .collect(),
        writes: writes.to_vec(),
        outcome,
        complete: end * 1000 + 500,
    }
}

/// The same with locking reads (`for_update_ts` unknown) at `invoke`.
fn locking(mut t: TxnRecord, invoke: u64) -> TxnRecord {
    for r in &mut t.reads {
        r.kind = ReadKind::Latest;
        r.invoke = invoke;
    }
    t
}

#[test]
fn accepts_consistent_histories() {
    let cases: Vec<(&str, Vec<TxnRecord>)> = vec![
        (
            "a read after a two-key commit sees both keys",
            vec![
                txn(1, 10, &[], &[1, 2], ACK(20)),
                txn(2, 30, &[(1, 1), (2, 1)], &[], ACK(30 + 1)),
            ],
        ),
        (
            "a snapshot below a commit sees neither key",
            vec![
                txn(1, 10, &[], &[1, 2], ACK(20)),
                txn(2, 15, &[(1, 0), (2, 0)], &[], ABORTED),
            ],
        ),
        (
            "an unknown outcome seen on both keys",
            vec![
                txn(1, 10, &[], &[1, 2], UNKNOWN),
                txn(2, 40, &[(1, 1), (2, 1)], &[], ABORTED),
            ],
        ),
        (
            "an unknown outcome never seen (it did not commit)",
            vec![
                txn(1, 10, &[], &[1, 2], UNKNOWN),
                txn(2, 40, &[(1, 0), (2, 0)], &[], ABORTED),
            ],
        ),
        (
            "an unknown outcome seen on one key, overwritten on the other after it",
            vec![
                txn(1, 10, &[], &[1, 2], UNKNOWN),
                txn(2, 25, &[], &[2], ACK(30)),
                txn(3, 40, &[(1, 1), (2, 2)], &[], ABORTED),
            ],
        ),
        (
            "read-modify-writes in a chain",
            vec![
                txn(1, 10, &[(1, 0)], &[1], ACK(20)),
                txn(2, 21, &[(1, 1)], &[1], ACK(30)),
                txn(3, 31, &[(1, 2)], &[1], UNKNOWN),
                txn(4, 50, &[(1, 3)], &[], ABORTED),
            ],
        ),
        (
            "an aborted write nobody saw",
            vec![
                txn(1, 10, &[], &[1], ABORTED),
                txn(2, 40, &[(1, 0)], &[], ABORTED),
            ],
        ),
        (
            "a locking read sees a newer version than its snapshot",
            vec![
                txn(1, 10, &[], &[1], ACK(20)),
                locking(txn(2, 15, &[(1, 1)], &[1], ACK(30)), 21_000),
                txn(3, 40, &[(1, 2)], &[], ABORTED),
            ],
        ),
        (
            "write skew is allowed",
            vec![
                txn(1, 10, &[(1, 0), (2, 0)], &[1], ACK(20)),
                txn(2, 11, &[(1, 0), (2, 0)], &[2], ACK(21)),
            ],
        ),
    ];
    for (name, h) in cases {
        if let Err(e) = check_snapshot_isolation(&h) {
            panic!("{name}: rejected: {e}");
        }
    }
}

#[test]
fn rejects_each_anomaly() {
    let cases: Vec<(&str, Vec<TxnRecord>, &str)> = vec![
        (
            "fractured read: one key of a commit below the snapshot seen, the other not",
            vec![
                txn(1, 10, &[], &[1, 2], ACK(20)),
                txn(2, 30, &[(1, 1), (2, 0)], &[], ABORTED),
            ],
            "fractured or stale",
        ),
        (
            "read from the future: a commit above the snapshot seen",
            vec![
                txn(1, 10, &[], &[1], ACK(40)),
                txn(2, 30, &[(1, 1)], &[], ABORTED),
            ],
            "from the future",
        ),
        (
            "lost write: a snapshot taken after an acknowledgement, below its commit",
            vec![txn(1, 10, &[], &[1], ACK(20)), {
                // Began (wall clock) after txn 1's acknowledgement, snapshot 15.
                let mut t = txn(2, 15, &[(1, 0)], &[], ABORTED);
                t.reads[0].invoke = 25_000;
                t
            }],
            "lost write",
        ),
        (
            "lost write: an acknowledged commit missing from a later snapshot",
            vec![
                txn(1, 10, &[], &[1], ACK(20)),
                txn(2, 100, &[(1, 0)], &[], ABORTED),
            ],
            "fractured or stale",
        ),
        (
            "lost write seen by a locking read",
            vec![
                txn(1, 10, &[], &[1], ACK(20)),
                locking(txn(2, 5, &[(1, 0)], &[], ABORTED), 30_000),
            ],
            "lost write",
        ),
        (
            "read of uncommitted: an aborted transaction's write seen",
            vec![
                txn(1, 10, &[], &[1], ABORTED),
                txn(2, 40, &[(1, 1)], &[], ABORTED),
            ],
            "aborted",
        ),
        (
            "a value nobody wrote",
            vec![txn(2, 40, &[(1, 7)], &[], ABORTED)],
            "no transaction wrote",
        ),
        (
            "a value its writer wrote to another key",
            vec![
                txn(1, 10, &[], &[2], ACK(20)),
                txn(2, 40, &[(1, 1)], &[], ABORTED),
            ],
            "another key",
        ),
        (
            "lost update: two read-modify-writes of one version both commit",
            vec![
                txn(1, 10, &[(1, 0)], &[1], ACK(20)),
                txn(2, 11, &[(1, 0)], &[1], ACK(30)),
            ],
            "lost update",
        ),
        (
            "lost update through locking reads",
            vec![
                txn(1, 10, &[], &[1], ACK(20)),
                locking(txn(2, 21, &[(1, 1)], &[1], ACK(40)), 22_000),
                locking(txn(3, 22, &[(1, 1)], &[1], ACK(30)), 23_000),
            ],
            "lost update",
        ),
        (
            "partial unknown outcome: seen on one key, not on the other, in one snapshot",
            vec![
                txn(1, 10, &[], &[1, 2], UNKNOWN),
                txn(2, 50, &[(1, 1), (2, 0)], &[], ABORTED),
            ],
            "no commit timestamp fits",
        ),
        (
            "partial unknown outcome across two snapshots",
            vec![
                txn(1, 10, &[], &[1, 2], UNKNOWN),
                txn(2, 50, &[(1, 1)], &[], ABORTED),
                txn(3, 60, &[(2, 0)], &[], ABORTED),
            ],
            "no commit timestamp fits",
        ),
        (
            "unknown outcome that lost an acknowledged update",
            vec![
                txn(1, 10, &[(1, 0)], &[1], ACK(20)),
                txn(2, 11, &[(1, 0)], &[1], UNKNOWN),
                txn(3, 50, &[(1, 2)], &[], ABORTED),
            ],
            "no commit timestamp fits",
        ),
        (
            "two unknown outcomes in an order one snapshot forbids",
            vec![
                txn(1, 1, &[], &[1, 3], UNKNOWN),
                txn(2, 2, &[], &[1, 2], UNKNOWN),
                txn(3, 28, &[], &[3], ACK(30)),
                txn(4, 33, &[], &[2], ACK(35)),
                // Sees txn 1 on key 1 and txn 2 on key 2: txn 2 must be below txn 1...
                txn(5, 50, &[(1, 1), (2, 2)], &[], ABORTED),
                // ... but txn 1 is at or below 30 (key 3 still shows txn 3 at 60) and txn 2
                // above 35 (key 2 shows it at 40, over txn 4).
                txn(6, 60, &[(3, 3)], &[], ABORTED),
                txn(7, 40, &[(2, 2)], &[], ABORTED),
            ],
            "forbidden order",
        ),
        (
            "a commit timestamp not above the start",
            vec![txn(1, 10, &[], &[1], ACK(10))],
            "not above its start_ts",
        ),
    ];
    for (name, h, want) in cases {
        match check_snapshot_isolation(&h) {
            Ok(s) => panic!("{name}: accepted ({s:?})"),
            Err(e) => assert!(e.contains(want), "{name}: wrong reason: {e}"),
        }
    }
}

/// A snapshot-isolation store simulated with one clock: transactions start, read at their
/// snapshot, and commit first-committer-wins, interleaved at random.
fn simulate(seed: u64, n: usize, keys: u64) -> Vec<TxnRecord> {
    let mut rng = SplitMix64::new(seed);
    let mut clock = 1u64;
    // key -> versions (commit_ts, writer id), ascending.
    let mut store: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    let mut open: Vec<TxnRecord> = Vec::new();
    let mut done = Vec::new();
    let mut next_id = 1;
    let visible = |store: &BTreeMap<u64, Vec<(u64, u64)>>, k: u64, ts: u64| {
        store
            .get(&k)
            .and_then(|v| v.iter().rev().find(|(c, _)| *c <= ts))
            .map_or(0, |(_, id)| *id)
    };
    while done.len() < n {
        clock += 1;
        if open.len() < 4 && rng.chance(50) {
            let start_ts = clock;
            let mut t = TxnRecord {
                id: next_id,
                client: rng.below(4),
                start_ts,
                reads: Vec::new(),
                writes: Vec::new(),
                outcome: TxnOutcome::Aborted,
                complete: 0,
            };
            next_id += 1;
            let nk = rng.range(1, 3);
            for _ in 0..nk {
                let k = rng.below(keys);
                if t.reads.iter().any(|r| r.key == k) {
                    continue;
                }
                t.reads.push(KeyRead {
                    key: k,
                    saw: visible(&store, k, start_ts),
                    kind: ReadKind::Snapshot,
                    invoke: start_ts * 10 - 5,
                });
                if rng.chance(50) {
                    t.writes.push(k);
                }
            }
            if rng.chance(30) {
                let k = rng.below(keys);
                if !t.writes.contains(&k) && !t.reads.iter().any(|r| r.key == k) {
                    t.writes.push(k);
                }
            }
            open.push(t);
        } else if !open.is_empty() {
            let mut t = open.swap_remove(rng.below(open.len() as u64) as usize);
            let commit_ts = clock;
            let conflict = t.writes.iter().any(|k| {
                store
                    .get(k)
                    .is_some_and(|v| v.iter().any(|(c, _)| *c > t.start_ts))
            });
            let committed = !t.writes.is_empty() && !conflict && rng.chance(90);
            if committed {
                for &k in &t.writes {
                    store.entry(k).or_default().push((commit_ts, t.id));
                }
            }
            t.outcome = match (committed, rng.chance(15)) {
                (_, true) if !t.writes.is_empty() => TxnOutcome::Unknown,
                (true, _) => TxnOutcome::Committed { commit_ts },
                (false, _) => TxnOutcome::Aborted,
            };
            t.complete = commit_ts * 10 + 5;
            done.push(t);
        }
    }
    // A final read of every key, after everything.
    clock += 10;
    done.push(TxnRecord {
        id: next_id,
        client: 9,
        start_ts: clock,
        reads: (0..keys)
            .map(|k| KeyRead {
                key: k,
                saw: visible(&store, k, clock),
                kind: ReadKind::Snapshot,
                invoke: clock * 10 - 5,
            })
            .collect(),
        writes: Vec::new(),
        outcome: TxnOutcome::Aborted,
        complete: clock * 10 + 5,
    });
    done
}

#[test]
fn accepts_simulated_snapshot_isolation_and_rejects_a_stale_read_in_it() {
    let mut rejected = 0;
    for seed in 0..40 {
        let h = simulate(seed, 300, 6);
        let summary = check_snapshot_isolation(&h)
            .unwrap_or_else(|e| panic!("seed {seed}: a correct history was rejected: {e}"));
        assert!(summary.unknown_committed > 0, "seed {seed}: {summary:?}");
        // Make one snapshot read return the version before the acknowledged one it saw.
        let versions = |h: &[TxnRecord], key: u64, below: u64| {
            h.iter()
                .filter(|t| t.writes.contains(&key))
                .filter_map(|t| t.commit_ts().map(|c| (c, t.id)))
                .filter(|(c, _)| *c < below)
                .max()
        };
        let mut bad = h.clone();
        let target = bad.iter().enumerate().find_map(|(i, t)| {
            t.reads.iter().enumerate().find_map(|(j, r)| {
                let seen = h.iter().find(|w| w.id == r.saw)?.commit_ts()?;
                let (_, older) = versions(&h, r.key, seen)?;
                (r.kind == ReadKind::Snapshot).then_some((i, j, older))
            })
        });
        if let Some((i, j, older)) = target {
            bad[i].reads[j].saw = older;
            assert!(
                check_snapshot_isolation(&bad).is_err(),
                "seed {seed}: a stale read was accepted"
            );
            rejected += 1;
        }
    }
    assert!(rejected > 30, "only {rejected} corrupted histories built");
}
