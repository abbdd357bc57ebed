//! The rules each read gives: what a snapshot read may return, what a read begun after an
//! acknowledgement must see, and what a read-modify-write replaced.

use super::{Checker, Deferred, KeyRead, Term, TxnRecord, Why};

impl Checker<'_> {
    /// A snapshot read at `S` returns the newest commit at or below `S`.
    pub(super) fn snapshot_rule(&mut self, reader: &TxnRecord, r: &KeyRead, ver: Term) {
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
    pub(super) fn real_time_rule(&mut self, reader: &TxnRecord, r: &KeyRead, ver: Term) {
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
    pub(super) fn replaced_rule(&mut self, reader: &TxnRecord, r: &KeyRead, read: Term, own: Term) {
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
}
