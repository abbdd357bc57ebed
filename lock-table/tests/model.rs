//! Model test: random operation sequences on several regions of one node against a simple
//! model (a `BTreeMap` per region plus counters). After every step the tables, the node
//! budget and the counters must equal the model exactly: memory accounting never drifts.

use std::collections::BTreeMap;

use proptest::prelude::*;
use surge_lock_table::{KeyRange, LockStatus, MemoryBudget, RefuseReason};

use crate::common::*;

#[derive(Debug, Clone)]
enum Op {
    Insert {
        region: usize,
        locks: Vec<(u8, u8)>,
        term_ok: bool,
        version_ok: bool,
    },
    MarkDeleted {
        region: usize,
        key: u8,
    },
    RemoveApplied {
        region: usize,
        key: u8,
        stale: bool,
    },
    BecomeFollower {
        region: usize,
    },
    BecomeLeader {
        region: usize,
    },
    StartTransfer {
        region: usize,
    },
    AbortTransfer {
        region: usize,
    },
    StartMerge {
        region: usize,
        max: u16,
    },
    AbortMerge {
        region: usize,
    },
    Split {
        key: u8,
    },
    Absorb {
        into: usize,
        from: usize,
    },
    SetNodeLimit {
        bytes: u16,
    },
    SetRegionLimit {
        bytes: u16,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let r = 0usize..8;
    prop_oneof![
        6 => (r.clone(), prop::collection::vec((0u8..40, 0u8..24), 1..5), prop::bool::weighted(0.9), prop::bool::weighted(0.9))
            .prop_map(|(region, locks, term_ok, version_ok)| Op::Insert { region, locks, term_ok, version_ok }),
        2 => (r.clone(), 0u8..40).prop_map(|(region, key)| Op::MarkDeleted { region, key }),
        3 => (r.clone(), 0u8..40, prop::bool::weighted(0.2)).prop_map(|(region, key, stale)| Op::RemoveApplied { region, key, stale }),
        1 => r.clone().prop_map(|region| Op::BecomeFollower { region }),
        2 => r.clone().prop_map(|region| Op::BecomeLeader { region }),
        1 => r.clone().prop_map(|region| Op::StartTransfer { region }),
        1 => r.clone().prop_map(|region| Op::AbortTransfer { region }),
        1 => (r.clone(), any::<u16>()).prop_map(|(region, max)| Op::StartMerge { region, max }),
        1 => r.clone().prop_map(|region| Op::AbortMerge { region }),
        2 => (1u8..40).prop_map(|key| Op::Split { key }),
        1 => (r.clone(), r).prop_map(|(into, from)| Op::Absorb { into, from }),
        1 => (200u16..4000).prop_map(|bytes| Op::SetNodeLimit { bytes }),
        1 => (100u16..2000).prop_map(|bytes| Op::SetRegionLimit { bytes }),
    ]
}

#[derive(Debug, Clone)]
struct ModelRegion {
    range: KeyRange,
    locks: BTreeMap<Vec<u8>, (usize, bool)>, // primary length, deleted
    status: LockStatus,
    term: u64,
    version: u64,
}

impl ModelRegion {
    fn bytes(&self) -> usize {
        self.locks
            .iter()
            .map(|(k, (p, _))| k.len() + p + overhead())
            .sum()
    }
}

fn key(k: u8) -> Vec<u8> {
    vec![b'k', k]
}

fn check(
    tables: &[Table],
    model: &[ModelRegion],
    budget: &MemoryBudget,
) -> Result<(), TestCaseError> {
    let mut total = 0;
    let mut count = 0;
    for (t, m) in tables.iter().zip(model) {
        prop_assert_eq!(t.memory_size(), m.bytes());
        prop_assert_eq!(t.memory_size(), recount(t));
        prop_assert_eq!(t.status(), m.status);
        prop_assert_eq!((t.term(), t.version()), (m.term, m.version));
        let got: Vec<(Vec<u8>, usize, bool)> = t
            .iter()
            .map(|(k, e)| (k.to_vec(), e.lock().primary.len(), e.is_deleted()))
            .collect();
        let want: Vec<(Vec<u8>, usize, bool)> = m
            .locks
            .iter()
            .map(|(k, (p, d))| (k.clone(), *p, *d))
            .collect();
        prop_assert_eq!(got, want);
        total += m.bytes();
        count += m.locks.len();
    }
    prop_assert_eq!(budget.used(), total);
    let c = budget.counters();
    prop_assert_eq!(c.current_bytes as usize, total);
    prop_assert_eq!(c.current_locks as usize, count);
    Ok(())
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let budget = budget_with(2000, 1000);
    let mut tables = vec![leader(&budget, 1, 1)];
    let mut model = vec![ModelRegion {
        range: KeyRange::all(),
        locks: BTreeMap::new(),
        status: LockStatus::Normal,
        term: 1,
        version: 1,
    }];
    let mut inserted = 0u64;
    let mut refused = 0u64;
    for op in ops {
        let n = tables.len();
        match op {
            Op::Insert {
                region,
                locks,
                term_ok,
                version_ok,
            } => {
                let i = region % n;
                let m = &mut model[i];
                // Keep keys inside the region so splits stay meaningful.
                let batch: Vec<(Vec<u8>, PLock)> = locks
                    .iter()
                    .map(|&(k, p)| (key(k), lock(&vec![b'p'; p as usize], 1)))
                    .filter(|(k, _)| m.range.contains(k))
                    .collect();
                if batch.is_empty() {
                    continue;
                }
                let term = if term_ok { m.term } else { m.term + 1 };
                let version = if version_ok { m.version } else { m.version + 7 };
                // Model decision.
                let mut after = m.locks.clone();
                for (k, l) in &batch {
                    after.insert(k.clone(), (l.primary.len(), false));
                }
                let new_region_bytes: usize = after
                    .iter()
                    .map(|(k, (p, _))| k.len() + p + overhead())
                    .sum();
                let old_region_bytes = m.bytes();
                let node_used = budget.used();
                let expect = if !m.status.is_writable() {
                    Some("status")
                } else if !term_ok {
                    Some("term")
                } else if !version_ok {
                    Some("version")
                } else if new_region_bytes > old_region_bytes
                    && new_region_bytes > budget.region_limit()
                {
                    Some("region")
                } else if new_region_bytes > old_region_bytes
                    && node_used + (new_region_bytes - old_region_bytes) > budget.node_limit()
                {
                    Some("node")
                } else {
                    None
                };
                let res = tables[i].try_insert(batch.clone(), term, version);
                match (expect, res) {
                    (None, Ok(report)) => {
                        prop_assert_eq!(
                            report.bytes_delta,
                            new_region_bytes as isize - old_region_bytes as isize
                        );
                        m.locks = after;
                        inserted += batch.len() as u64;
                    }
                    (Some(why), Err(r)) => {
                        let got = match r.reason {
                            RefuseReason::NotWritable { .. } => "status",
                            RefuseReason::TermMismatch { .. } => "term",
                            RefuseReason::VersionMismatch { .. } => "version",
                            RefuseReason::RegionBudgetFull { .. } => "region",
                            RefuseReason::NodeBudgetFull { .. } => "node",
                            other => {
                                return Err(TestCaseError::fail(format!("unexpected {other:?}")));
                            }
                        };
                        prop_assert_eq!(got, why);
                        prop_assert_eq!(r.batch, batch);
                        refused += 1;
                    }
                    (want, got) => {
                        return Err(TestCaseError::fail(format!(
                            "model {want:?}, table {got:?}"
                        )));
                    }
                }
            }
            Op::MarkDeleted { region, key: k } => {
                let i = region % n;
                let exists = model[i]
                    .locks
                    .get_mut(&key(k))
                    .map(|e| e.1 = true)
                    .is_some();
                prop_assert_eq!(tables[i].mark_deleted(&key(k)), exists);
            }
            Op::RemoveApplied {
                region,
                key: k,
                stale,
            } => {
                let i = region % n;
                let m = &mut model[i];
                let term = if stale {
                    m.term.wrapping_sub(1)
                } else {
                    m.term
                };
                let expect = !stale && m.locks.remove(&key(k)).is_some();
                prop_assert_eq!(tables[i].remove_applied(&key(k), term, m.version), expect);
            }
            Op::BecomeFollower { region } => {
                let i = region % n;
                let lost = tables[i].become_follower();
                prop_assert_eq!(
                    (lost.locks, lost.bytes),
                    (model[i].locks.len(), model[i].bytes())
                );
                model[i].locks.clear();
                model[i].status = LockStatus::NotLeader;
            }
            Op::BecomeLeader { region } => {
                let i = region % n;
                let m = &mut model[i];
                m.term += 1;
                m.status = LockStatus::Normal;
                tables[i].become_leader(m.term, m.version);
            }
            Op::StartTransfer { region } => {
                let i = region % n;
                let m = &mut model[i];
                let res = tables[i].start_transfer();
                match m.status {
                    LockStatus::Normal => {
                        let want: Vec<Vec<u8>> = m
                            .locks
                            .iter()
                            .filter(|(_, e)| !e.1)
                            .map(|(k, _)| k.clone())
                            .collect();
                        let got: Vec<Vec<u8>> = res
                            .expect("normal status transfers")
                            .into_iter()
                            .map(|(k, _)| k)
                            .collect();
                        prop_assert_eq!(got, want);
                        m.status = LockStatus::TransferringLeader;
                    }
                    LockStatus::NotLeader => prop_assert!(res.is_err()),
                    _ => prop_assert!(res.expect("retry transfers").is_empty()),
                }
            }
            Op::AbortTransfer { region } => {
                let i = region % n;
                let m = &mut model[i];
                let was = m.status == LockStatus::TransferringLeader;
                if was {
                    m.status = LockStatus::Normal;
                }
                prop_assert_eq!(tables[i].abort_transfer(), was);
            }
            Op::StartMerge { region, max } => {
                let i = region % n;
                let m = &mut model[i];
                let res = tables[i].start_merge(max as usize);
                if m.status == LockStatus::Normal && m.bytes() <= max as usize {
                    prop_assert_eq!(res.expect("merge allowed").len(), m.locks.len());
                    m.status = LockStatus::MergingRegion;
                } else {
                    prop_assert!(res.is_err());
                }
            }
            Op::AbortMerge { region } => {
                let i = region % n;
                let m = &mut model[i];
                let was = m.status == LockStatus::MergingRegion;
                if was {
                    m.status = LockStatus::Normal;
                }
                prop_assert_eq!(tables[i].abort_merge(), was);
            }
            Op::Split { key: k } => {
                let at = key(k);
                let Some(i) = model.iter().position(|m| m.range.contains(&at)) else {
                    continue;
                };
                if model[i].range.start() == at.as_slice() {
                    continue;
                }
                let m = &mut model[i];
                let left = KeyRange::new(m.range.start().to_vec(), at.clone());
                let right = match m.range.end() {
                    Some(end) => KeyRange::new(at.clone(), end.to_vec()),
                    None => KeyRange::from_start(at.clone()),
                };
                let new_version = m.version + 1;
                let mut new = tables[i]
                    .split(new_version, &left, std::slice::from_ref(&right))
                    .expect("valid split");
                let moved = m.locks.split_off(&at);
                let child = ModelRegion {
                    range: right,
                    locks: moved
                        .into_iter()
                        .map(|(k, (p, _))| (k, (p, false)))
                        .collect(),
                    status: m.status,
                    term: m.term,
                    version: new_version,
                };
                m.range = left;
                m.version = new_version;
                tables.push(new.remove(0));
                model.push(child);
            }
            Op::Absorb { into, from } => {
                // A merge of two adjacent regions: `from` (source) into `into` (target).
                let (a, b) = (into % n, from % n);
                if a == b {
                    continue;
                }
                let (ra, rb) = (model[a].range.clone(), model[b].range.clone());
                let merged = if ra.end() == Some(rb.start()) {
                    match rb.end() {
                        Some(end) => KeyRange::new(ra.start().to_vec(), end.to_vec()),
                        None => KeyRange::from_start(ra.start().to_vec()),
                    }
                } else if rb.end() == Some(ra.start()) {
                    match ra.end() {
                        Some(end) => KeyRange::new(rb.start().to_vec(), end.to_vec()),
                        None => KeyRange::from_start(rb.start().to_vec()),
                    }
                } else {
                    continue;
                };
                let mut source = tables.remove(b);
                let source_model = model.remove(b);
                let a = if b < a { a - 1 } else { a };
                let moved = tables[a].absorb(&mut source).expect("same budget");
                prop_assert_eq!(moved, source_model.locks.len());
                prop_assert!(source.is_empty());
                prop_assert_eq!(source.memory_size(), 0);
                drop(source);
                for (k, (p, _)) in source_model.locks {
                    model[a].locks.insert(k, (p, false));
                }
                model[a].range = merged;
            }
            Op::SetNodeLimit { bytes } => budget.set_node_limit(bytes as usize),
            Op::SetRegionLimit { bytes } => budget.set_region_limit(bytes as usize),
        }
        check(&tables, &model, &budget)?;
        let c = budget.counters();
        prop_assert_eq!(c.inserted, inserted);
        prop_assert_eq!(c.refused_total(), refused);
    }
    drop(tables);
    prop_assert_eq!(budget.used(), 0);
    prop_assert_eq!(budget.counters().current_locks, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn random_operations_match_the_model(ops in prop::collection::vec(op(), 1..120)) {
        run(ops)?;
    }
}
