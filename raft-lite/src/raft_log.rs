//! The in-memory log of one node: entries after the last snapshot, plus the indexes
//! that say what is committed, durable, handed out and applied.
//!
//! Invariants:
//! - `entries[i].index == snap_index + 1 + i`;
//! - `applied <= committed`, `snap_index <= committed`, `committed <= last_index()`;
//! - `persisted <= last_index()`, and every entry above `persisted` was either never
//!   handed out for persisting or is handed out again (`unstable_from <= persisted + 1`).

use std::collections::VecDeque;

use crate::{ConfState, Entry, EntryKind};

#[derive(Debug)]
pub(crate) struct RaftLog {
    pub(crate) snap_index: u64,
    pub(crate) snap_term: u64,
    /// Membership as of the snapshot (or the bootstrap membership).
    pub(crate) snap_conf: ConfState,
    pub(crate) entries: VecDeque<Entry>,
    pub(crate) committed: u64,
    /// Highest index handed out to the state machine.
    pub(crate) applied: u64,
    /// Highest index known durable in local storage.
    pub(crate) persisted: u64,
    /// First index not yet handed out in a `Ready` for persisting.
    pub(crate) unstable_from: u64,
}

impl RaftLog {
    pub(crate) fn last_index(&self) -> u64 {
        self.snap_index + self.entries.len() as u64
    }

    pub(crate) fn last_term(&self) -> u64 {
        self.entries.back().map_or(self.snap_term, |e| e.term)
    }

    pub(crate) fn first_index(&self) -> u64 {
        self.snap_index + 1
    }

    /// Term of the entry at `idx`; `None` if compacted away or beyond the end.
    pub(crate) fn term(&self, idx: u64) -> Option<u64> {
        if idx == self.snap_index {
            return Some(self.snap_term);
        }
        self.entry(idx).map(|e| e.term)
    }

    pub(crate) fn entry(&self, idx: u64) -> Option<&Entry> {
        if idx <= self.snap_index {
            return None;
        }
        self.entries.get((idx - self.snap_index - 1) as usize)
    }

    /// Raft §5.4.1: is a log ending at `(last_term, last_index)` at least as up to date as
    /// ours? Lexicographic on (term, index).
    pub(crate) fn is_up_to_date(&self, last_index: u64, last_term: u64) -> bool {
        (last_term, last_index) >= (self.last_term(), self.last_index())
    }

    /// Entries `[lo, hi)` up to about `max_bytes`, at least one if any exist.
    pub(crate) fn slice(&self, lo: u64, hi: u64, max_bytes: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut size = 0;
        let mut i = lo.max(self.first_index());
        while i < hi {
            let Some(e) = self.entry(i) else { break };
            size += e.size();
            if !out.is_empty() && size > max_bytes {
                break;
            }
            out.push(e.clone());
            i += 1;
        }
        out
    }

    /// The leader appends its own entries.
    pub(crate) fn append(&mut self, e: Entry) {
        debug_assert_eq!(e.index, self.last_index() + 1);
        self.entries.push_back(e);
    }

    /// Follower append (Raft §5.3): returns the last index the message proves matching, or
    /// `None` if `prev` does not match. Truncates only at the first conflicting entry, so a
    /// stale or reordered message never drops a matching suffix. `Err` if the message
    /// would overwrite a committed entry (impossible with a correct leader).
    pub(crate) fn maybe_append(
        &mut self,
        prev_index: u64,
        prev_term: u64,
        entries: &[Entry],
    ) -> Result<Option<u64>, u64> {
        if self.term(prev_index) != Some(prev_term) {
            return Ok(None);
        }
        let last_new = prev_index + entries.len() as u64;
        let conflict = entries
            .iter()
            .find(|e| e.index > self.snap_index && self.term(e.index) != Some(e.term));
        if let Some(c) = conflict {
            let at = c.index;
            if at <= self.committed {
                return Err(at);
            }
            self.truncate_from(at);
            let skip = (at - entries[0].index) as usize;
            self.entries.extend(entries[skip..].iter().cloned());
        }
        Ok(Some(last_new))
    }

    /// Drops entries `>= at` (never committed ones).
    pub(crate) fn truncate_from(&mut self, at: u64) {
        let keep = (at - self.snap_index - 1) as usize;
        self.entries.truncate(keep);
        self.persisted = self.persisted.min(at - 1);
        self.unstable_from = self.unstable_from.min(at);
    }

    pub(crate) fn commit_to(&mut self, c: u64) -> bool {
        let c = c.min(self.last_index());
        if c > self.committed {
            self.committed = c;
            true
        } else {
            false
        }
    }

    /// Replaces the whole log by a snapshot position.
    pub(crate) fn restore(&mut self, index: u64, term: u64, conf: ConfState) {
        self.entries.clear();
        self.snap_index = index;
        self.snap_term = term;
        self.snap_conf = conf;
        self.committed = index;
        self.applied = index;
        self.persisted = index;
        self.unstable_from = index + 1;
    }

    /// Forgets entries up to `index` (already in a durable snapshot).
    pub(crate) fn compact(&mut self, index: u64, conf: ConfState) {
        if index <= self.snap_index || index > self.applied {
            return;
        }
        let term = self.term(index).unwrap_or(self.snap_term);
        let n = (index - self.snap_index) as usize;
        self.entries.drain(..n);
        self.snap_index = index;
        self.snap_term = term;
        self.snap_conf = conf;
    }

    /// The membership in effect: that of the last conf-change entry, else the snapshot's.
    pub(crate) fn effective_conf(&self) -> (ConfState, u64) {
        for e in self.entries.iter().rev() {
            if e.kind == EntryKind::ConfChange
                && let Ok(cs) = e.conf_state()
            {
                return (cs, e.index);
            }
        }
        (self.snap_conf.clone(), self.snap_index)
    }
}
