//! The invariants checked after every simulated step (Raft §5.2 election safety, §5.3 log
//! matching, §5.4 leader completeness and state machine safety; openraft tests-turmoil's
//! monotonicity and ordering checks).

use std::collections::HashMap;

use bytes::Bytes;
use surge_raft_lite::Role;

use super::Sim;

impl Sim {
    pub(super) fn check(&mut self) -> Result<(), String> {
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        for (&id, n) in self.nodes.iter_mut() {
            let Some(r) = n.raw.as_ref() else { continue };
            // Election safety.
            if r.role() == Role::Leader {
                let l = *self.leaders.entry(r.term()).or_insert(id);
                if l != id {
                    return Err(format!("two leaders in term {}: {l} and {id}", r.term()));
                }
            }
            // Monotonic within a life; ordering of indexes.
            if r.term() < n.last_term
                || r.committed() < n.last_commit
                || r.applied() < n.last_applied
            {
                return Err(format!("node {id}: term/commit/applied went back"));
            }
            n.last_term = r.term();
            n.last_commit = r.committed();
            n.last_applied = r.applied();
            if !(r.snapshot_index() <= r.applied()
                && r.applied() <= r.committed()
                && r.committed() <= r.last_index())
            {
                return Err(format!(
                    "node {id}: snapshot <= applied <= committed <= last broken"
                ));
            }
            // Committed entries are immutable and the same everywhere.
            let from = n.checked_commit.max(r.snapshot_index()) + 1;
            for i in from..=r.committed() {
                let e = r
                    .entry(i)
                    .ok_or(format!("node {id}: committed {i} missing"))?;
                match self.committed.get(&i) {
                    Some((t, d, _)) if *t != e.term || *d != e.data => {
                        return Err(format!(
                            "node {id}: committed entry {i} differs (term {t} vs {})",
                            e.term
                        ));
                    }
                    None => {
                        self.committed.insert(i, (e.term, e.data.clone(), r.term()));
                    }
                    _ => {}
                }
            }
            n.checked_commit = n.checked_commit.max(r.committed());
        }
        // Leader completeness: a leader of a later term than the one in which an entry was
        // known committed holds it (above its snapshot).
        // Log matching: same (index, term) implies the same entry and the same previous term.
        let mut seen: HashMap<(u64, u64), (Bytes, Option<u64>)> = HashMap::new();
        for (&id, n) in &self.nodes {
            let Some(r) = n.raw.as_ref() else { continue };
            if r.role() == Role::Leader {
                for (&i, (t, _, seen_in)) in &self.committed {
                    if r.term() > *seen_in && i > r.snapshot_index() && r.term_at(i) != Some(*t) {
                        return Err(format!(
                            "leader {id} (term {}) lacks committed entry {i}",
                            r.term()
                        ));
                    }
                }
            }
            for i in r.snapshot_index() + 1..=r.last_index() {
                let e = r.entry(i).unwrap();
                let prev = if i - 1 > r.snapshot_index() {
                    r.term_at(i - 1)
                } else {
                    None
                };
                match seen.get(&(i, e.term)) {
                    Some((d, p)) => {
                        if *d != e.data || (p.is_some() && prev.is_some() && *p != prev) {
                            return Err(format!(
                                "log matching broken at ({i}, {}) on node {id}",
                                e.term
                            ));
                        }
                    }
                    None => {
                        seen.insert((i, e.term), (e.data.clone(), prev));
                    }
                }
            }
        }
        Ok(())
    }
}
