//! The binlog's GTID state: the last GTID of each domain.

use std::collections::BTreeMap;

use crate::gtid::{Gtid, GtidList};

/// Last GTID per domain; sequence numbers grow per domain.
#[derive(Debug, Clone, Default)]
pub(crate) struct GtidState {
    last: BTreeMap<u32, Gtid>,
}

impl GtidState {
    /// Records a GTID seen in the log (keeps the highest per domain).
    pub(crate) fn observe(&mut self, g: Gtid) {
        let e = self.last.entry(g.domain_id).or_insert(g);
        if g.seq_no >= e.seq_no {
            *e = g;
        }
    }

    /// Allocates the next GTID of `domain` for `server_id`.
    pub(crate) fn next(&mut self, domain_id: u32, server_id: u32) -> Gtid {
        let seq_no = self.last.get(&domain_id).map_or(1, |g| g.seq_no + 1);
        let g = Gtid {
            domain_id,
            server_id,
            seq_no,
        };
        self.last.insert(domain_id, g);
        g
    }

    /// The state as a Gtid_list body.
    pub(crate) fn to_list(&self) -> GtidList {
        GtidList {
            flags: 0,
            gtids: self.last.values().copied().collect(),
        }
    }
}
