//! `Transactions`: the log read back as whole transactions (GTID, events, commit).

use crate::binlog::Position;
use crate::error::Result;
use crate::event::{Event, EventBody};
use crate::gtid::Gtid;
use crate::reader::LogReader;

/// One committed transaction read back from the log: an event group from its GTID event to
/// its commit (an Xid event, a `COMMIT` query, or the single statement of a standalone
/// group such as DDL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// Its GTID, with the server id from the GTID event's header.
    pub gtid: Gtid,
    /// Position of its GTID event.
    pub start: Position,
    /// Position just past its commit event (what [`crate::CommitInfo::end_position`] gave).
    pub end: Position,
    /// The xid of its Xid event; `None` for a group committed by a `COMMIT` query or a
    /// standalone statement.
    pub xid: Option<u64>,
    /// Its events after the GTID event, with their positions: the statement of a standalone
    /// group, otherwise everything up to but not including the commit event.
    pub events: Vec<(Position, Event)>,
}

/// Iterates the transactions of a log ([`LogReader::transactions`]).
///
/// Events outside event groups (Format_description, Gtid_list, Binlog_checkpoint, Rotate)
/// are skipped. A group without its commit event (a transaction a crash cut short, which
/// recovery reports in [`crate::RecoveryReport::incomplete`], or one rolled back by a
/// `ROLLBACK` query) is skipped too: it was never committed. A reader started inside a
/// group skips the rest of it. Each transaction is held in memory whole; read a very large
/// one event by event with [`LogReader`] instead.
#[derive(Debug)]
pub struct Transactions {
    reader: LogReader,
    failed: bool,
}

/// The group being read.
struct Open {
    gtid: Gtid,
    standalone: bool,
    start: Position,
    events: Vec<(Position, Event)>,
}

impl Transactions {
    pub(crate) fn new(reader: LogReader) -> Self {
        Transactions {
            reader,
            failed: false,
        }
    }

    /// The next whole transaction, or `None` at the end of the reader.
    ///
    /// # Errors
    /// As [`LogReader::next_event`]; after an error the iterator ends.
    pub fn next_transaction(&mut self) -> Result<Option<Transaction>> {
        let mut open: Option<Open> = None;
        while let Some((pos, ev)) = self.reader.next_event()? {
            let size = u64::from(ev.header.event_size);
            let end = || Position {
                file: pos.file.clone(),
                offset: pos.offset + size,
            };
            match &ev.body {
                EventBody::Gtid(g) => {
                    // A new GTID while a group is open: the open one never committed.
                    open = Some(Open {
                        gtid: Gtid {
                            domain_id: g.domain_id,
                            server_id: ev.header.server_id,
                            seq_no: g.seq_no,
                        },
                        standalone: g.is_standalone(),
                        start: pos,
                        events: Vec::new(),
                    });
                }
                EventBody::Xid(x) => {
                    if let Some(o) = open.take() {
                        return Ok(Some(o.finish(end(), Some(*x))));
                    }
                }
                EventBody::Query(q) if open.is_some() => {
                    let committed = q.query.eq_ignore_ascii_case(b"COMMIT");
                    let rolled_back = q.query.eq_ignore_ascii_case(b"ROLLBACK");
                    if let Some(mut o) = open.take() {
                        if o.standalone {
                            let end = end();
                            o.events.push((pos, ev));
                            return Ok(Some(o.finish(end, None)));
                        } else if committed {
                            return Ok(Some(o.finish(end(), None)));
                        } else if !rolled_back {
                            o.events.push((pos, ev));
                            open = Some(o);
                        }
                    }
                }
                // A new file while a group is open: the writer stopped inside the group.
                EventBody::FormatDescription(_) => open = None,
                EventBody::GtidList(_) | EventBody::BinlogCheckpoint(_) | EventBody::Rotate(_) => {}
                _ => {
                    if let Some(o) = &mut open {
                        o.events.push((pos, ev));
                    }
                }
            }
        }
        Ok(None)
    }
}

impl Open {
    fn finish(self, end: Position, xid: Option<u64>) -> Transaction {
        Transaction {
            gtid: self.gtid,
            start: self.start,
            end,
            xid,
            events: self.events,
        }
    }
}

impl Iterator for Transactions {
    type Item = Result<Transaction>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.next_transaction().transpose();
        if matches!(r, Some(Err(_))) {
            self.failed = true;
        }
        r
    }
}
