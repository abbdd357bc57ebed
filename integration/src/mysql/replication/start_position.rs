//! Where a GTID dump starts, as MariaDB decides it (`check_slave_start_position`,
//! `gtid_find_binlog_file` in `sql/sql_repl.cc`, <https://github.com/MariaDB/server>):
//!
//! 1. every requested `d-s-n` must be in the binlog: the binlog state has server `s` in
//!    domain `d` at sequence `n` or later, else ERR 1236 (`GtidNotInBinlog`);
//! 2. the start file is the newest whose leading Gtid_list the request covers (every listed
//!    domain requested, and for the listed server no earlier than listed); an empty request
//!    needs a file whose Gtid_list is empty;
//! 3. from that file's first group, a group of a requested domain is skipped until the
//!    requested GTID itself (skipped too) or a later one of its server (streamed).

use std::collections::BTreeMap;

use surge_binlog::{Gtid, GtidList};

use super::error::ReplicationError;
use super::gtid_pos::GtidPos;

/// The binlog's GTID state: the last sequence number of each (domain, server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BinlogState {
    last: BTreeMap<(u32, u32), u64>,
    /// The most recent GTID of each domain (what `@@gtid_binlog_pos` shows).
    newest: BTreeMap<u32, Gtid>,
}

impl BinlogState {
    /// The state a Gtid_list describes.
    pub(crate) fn from_list(list: &GtidList) -> BinlogState {
        let mut s = BinlogState::default();
        for g in &list.gtids {
            s.add(*g);
        }
        s
    }

    /// Records a group's GTID.
    pub(crate) fn add(&mut self, g: Gtid) {
        let e = self
            .last
            .entry((g.domain_id, g.server_id))
            .or_insert(g.seq_no);
        *e = (*e).max(g.seq_no);
        self.newest.insert(g.domain_id, g);
    }

    /// Whether the binlog holds `g` (its server has reached its sequence number in its
    /// domain).
    pub(crate) fn holds(&self, g: &Gtid) -> bool {
        self.last
            .get(&(g.domain_id, g.server_id))
            .is_some_and(|&n| n >= g.seq_no)
    }

    /// Every (domain, server)'s last GTID, as `@@gtid_binlog_state` shows it.
    pub(crate) fn full_state(&self) -> String {
        let all: Vec<String> = self
            .last
            .iter()
            .map(|((d, s), n)| format!("{d}-{s}-{n}"))
            .collect();
        all.join(",")
    }

    /// The newest GTID of each domain, as `@@gtid_binlog_pos` shows it.
    pub(crate) fn position(&self) -> GtidPos {
        let mut p = GtidPos::new();
        for g in self.newest.values() {
            p.set(*g);
        }
        p
    }
}

/// Step 1: every requested GTID must be in the binlog.
///
/// # Errors
/// [`ReplicationError::GtidNotInBinlog`] for the first that is not.
pub(crate) fn check_start(request: &GtidPos, state: &BinlogState) -> Result<(), ReplicationError> {
    match request.iter().find(|g| !state.holds(g)) {
        Some(gtid) => Err(ReplicationError::GtidNotInBinlog { gtid }),
        None => Ok(()),
    }
}

/// Whether a replica at `request` may start reading at the file that begins with `list`:
/// everything before the file is already applied.
pub(crate) fn covers(request: &GtidPos, list: &GtidList) -> bool {
    for (i, g) in list.gtids.iter().enumerate() {
        let Some(r) = request.get(g.domain_id) else {
            // The replica needs this domain from its start, in an earlier file.
            return false;
        };
        if r.server_id == g.server_id && r.seq_no <= g.seq_no {
            if r.seq_no < g.seq_no {
                return false;
            }
            // The requested GTID is the last of its server before this file: it is the
            // start only if nothing of the domain came after it (later entries of the
            // list are more recent).
            if list.gtids[i + 1..]
                .iter()
                .any(|x| x.domain_id == g.domain_id)
            {
                return false;
            }
        }
    }
    true
}

/// Step 2: the index (in `lists`, oldest first) of the newest file whose leading Gtid_list
/// `request` covers.
///
/// # Errors
/// [`ReplicationError::StateNotFound`] when no file qualifies.
pub(crate) fn start_file(request: &GtidPos, lists: &[GtidList]) -> Result<usize, ReplicationError> {
    lists
        .iter()
        .rposition(|l| covers(request, l))
        .ok_or(ReplicationError::StateNotFound)
}

/// Step 3: whether the group with `gtid` is skipped. `pending` holds the requested GTIDs of
/// the domains not reached yet; a domain leaves it when its GTID (or a later one of its
/// server) is seen.
pub(crate) fn skip_group(pending: &mut GtidPos, gtid: &Gtid) -> bool {
    let Some(r) = pending.get(gtid.domain_id) else {
        return false;
    };
    if r.server_id == gtid.server_id && gtid.seq_no >= r.seq_no {
        pending.remove(gtid.domain_id);
        // The requested GTID itself was applied already; a later one is the first to send.
        return gtid.seq_no == r.seq_no;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(d: u32, s: u32, n: u64) -> Gtid {
        Gtid {
            domain_id: d,
            server_id: s,
            seq_no: n,
        }
    }

    fn list(gs: &[Gtid]) -> GtidList {
        GtidList {
            flags: 0,
            gtids: gs.to_vec(),
        }
    }

    fn pos(s: &str) -> GtidPos {
        GtidPos::parse(s).unwrap()
    }

    #[test]
    fn start_file_choice() {
        // Files: empty list, then 0-1-3, then 0-1-7.
        let lists = [list(&[]), list(&[g(0, 1, 3)]), list(&[g(0, 1, 7)])];
        let cases: &[(&str, Option<usize>)] = &[
            ("", Some(0)),
            ("0-1-0", Some(0)),
            ("0-1-2", Some(0)),
            ("0-1-3", Some(1)),
            ("0-1-6", Some(1)),
            ("0-1-7", Some(2)),
            ("0-1-9", Some(2)),
            // Another server's GTID in the domain: MariaDB does not compare across servers.
            ("0-5-1", Some(2)),
            // A domain the files do not list changes nothing.
            ("0-1-4,3-3-3", Some(1)),
        ];
        for (req, want) in cases {
            let got = start_file(&pos(req), &lists).ok();
            assert_eq!(got, *want, "{req}");
        }
        // The first file purged: an empty request has nowhere to start.
        let purged = &lists[1..];
        assert!(matches!(
            start_file(&pos(""), purged),
            Err(ReplicationError::StateNotFound)
        ));
        assert!(matches!(
            start_file(&pos("0-1-2"), purged),
            Err(ReplicationError::StateNotFound)
        ));
        // The equal GTID with a later entry of its domain (another server) after it.
        let two = list(&[g(0, 1, 5), g(0, 2, 6)]);
        assert!(!covers(&pos("0-1-5"), &two));
        assert!(covers(&pos("0-2-6"), &two));
    }

    #[test]
    fn start_check() {
        let mut state = BinlogState::from_list(&list(&[g(0, 1, 3)]));
        state.add(g(0, 1, 4));
        state.add(g(0, 1, 5));
        assert!(check_start(&pos(""), &state).is_ok());
        assert!(check_start(&pos("0-1-5"), &state).is_ok());
        assert!(check_start(&pos("0-1-1"), &state).is_ok());
        for bad in ["0-1-6", "0-2-1", "1-1-1"] {
            let e = check_start(&pos(bad), &state).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("GTID {bad}, which is not in the master's binlog")),
                "{e}"
            );
        }
        assert_eq!(state.position().to_string(), "0-1-5");
        state.add(g(0, 2, 1));
        state.add(g(3, 1, 9));
        assert_eq!(state.position().to_string(), "0-2-1,3-1-9");
        assert_eq!(state.full_state(), "0-1-5,0-2-1,3-1-9");
    }

    #[test]
    fn skipping() {
        let mut pending = pos("0-1-3");
        let seen: Vec<bool> = (1..=5)
            .map(|n| skip_group(&mut pending, &g(0, 1, n)))
            .collect();
        assert_eq!(seen, [true, true, true, false, false]);
        assert!(pending.is_empty());
        // Another domain is never skipped; another server of the domain is, until found.
        let mut pending = pos("0-1-3");
        assert!(!skip_group(&mut pending, &g(1, 1, 1)));
        assert!(skip_group(&mut pending, &g(0, 2, 9)));
        // A hole: the first later GTID of the server is streamed.
        assert!(!skip_group(&mut pending, &g(0, 1, 4)));
        assert!(!skip_group(&mut pending, &g(0, 2, 10)));
    }
}
