//! A snapshot-isolation checker for multi-key transactions whose store reports timestamps
//! (Percolator: a `start_ts` per transaction, a `commit_ts` per acknowledged commit).
//!
//! The store claims one order: commit timestamps. A snapshot read at `start_ts = S` must
//! return, on every key, the newest version committed at or below `S`. So a history is
//! consistent with snapshot isolation if some commit timestamp can be given to every
//! transaction whose outcome is unknown, and every such transaction either committed (all
//! of it) or did not (none of it), such that:
//! - every value read comes from a transaction that committed (never an aborted one: G1a;
//!   never a value nobody wrote);
//! - every snapshot read returns, for each key, the newest commit at or below its
//!   `start_ts`, so the set of transactions a read sees is closed under the commit order:
//!   it never sees half a transaction (a fractured read), never a version above its
//!   snapshot, never misses one below it;
//! - a transaction that read a key and wrote it replaced the version it read: no other
//!   commit falls between the two (no lost update, SI's first-committer-wins);
//! - a read that began after a commit was acknowledged sees that commit or a newer one (no
//!   acknowledged write is lost, and no snapshot is taken below an acknowledged commit).
//!
//! Acknowledged commits have known timestamps, so every rule about them alone is a direct
//! check. A transaction of unknown outcome is taken as committed exactly when some read
//! returned its value (taking an unread one as not committed removes constraints and never
//! adds any, so it cannot hide a violation), and its commit timestamp becomes a variable
//! whose feasible set (a union of ranges) each rule with one variable narrows exactly. An
//! empty set is a violation. Rules relating two variables are decided afterwards, from the
//! sets: one is reported only when no choice in the sets satisfies it. So every violation
//! reported is real; a rare one needing a joint choice of several unknown timestamps may be
//! missed.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::txn_history::{KeyRead, ReadKind, TxnOutcome, TxnRecord};

mod constraints;
mod rules;

use constraints::{Deferred, Term, TsSet, UNIQUE_TS, Var, Why, apply};

/// What a history held, for the test's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SiSummary {
    /// Transactions in the history.
    pub transactions: usize,
    /// Acknowledged commits.
    pub acknowledged: usize,
    /// Unknown outcomes some read saw (so committed).
    pub unknown_committed: usize,
    /// Unknown outcomes nobody saw (taken as not committed).
    pub unknown_unseen: usize,
    /// Definite failures.
    pub aborted: usize,
    /// Key reads checked.
    pub reads: usize,
}

/// Checks a history (see the module docs). `Err` lists the violations found (at most 20),
/// each naming the transactions, keys and timestamps involved.
///
/// # Errors
/// When the history is not consistent with snapshot isolation, or is malformed (an id used
/// twice or 0, a key written twice by one transaction, a writer's commit timestamp not above
/// its `start_ts`, two acknowledged commits of one key at one timestamp).
pub fn check_snapshot_isolation(txns: &[TxnRecord]) -> Result<SiSummary, String> {
    let mut c = Checker::new(txns);
    c.index();
    if c.violations.is_empty() {
        c.mark_seen_unknowns();
        for t in txns {
            for r in &t.reads {
                c.check_read(t, r);
            }
        }
        c.decide();
    }
    if c.violations.is_empty() {
        return Ok(c.summary());
    }
    let n = c.violations.len();
    c.violations.truncate(20);
    Err(format!(
        "{n} snapshot-isolation violation(s):\n- {}",
        c.violations.join("\n- ")
    ))
}

struct Checker<'a> {
    txns: &'a [TxnRecord],
    by_id: HashMap<u64, &'a TxnRecord>,
    /// Per key: acknowledged commits as (commit_ts, id), by commit_ts.
    acked: HashMap<u64, Vec<(u64, u64)>>,
    /// Per key: acknowledged commits by acknowledgement time, with the newest version
    /// acknowledged so far: (complete, max commit_ts so far, its id).
    by_ack: HashMap<u64, Vec<(u64, u64, u64)>>,
    vars: BTreeMap<u64, Var>,
    /// Per key: the committed unknown-outcome transactions that wrote it.
    unknown_writers: HashMap<u64, Vec<u64>>,
    deferred: Vec<Deferred>,
    violations: Vec<String>,
    reads: usize,
}

impl<'a> Checker<'a> {
    fn new(txns: &'a [TxnRecord]) -> Checker<'a> {
        Checker {
            txns,
            by_id: HashMap::new(),
            acked: HashMap::new(),
            by_ack: HashMap::new(),
            vars: BTreeMap::new(),
            unknown_writers: HashMap::new(),
            deferred: Vec::new(),
            violations: Vec::new(),
            reads: 0,
        }
    }

    fn index(&mut self) {
        for t in self.txns {
            if t.id == 0 || self.by_id.insert(t.id, t).is_some() {
                self.violations
                    .push(format!("malformed: txn id {} is 0 or used twice", t.id));
            }
            let keys: HashSet<u64> = t.writes.iter().copied().collect();
            if keys.len() != t.writes.len() {
                self.violations.push(format!(
                    "malformed: txn {} writes a key twice: {:?}",
                    t.id, t.writes
                ));
            }
            if let Some(ts) = t.commit_ts() {
                if ts <= t.start_ts && !t.writes.is_empty() {
                    self.violations.push(format!(
                        "txn {} (client {}) committed at {ts}, not above its start_ts {}",
                        t.id, t.client, t.start_ts
                    ));
                }
                for &k in &t.writes {
                    self.acked.entry(k).or_default().push((ts, t.id));
                    self.by_ack
                        .entry(k)
                        .or_default()
                        .push((t.complete, ts, t.id));
                }
            }
        }
        for (k, list) in &mut self.acked {
            list.sort_unstable();
            for w in list.windows(2) {
                if w[0].0 == w[1].0 {
                    self.violations.push(format!(
                        "txns {} and {} both committed key {k} at {}",
                        w[0].1, w[1].1, w[0].0
                    ));
                }
            }
        }
        for list in self.by_ack.values_mut() {
            list.sort_unstable();
            let mut best = (0, 0);
            for e in list.iter_mut() {
                if e.1 > best.0 {
                    best = (e.1, e.2);
                }
                (e.1, e.2) = best;
            }
        }
    }

    /// Unknown outcomes that some read saw committed; each gets a variable.
    fn mark_seen_unknowns(&mut self) {
        let mut seen = HashSet::new();
        for t in self.txns {
            for r in &t.reads {
                if let Some(w) = self.by_id.get(&r.saw)
                    && w.outcome == TxnOutcome::Unknown
                {
                    seen.insert(w.id);
                }
            }
        }
        for id in seen {
            let w = self.by_id[&id];
            let mut var = Var {
                set: TsSet(vec![(0, u64::MAX)]),
                applied: Vec::new(),
                emptied_by: None,
            };
            let why = |rule| Why {
                rule,
                txn: id,
                key: 0,
            };
            apply(
                &mut var,
                true,
                w.start_ts.saturating_add(1),
                u64::MAX,
                why("above its start_ts"),
            );
            for &k in &w.writes {
                self.unknown_writers.entry(k).or_default().push(id);
                for &(ts, _) in self.acked.get(&k).map_or(&[][..], Vec::as_slice) {
                    let why = Why {
                        rule: UNIQUE_TS,
                        txn: id,
                        key: k,
                    };
                    apply(&mut var, false, ts, ts, why);
                }
            }
            self.vars.insert(id, var);
        }
    }

    fn term_of(&self, id: u64) -> Option<Term> {
        if id == 0 {
            return Some(Term::At(0));
        }
        let t = self.by_id.get(&id)?;
        match t.outcome {
            TxnOutcome::Committed { commit_ts } => Some(Term::At(commit_ts)),
            TxnOutcome::Unknown if self.vars.contains_key(&id) => Some(Term::Var(id)),
            TxnOutcome::Unknown | TxnOutcome::Aborted => None,
        }
    }

    fn describe(&self, id: u64) -> String {
        match self.by_id.get(&id) {
            None if id == 0 => "the initial state".into(),
            None => format!("txn {id} (not in the history)"),
            Some(t) => {
                let outcome = match t.outcome {
                    TxnOutcome::Committed { commit_ts } => format!("committed at {commit_ts}"),
                    TxnOutcome::Unknown => "outcome unknown".into(),
                    TxnOutcome::Aborted => "aborted".into(),
                };
                format!(
                    "txn {id} (client {}, start_ts {}, {outcome}, writes {:?})",
                    t.client, t.start_ts, t.writes
                )
            }
        }
    }

    /// The version a read returned, or `None` (and a violation) when it cannot have.
    fn version_read(&mut self, reader: &TxnRecord, r: &KeyRead) -> Option<Term> {
        let fail = |c: &mut Self, what: &str| {
            let msg = format!(
                "{} read key {} ({:?}) and {what}: it returned {}",
                c.describe(reader.id),
                r.key,
                r.kind,
                c.describe(r.saw)
            );
            c.violations.push(msg);
            None
        };
        if r.saw == 0 {
            return Some(Term::At(0));
        }
        let Some(w) = self.by_id.get(&r.saw).copied() else {
            return fail(self, "saw a value no transaction wrote");
        };
        if !w.writes.contains(&r.key) {
            return fail(self, "saw a value its writer wrote to another key");
        }
        if w.id == reader.id {
            return fail(self, "saw its own write in the store");
        }
        if w.outcome == TxnOutcome::Aborted {
            return fail(self, "saw a write of an aborted transaction (G1a)");
        }
        self.term_of(r.saw)
    }

    fn check_read(&mut self, reader: &TxnRecord, r: &KeyRead) {
        self.reads += 1;
        let Some(ver) = self.version_read(reader, r) else {
            return;
        };
        if r.kind == ReadKind::Snapshot {
            self.snapshot_rule(reader, r, ver);
        }
        self.real_time_rule(reader, r, ver);
        if reader.writes.contains(&r.key)
            && let Some(own) = self.term_of(reader.id)
        {
            self.replaced_rule(reader, r, ver, own);
        }
    }

    /// The newest acknowledged commit of `key` at or below `ts`.
    fn acked_at_or_below(&self, key: u64, ts: u64) -> Option<(u64, u64)> {
        let list = self.acked.get(&key)?;
        let i = list.partition_point(|&(t, _)| t <= ts);
        i.checked_sub(1).map(|i| list[i])
    }

    fn others(&self, key: u64, not: &[u64]) -> Vec<u64> {
        self.unknown_writers
            .get(&key)
            .map(|v| v.iter().copied().filter(|u| !not.contains(u)).collect())
            .unwrap_or_default()
    }

    fn constrain(&mut self, id: u64, keep: bool, lo: u64, hi: u64, why: Why) {
        if let Some(var) = self.vars.get_mut(&id) {
            apply(var, keep, lo, hi, why);
        }
    }

    fn summary(&self) -> SiSummary {
        let count = |f: &dyn Fn(&TxnRecord) -> bool| self.txns.iter().filter(|t| f(t)).count();
        SiSummary {
            transactions: self.txns.len(),
            acknowledged: count(&|t| t.commit_ts().is_some()),
            unknown_committed: self.vars.len(),
            unknown_unseen: count(&|t| t.outcome == TxnOutcome::Unknown) - self.vars.len(),
            aborted: count(&|t| t.outcome == TxnOutcome::Aborted),
            reads: self.reads,
        }
    }
}
