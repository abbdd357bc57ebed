//! Byte-driven operation interpreter used by both the `ops` fuzz target (`fuzz/`) and the
//! `random_bytes_keep_invariants` proptest. Any byte string is a valid program: it drives
//! several regions of one node through inserts (oversized keys included), marks, removals,
//! leadership changes, transfers, merges, splits, absorbs and limit changes, and after every
//! step asserts the accounting invariants. Any panic is a bug.

use surge_lock_table::{BudgetConfig, KeyRange, LockValue, MemoryBudget, RegionLockTable};

/// A lock whose heap size is its primary key's length.
#[derive(Debug, Clone)]
pub struct FuzzLock(Vec<u8>);

impl LockValue for FuzzLock {
    fn heap_size(&self) -> usize {
        self.0.len()
    }
}

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
}

/// A key of 1..=12 bytes (over the 10-byte maximum sometimes) starting with `first`.
fn key(len: u8, first: u8) -> Vec<u8> {
    let mut k = vec![len; 1 + (len % 12) as usize];
    k[0] = first;
    k
}

/// What a program did, so tests can check that programs reach every operation.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Successful inserts.
    pub inserted: usize,
    /// Refused inserts.
    pub refused: usize,
    /// Splits done.
    pub splits: usize,
    /// Merges (absorbs) done.
    pub merges: usize,
}

/// Runs the program in `data`, panicking if an invariant breaks.
pub fn run(data: &[u8]) -> Stats {
    let mut stats = Stats::default();
    let budget = MemoryBudget::new(
        BudgetConfig::default()
            .with_node_limit(4096)
            .with_region_limit(1024)
            .with_max_key_size(10),
    );
    let mut regions: Vec<(KeyRange, RegionLockTable<FuzzLock>)> = Vec::new();
    let mut root = RegionLockTable::new(&budget);
    root.become_leader(1, 1);
    regions.push((KeyRange::all(), root));
    let mut input = Bytes(data);
    let mut limit_lowered = false;
    while let Some(op) = input.next() {
        let n = regions.len();
        let r = input.next().unwrap_or(0) as usize % n;
        let a = input.next().unwrap_or(0);
        let b = input.next().unwrap_or(0);
        let (range, table) = &mut regions[r];
        let (term, version) = (table.term(), table.version());
        match op % 12 {
            0 | 1 => {
                let batch: Vec<(Vec<u8>, FuzzLock)> = (0..=(a % 4))
                    .map(|i| {
                        (
                            key(b, b.wrapping_add(i * 37)),
                            FuzzLock(vec![0; (a >> 2) as usize]),
                        )
                    })
                    .filter(|(k, _)| range.contains(k))
                    .collect();
                let len = batch.len();
                let before = table.memory_size();
                match table.try_insert(batch, term, version) {
                    Ok(report) => {
                        assert_eq!(report.locks, len);
                        assert_eq!(
                            table.memory_size() as isize - before as isize,
                            report.bytes_delta
                        );
                        stats.inserted += 1;
                    }
                    Err(refused) => {
                        assert_eq!(refused.batch.len(), len);
                        assert_eq!(table.memory_size(), before);
                        stats.refused += 1;
                    }
                }
            }
            2 => {
                table.mark_deleted(&key(a, b));
            }
            3 => {
                let stale = a % 5 == 0;
                table.remove_applied(&key(a, b), term + u64::from(stale), version);
            }
            4 => {
                let lost = table.become_follower();
                assert!(table.is_empty());
                assert!(lost.bytes >= lost.locks * RegionLockTable::<FuzzLock>::ENTRY_OVERHEAD);
            }
            5 => table.become_leader(term + 1, version),
            6 => {
                if a % 2 == 0 {
                    let _ = table.start_transfer();
                } else {
                    table.abort_transfer();
                }
            }
            7 => {
                if a % 2 == 0 {
                    let _ = table.start_merge(b as usize * 16);
                } else {
                    table.abort_merge();
                }
            }
            8 => {
                let at = key(a, b);
                if range.contains(&at) && range.start() != at.as_slice() {
                    let left = KeyRange::new(range.start().to_vec(), at.clone());
                    let right = match range.end() {
                        Some(end) => KeyRange::new(at.clone(), end.to_vec()),
                        None => KeyRange::from_start(at.clone()),
                    };
                    let mut new = table
                        .split(version + 1, &left, std::slice::from_ref(&right))
                        .expect("ranges cover the region");
                    *range = left;
                    regions.push((right, new.remove(0)));
                    stats.splits += 1;
                }
            }
            9 => {
                // Merge the region right of `r` into `r`.
                let end = range.end().map(<[u8]>::to_vec);
                if let Some(end) = end
                    && let Some(s) = regions
                        .iter()
                        .position(|(x, _)| x.start() == end.as_slice())
                {
                    let (src_range, mut src) = regions.remove(s);
                    let t = if s < r { r - 1 } else { r };
                    let (range, table) = &mut regions[t];
                    table.absorb(&mut src).expect("same budget");
                    assert!(src.is_empty());
                    stats.merges += 1;
                    *range = match src_range.end() {
                        Some(e) => KeyRange::new(range.start().to_vec(), e.to_vec()),
                        None => KeyRange::from_start(range.start().to_vec()),
                    };
                }
            }
            10 => {
                let limit = 512 + a as usize * 32;
                limit_lowered |= limit < budget.used();
                budget.set_node_limit(limit);
            }
            _ => budget.set_region_limit(256 + b as usize * 8),
        }
        // Invariants.
        let mut total = 0;
        let mut locks = 0;
        for (range, table) in &regions {
            let recount: usize = table.iter().map(|(_, e)| e.charged_bytes()).sum();
            assert_eq!(table.memory_size(), recount);
            for (k, _) in table.iter() {
                assert!(range.contains(k), "lock outside its region");
                assert!(k.len() <= 10, "oversized key stored");
            }
            total += recount;
            locks += table.len();
        }
        assert_eq!(budget.used(), total);
        assert_eq!(budget.counters().current_locks as usize, locks);
        if budget.used() <= budget.node_limit() {
            limit_lowered = false;
        }
        assert!(limit_lowered || budget.used() <= budget.node_limit());
    }
    drop(regions);
    assert_eq!(budget.used(), 0);
    stats
}
