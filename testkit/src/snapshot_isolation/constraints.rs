//! The commit timestamps still possible for each transaction of unknown outcome that some
//! read saw ([`Var`], a union of ranges narrowed by every rule over it alone), and the rules
//! over several of them, decided once every set is final ([`Deferred`]).

use super::Checker;

/// Commit timestamps still possible for one transaction of unknown outcome: sorted,
/// disjoint, inclusive ranges.
#[derive(Debug, Clone)]
pub(super) struct TsSet(pub(super) Vec<(u64, u64)>);

impl TsSet {
    pub(super) fn keep(&mut self, lo: u64, hi: u64) {
        self.0 = self
            .0
            .iter()
            .filter_map(|&(a, b)| {
                let (a, b) = (a.max(lo), b.min(hi));
                (a <= b).then_some((a, b))
            })
            .collect();
    }

    pub(super) fn remove(&mut self, lo: u64, hi: u64) {
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

    pub(super) fn bounds(&self) -> Option<(u64, u64)> {
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
pub(super) const UNIQUE_TS: &str = "not at another commit's timestamp of the key";

/// Why a constraint was applied: the rule, the transaction whose read gave it, the key.
#[derive(Debug, Clone, Copy)]
pub(super) struct Why {
    pub(super) rule: &'static str,
    pub(super) txn: u64,
    pub(super) key: u64,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (txn {}, key {})", self.rule, self.txn, self.key)
    }
}

/// One committed transaction of unknown outcome: its feasible commit timestamps and the
/// constraints that shaped them (for the report).
#[derive(Debug)]
pub(super) struct Var {
    pub(super) set: TsSet,
    pub(super) applied: Vec<(bool, u64, u64, Why)>,
    pub(super) emptied_by: Option<usize>,
}

/// A version's commit timestamp: known, or a variable (the unknown transaction's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Term {
    At(u64),
    Var(u64),
}

/// A rule over two or more variables, decided once every set is final.
#[derive(Debug)]
pub(super) enum Deferred {
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

/// Narrows `var` to `[lo, hi]` (`keep`) or removes `[lo, hi]` from it, remembering why.
pub(super) fn apply(var: &mut Var, keep: bool, lo: u64, hi: u64, why: Why) {
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

impl Checker<'_> {
    pub(super) fn bounds(&self, t: Term) -> Option<(u64, u64)> {
        match t {
            Term::At(x) => Some((x, x)),
            Term::Var(id) => self.vars.get(&id)?.set.bounds(),
        }
    }

    pub(super) fn term_text(&self, t: Term) -> String {
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
    pub(super) fn decide(&mut self) {
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
}
