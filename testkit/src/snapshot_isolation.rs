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

/// Commit timestamps still possible for one transaction of unknown outcome: sorted,
/// disjoint, inclusive ranges.
#[derive(Debug, Clone)]
struct TsSet(Vec<(u64, u64)>);

impl TsSet {
    fn keep(&mut self, lo: u64, hi: u64) {
        self.0 = self
            .0
            .iter()
            .filter_map(|&(a, b)| {
                let (a, b) = (a.max(lo), b.min(hi));
                (a <= b).then_some((a, b))
            })
            .collect();
    }

    fn remove(&mut self, lo: u64, hi: u64) {
        if lo > hi {
            return;
        }
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for &(a, b) in &self.0 {
            if b < lo || a > hi {
                out.push((a, b));
                continue;
            }
            if a < lo {
                out.push((a, lo - 1));
            }
            if b > hi {
                out.push((hi + 1, b));
            }
        }
        self.0 = out;
    }

    fn bounds(&self) -> Option<(u64, u64)> {
        Some((self.0.first()?.0, self.0.last()?.1))
    }
}

impl std::fmt::Display for TsSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, b)| match (a, b) {
                (a, b) if a == b => a.to_string(),
                (a, &u64::MAX) => format!("{a}.."),
                (a, b) => format!("{a}..={b}"),
            })
            .collect();
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// The rule that keeps a commit timestamp off the key's other commits (one constraint per
/// commit: left out of reports unless it is the one that emptied a set).
const UNIQUE_TS: &str = "not at another commit's timestamp of the key";

/// Why a constraint was applied: the rule, the transaction whose read gave it, the key.
#[derive(Debug, Clone, Copy)]
struct Why {
    rule: &'static str,
    txn: u64,
    key: u64,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (txn {}, key {})", self.rule, self.txn, self.key)
    }
}

/// One committed transaction of unknown outcome: its feasible commit timestamps and the
/// constraints that shaped them (for the report).
#[derive(Debug)]
struct Var {
    set: TsSet,
    applied: Vec<(bool, u64, u64, Why)>,
    emptied_by: Option<usize>,
}

/// A version's commit timestamp: known, or a variable (the unknown transaction's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Term {
    At(u64),
    Var(u64),
}

/// A rule over two or more variables, decided once every set is final.
#[derive(Debug)]
enum Deferred {
    /// Violated when `terms[0] < terms[1] (<= or <) terms[2] ...` holds for every choice
    /// (`strict[i]` links `terms[i]` and `terms[i + 1]`).
    Chain {
        terms: Vec<Term>,
        strict: Vec<bool>,
        why: Why,
    },
    /// Violated when no choice gives `a < b`.
    Before { a: Term, b: Term, why: Why },
    /// Violated when, for every choice, an acknowledged commit of `key` lies strictly
    /// between `a` and `b`.
    AckedBetween {
        key: u64,
        a: Term,
        b: Term,
        why: Why,
    },
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

    /// A snapshot read at `S` returns the newest commit at or below `S`.
    fn snapshot_rule(&mut self, reader: &TxnRecord, r: &KeyRead, ver: Term) {
        let s = reader.start_ts;
        let newest = self.acked_at_or_below(r.key, s);
        let why = |rule| Why {
            rule,
            txn: reader.id,
            key: r.key,
        };
        match ver {
            Term::At(t) => {
                if r.saw != 0 && t > s {
                    let msg = format!(
                        "{} read key {} at its snapshot and saw {}, committed above the \
                         snapshot (a read from the future)",
                        self.describe(reader.id),
                        r.key,
                        self.describe(r.saw)
                    );
                    self.violations.push(msg);
                    return;
                }
                if let Some((nt, nid)) = newest
                    && nid != r.saw
                {
                    let msg = format!(
                        "{} read key {} at its snapshot and saw {}, but {} committed the key \
                         at {nt}, at or below the snapshot and above what it saw (a \
                         fractured or stale read)",
                        self.describe(reader.id),
                        r.key,
                        self.describe(r.saw),
                        self.describe(nid)
                    );
                    self.violations.push(msg);
                    return;
                }
                for u in self.others(r.key, &[r.saw, reader.id]) {
                    let w =
                        why("a snapshot read saw an older version, so not in (older, snapshot]");
                    self.constrain(u, false, t.saturating_add(1), s, w);
                }
            }
            Term::Var(u0) => {
                let lo = newest.map_or(0, |(t, _)| t).saturating_add(1);
                self.constrain(
                    u0,
                    true,
                    lo,
                    s,
                    why("a snapshot read saw it, so in (newest acknowledged below, snapshot]"),
                );
                for u in self.others(r.key, &[u0, reader.id]) {
                    self.deferred.push(Deferred::Chain {
                        terms: vec![Term::Var(u0), Term::Var(u), Term::At(s)],
                        strict: vec![true, false],
                        why: why("a snapshot read saw a version older than this one"),
                    });
                }
            }
        }
    }

    /// A read that began after a commit was acknowledged sees it or a newer version.
    fn real_time_rule(&mut self, reader: &TxnRecord, r: &KeyRead, ver: Term) {
        let Some(list) = self.by_ack.get(&r.key) else {
            return;
        };
        let i = list.partition_point(|&(c, _, _)| c < r.invoke);
        let Some(&(acked_at, mts, mid)) = i.checked_sub(1).map(|i| &list[i]) else {
            return;
        };
        if mid == reader.id {
            return;
        }
        match ver {
            Term::At(t) if t < mts => {
                let msg = format!(
                    "{} began reading key {} at {} us, after {} was acknowledged (by {} us), \
                     yet saw an older version, of {} (a lost write or a snapshot below an \
                     acknowledged commit)",
                    self.describe(reader.id),
                    r.key,
                    r.invoke / 1000,
                    self.describe(mid),
                    acked_at / 1000,
                    self.describe(r.saw)
                );
                self.violations.push(msg);
            }
            Term::At(_) => {}
            Term::Var(u) => {
                let why = Why {
                    rule: "a read that began after an acknowledged commit saw it, so above that commit",
                    txn: reader.id,
                    key: r.key,
                };
                self.constrain(u, true, mts.saturating_add(1), u64::MAX, why);
            }
        }
    }

    /// A committed transaction that read `key` and wrote it replaced the version it read.
    fn replaced_rule(&mut self, reader: &TxnRecord, r: &KeyRead, read: Term, own: Term) {
        let why = |rule| Why {
            rule,
            txn: reader.id,
            key: r.key,
        };
        let acked = self.acked.get(&r.key).cloned().unwrap_or_default();
        let others = self.others(r.key, &[r.saw, reader.id]);
        match (read, own) {
            (Term::At(p), Term::At(c)) => {
                if p >= c {
                    let msg = format!(
                        "{} read key {} and wrote it, committing below the version it read ({})",
                        self.describe(reader.id),
                        r.key,
                        self.describe(r.saw)
                    );
                    self.violations.push(msg);
                    return;
                }
                let i = acked.partition_point(|&(t, _)| t <= p);
                if let Some(&(t, id)) = acked.get(i).filter(|&&(t, _)| t < c) {
                    let msg = format!(
                        "{} read key {} as {} and wrote it, but {} committed the key at {t}, \
                         in between (a lost update)",
                        self.describe(reader.id),
                        r.key,
                        self.describe(r.saw),
                        self.describe(id)
                    );
                    self.violations.push(msg);
                    return;
                }
                for u in others {
                    let w = why("not between the read and the write of a read-modify-write");
                    self.constrain(u, false, p.saturating_add(1), c.saturating_sub(1), w);
                }
            }
            (Term::At(p), Term::Var(me)) => {
                let i = acked.partition_point(|&(t, _)| t <= p);
                let hi = acked.get(i).map_or(u64::MAX, |&(t, _)| t.saturating_sub(1));
                let w = why(
                    "replaced the version it read, so between it and the next acknowledged commit",
                );
                self.constrain(me, true, p.saturating_add(1), hi, w);
                for u in others {
                    self.deferred.push(Deferred::Chain {
                        terms: vec![Term::At(p), Term::Var(u), Term::Var(me)],
                        strict: vec![true, true],
                        why: why("a commit between the read and the write of a read-modify-write"),
                    });
                }
            }
            (Term::Var(p), Term::At(c)) => {
                let i = acked.partition_point(|&(t, _)| t < c);
                let lo = i.checked_sub(1).map_or(0, |i| acked[i].0).saturating_add(1);
                let w = why("read and replaced by an acknowledged commit, so just below it");
                self.constrain(p, true, lo, c.saturating_sub(1), w);
                for u in others {
                    self.deferred.push(Deferred::Chain {
                        terms: vec![Term::Var(p), Term::Var(u), Term::At(c)],
                        strict: vec![true, true],
                        why: why("a commit between the read and the write of a read-modify-write"),
                    });
                }
            }
            (Term::Var(p), Term::Var(me)) => {
                let w = why("a read-modify-write's own commit above the version it read");
                self.deferred.push(Deferred::Before {
                    a: Term::Var(p),
                    b: Term::Var(me),
                    why: w,
                });
                let w = why(
                    "an acknowledged commit between the read and the write of a read-modify-write",
                );
                self.deferred.push(Deferred::AckedBetween {
                    key: r.key,
                    a: Term::Var(p),
                    b: Term::Var(me),
                    why: w,
                });
                for u in others {
                    self.deferred.push(Deferred::Chain {
                        terms: vec![Term::Var(p), Term::Var(u), Term::Var(me)],
                        strict: vec![true, true],
                        why: why("a commit between the read and the write of a read-modify-write"),
                    });
                }
            }
        }
    }

    fn bounds(&self, t: Term) -> Option<(u64, u64)> {
        match t {
            Term::At(x) => Some((x, x)),
            Term::Var(id) => self.vars.get(&id)?.set.bounds(),
        }
    }

    fn term_text(&self, t: Term) -> String {
        match t {
            Term::At(x) => x.to_string(),
            Term::Var(id) => format!(
                "commit_ts of txn {id} in {}",
                self.vars
                    .get(&id)
                    .map_or(String::new(), |v| v.set.to_string())
            ),
        }
    }

    /// Reports every empty set, then every rule over several variables that no choice
    /// satisfies.
    fn decide(&mut self) {
        let mut empty = false;
        for (id, var) in &self.vars {
            if !var.set.0.is_empty() {
                continue;
            }
            empty = true;
            // The ranges kept bound the set; of the ranges removed, those inside the bounds
            // (and the one that emptied it) explain the rest.
            let (lo, hi) = var
                .applied
                .iter()
                .filter(|a| a.0)
                .fold((0, u64::MAX), |(lo, hi), a| (lo.max(a.1), hi.min(a.2)));
            let lines: Vec<String> = var
                .applied
                .iter()
                .enumerate()
                .filter(|(i, (keep, a, b, why))| {
                    Some(*i) == var.emptied_by
                        || *keep
                        || (why.rule != UNIQUE_TS && *a <= hi && *b >= lo)
                })
                .take(24)
                .map(|(i, (keep, lo, hi, why))| {
                    let mark = if Some(i) == var.emptied_by {
                        " <- empties it"
                    } else {
                        ""
                    };
                    let op = if *keep { "in" } else { "not in" };
                    format!("    {op} [{lo}, {hi}]: {why}{mark}")
                })
                .collect();
            self.violations.push(format!(
                "{} was seen committed by a read, but no commit timestamp fits every read \
                 (a partial transaction or a lost update); constraints:\n{}",
                self.describe(*id),
                lines.join("\n")
            ));
        }
        if empty {
            return;
        }
        let deferred = std::mem::take(&mut self.deferred);
        for d in &deferred {
            let msg = match d {
                Deferred::Chain { terms, strict, why } => {
                    let holds = terms.windows(2).zip(strict).all(|(pair, &lt)| {
                        match (self.bounds(pair[0]), self.bounds(pair[1])) {
                            (Some((_, a_hi)), Some((b_lo, _))) if lt => a_hi < b_lo,
                            (Some((_, a_hi)), Some((b_lo, _))) => a_hi <= b_lo,
                            _ => false,
                        }
                    });
                    holds.then(|| {
                        let parts: Vec<String> = terms.iter().map(|t| self.term_text(*t)).collect();
                        format!(
                            "forbidden order holds for every choice: {}: {why}",
                            parts.join(" < ")
                        )
                    })
                }
                Deferred::Before { a, b, why } => match (self.bounds(*a), self.bounds(*b)) {
                    (Some((a_lo, _)), Some((_, b_hi))) if a_lo >= b_hi => Some(format!(
                        "no choice puts {} below {}: {why}",
                        self.term_text(*a),
                        self.term_text(*b)
                    )),
                    _ => None,
                },
                Deferred::AckedBetween { key, a, b, why } => {
                    match (self.bounds(*a), self.bounds(*b)) {
                        (Some((_, a_hi)), Some((b_lo, _))) => self
                            .acked
                            .get(key)
                            .and_then(|l| l.iter().find(|&&(t, _)| a_hi < t && t < b_lo))
                            .map(|&(t, id)| {
                                format!(
                                    "{} committed key {key} at {t}, between {} and {}: {why}",
                                    self.describe(id),
                                    self.term_text(*a),
                                    self.term_text(*b)
                                )
                            }),
                        _ => None,
                    }
                }
            };
            if let Some(m) = msg {
                self.violations.push(m);
            }
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

/// Narrows `var` to `[lo, hi]` (`keep`) or removes `[lo, hi]` from it, remembering why.
fn apply(var: &mut Var, keep: bool, lo: u64, hi: u64, why: Why) {
    let was_empty = var.set.0.is_empty();
    if keep {
        var.set.keep(lo, hi);
    } else {
        var.set.remove(lo, hi);
    }
    var.applied.push((keep, lo, hi, why));
    if !was_empty && var.set.0.is_empty() {
        var.emptied_by = Some(var.applied.len() - 1);
    }
}
