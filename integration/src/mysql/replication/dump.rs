//! The binlog dump: what a connection does after COM_BINLOG_DUMP until the replica leaves
//! (MariaDB's `mysql_binlog_send`, <https://mariadb.com/kb/en/com_binlog_dump/>).
//!
//! Per file: a fake Rotate naming it, its Format_description as sent (see `events.rs`),
//! then its events from offset 4 on: Gtid_list, Binlog_checkpoint, the groups (those before
//! the start GTID skipped), and a real Rotate at the end of every file but the last. Then
//! the next file, or, at the end of the complete groups, a wait: a Heartbeat each
//! `@master_heartbeat_period` while nothing comes, never between a Rotate and the
//! Format_description after it (MDEV-29981: a replica before 11.0 rejects that).
//!
//! Invariants: nothing past [`ReplicationSource::end`] is sent in the file it names, so a
//! replica never gets part of a group; an event goes out in the order of the file; the
//! dump ends when the peer closes (or the server shuts its socket down), on a write error,
//! or with ERR 1236 when the binlog cannot be read.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use surge_binlog::HEADER_LEN;

use super::super::ok_err_eof::err_packet;
use super::dump_start::{Start, StartPoint, starting_point};
use super::error::ReplicationError;
use super::events::{fake_rotate, format_description_as_sent, heartbeat};
use super::framing::PacketWriter;
use super::gtid_pos::GtidPos;
use super::scan::{EventFile, GroupTracker, Place, SMALL_QUERY, code, gtid_of, query_ends_txn};
use super::source::{ReplicationSource, is_past};
use super::start_position::skip_group;

/// The longest a dump waits before looking whether its peer is still there.
const PEER_CHECK: Duration = Duration::from_millis(100);

/// A connection's socket as the dump needs it: written to, and asked whether the peer has
/// closed it (the replica stopped, or the server shut the socket down).
pub(crate) trait DumpPeer: Read + Write {
    /// Whether reading would return end-of-file now (without blocking or consuming).
    fn peer_closed(&mut self) -> bool;
}

impl DumpPeer for TcpStream {
    fn peer_closed(&mut self) -> bool {
        if self.set_nonblocking(true).is_err() {
            return true;
        }
        let mut b = [0u8; 1];
        let r = self.peek(&mut b);
        let restored = self.set_nonblocking(false).is_ok();
        match r {
            Ok(0) => true,
            Ok(_) => !restored,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => !restored,
            Err(_) => true,
        }
    }
}

/// What the dump was told by the connection's user variables.
#[derive(Debug, Clone)]
pub(crate) struct DumpOptions {
    pub(crate) start: Start,
    /// `None`: no heartbeats (`@master_heartbeat_period` 0 or never set).
    pub(crate) heartbeat: Option<Duration>,
    /// Answer end-of-file at the end instead of waiting (BINLOG_DUMP_NON_BLOCK).
    pub(crate) non_blocking: bool,
    /// `@master_binlog_checksum` was `CRC32`: the first fake Rotate carries a CRC-32
    /// (`events.rs`); later ones do, as the files' events.
    pub(crate) checksum_at_connect: bool,
    /// `@master_binlog_checksum` was set at all (a client that never set it cannot
    /// handle the files' checksums: refused with 1236 after the first fake Rotate, as
    /// MariaDB does).
    pub(crate) checksum_aware: bool,
}

/// Why the dump ended.
#[derive(Debug)]
pub(crate) enum DumpEnd {
    /// The peer went away, or a write failed: nothing more can be said to it.
    Gone,
    /// The end of the binlog was reached with [`DumpOptions::non_blocking`].
    EndOfLog,
    /// The binlog cannot be served: tell the replica (ERR 1236).
    Fatal(ReplicationError),
}

impl From<ReplicationError> for DumpEnd {
    fn from(e: ReplicationError) -> DumpEnd {
        DumpEnd::Fatal(e)
    }
}

impl From<io::Error> for DumpEnd {
    fn from(_: io::Error) -> DumpEnd {
        DumpEnd::Gone
    }
}

/// The dump's state while it streams.
struct Dump<'a, W: DumpPeer> {
    source: &'a dyn ReplicationSource,
    out: PacketWriter<io::BufWriter<&'a mut W>>,
    opts: &'a DumpOptions,
    /// GTIDs of domains whose start has not been reached yet.
    pending: GtidPos,
    /// When something was last sent (heartbeats count from it).
    last_sent: Instant,
    /// A Rotate was sent and the next file's Format_description not yet: no heartbeat now.
    after_rotate: bool,
    /// A Format_description was sent: from then on events carry its checksum (CRC-32).
    sent_fd: bool,
}

/// Streams the binlog to the replica on `peer` until it leaves. The first packet written
/// carries sequence id 1 (the command was 0). A fatal error is sent to the replica as
/// ERR 1236 before returning.
pub(crate) fn run_dump<W: DumpPeer>(
    source: &dyn ReplicationSource,
    opts: &DumpOptions,
    peer: &mut W,
) -> DumpEnd {
    let out = PacketWriter::new(io::BufWriter::with_capacity(256 * 1024, peer), 1);
    let mut d = Dump {
        source,
        out,
        opts,
        pending: GtidPos::new(),
        last_sent: Instant::now(),
        after_rotate: false,
        sent_fd: false,
    };
    let end = d.stream();
    match &end {
        DumpEnd::Fatal(e) => {
            let msg = e.to_string();
            let packet = err_packet(1236, "HY000", &msg);
            let _ = d.out.bytes(&packet).and_then(|()| d.out.flush());
        }
        DumpEnd::EndOfLog => {
            // A classic EOF: 0xFE, warnings u16, status u16.
            let _ = d
                .out
                .bytes(&[0xFE, 0, 0, 0, 0])
                .and_then(|()| d.out.flush());
        }
        DumpEnd::Gone => {}
    }
    end
}

impl<W: DumpPeer> Dump<'_, W> {
    fn stream(&mut self) -> DumpEnd {
        match self.stream_files() {
            Ok(never) => match never {},
            Err(end) => end,
        }
    }

    fn stream_files(&mut self) -> Result<std::convert::Infallible, DumpEnd> {
        let StartPoint {
            files,
            index: mut i,
            offset,
            pending,
        } = starting_point(self.source, &self.opts.start)?;
        self.pending = pending;
        let mut name = files[i].0.clone();
        let mut path = files[i].1.clone();
        let mut offset = Some(offset);
        // MariaDB's first fake Rotate names the position asked for; the next ones 4.
        let mut rotate_pos = match &self.opts.start {
            Start::File(_, pos) => Some(*pos),
            Start::Gtid(_) => None,
        };
        // The file being sent stays in the binlog until the next one is pinned too, so a
        // purge never removes what this replica reads next.
        let mut _pin = self.source.pin(&name)?;
        loop {
            self.stream_file(&name, &path, offset.take().unwrap_or(4), rotate_pos.take())?;
            // The file is complete and sent: on to the next one.
            let files = self.source.files();
            i = files
                .iter()
                .position(|(n, _)| *n == name)
                .ok_or_else(|| ReplicationError::FileGone { file: name.clone() })?;
            let Some(next) = files.get(i + 1) else {
                return Err(ReplicationError::FileGone { file: name }.into());
            };
            name = next.0.clone();
            path = next.1.clone();
            _pin = self.source.pin(&name)?;
        }
    }

    /// How far `name` may be read now, and whether it is complete: to `end` in the file
    /// `end` names, to its length in an earlier (complete) one.
    fn limit(&self, name: &str, f: &EventFile) -> Result<(u64, bool), ReplicationError> {
        let end = self.source.end();
        if end.0 == name {
            Ok((end.1, false))
        } else {
            Ok((f.len()?, true))
        }
    }

    /// Sends `name` from `from` on, following it while it grows; returns once it is
    /// complete and wholly sent. Its fake Rotate names `rotate_pos` (4 when `None`).
    fn stream_file(
        &mut self,
        name: &str,
        path: &std::path::Path,
        from: u64,
        rotate_pos: Option<u64>,
    ) -> Result<(), DumpEnd> {
        let server_id = self.source.server_id();
        let rotate_pos = rotate_pos.unwrap_or(4);
        let checksum = self.sent_fd || self.opts.checksum_at_connect;
        self.send(&fake_rotate(server_id, name, rotate_pos, checksum))?;
        self.after_rotate = true;
        let mut f = EventFile::open(path)?;
        // The Format_description: wait for it if the file is that new.
        let fd = loop {
            let (limit, _) = self.limit(name, &f)?;
            if let Some((h, head)) = f.next_header(limit)? {
                if h.type_code != code::FORMAT_DESCRIPTION {
                    return Err(
                        corrupt(&f, 4, "the first event is not a Format_description").into(),
                    );
                }
                break f.read_rest(&h, &head)?;
            }
            self.idle(name, 4)?;
        };
        if !self.opts.checksum_aware {
            // MariaDB's answer to a client that never said which checksum it handles, for
            // a binlog whose events carry one (ours always do).
            return Err(ReplicationError::ChecksumUnaware {
                file: name.to_string(),
                pos: rotate_pos,
            }
            .into());
        }
        let fd = format_description_as_sent(&fd, !self.pending.is_empty())
            .ok_or_else(|| corrupt(&f, 4, "Format_description too short"))?;
        self.send(&fd)?;
        self.after_rotate = false;
        self.sent_fd = true;
        if from > f.pos() {
            f = EventFile::open_at(path, from)?;
        }
        let mut tracker = GroupTracker::default();
        let mut skipping = false;
        loop {
            let (limit, complete) = self.limit(name, &f)?;
            while let Some((h, head)) = f.next_header(limit)? {
                let at = f.pos() - HEADER_LEN as u64;
                let mut whole = None;
                let mut flags = 0;
                let mut ends = false;
                if h.type_code == code::GTID {
                    let ev = f.read_rest(&h, &head)?;
                    let (gtid, fl) = gtid_of(&ev, path, at)?;
                    flags = fl;
                    skipping = skip_group(&mut self.pending, &gtid);
                    whole = Some(ev);
                } else if h.type_code == code::QUERY && h.size <= SMALL_QUERY {
                    let ev = f.read_rest(&h, &head)?;
                    ends = query_ends_txn(&ev);
                    whole = Some(ev);
                }
                let place = tracker.observe(h.type_code, flags, ends);
                let send = place == Place::Outside || !skipping;
                match (send, whole) {
                    (true, Some(ev)) => self.send(&ev)?,
                    (true, None) => {
                        let mut prefix = [0u8; 1 + HEADER_LEN];
                        prefix[1..].copy_from_slice(&head);
                        let len = u64::from(h.size) - HEADER_LEN as u64;
                        self.out.packet(&prefix, &mut f.body_reader(&h), len)?;
                        self.last_sent = Instant::now();
                    }
                    (false, Some(_)) => {}
                    (false, None) => f.skip_rest(&h)?,
                }
                if h.type_code == code::ROTATE {
                    self.after_rotate = true;
                }
            }
            if complete {
                if f.pos() < limit {
                    return Err(corrupt(&f, f.pos(), "a torn event in a complete file").into());
                }
                return Ok(());
            }
            self.idle(name, f.pos())?;
        }
    }

    /// At the end of what may be sent: flush, then wait for more, sending heartbeats.
    fn idle(&mut self, name: &str, offset: u64) -> Result<(), DumpEnd> {
        self.out.flush()?;
        if self.opts.non_blocking && !is_past(&self.source.end(), name, offset) {
            return Err(DumpEnd::EndOfLog);
        }
        let wait = match self.opts.heartbeat {
            Some(p) => p.saturating_sub(self.last_sent.elapsed()).min(PEER_CHECK),
            None => PEER_CHECK,
        };
        let end = self
            .source
            .wait_past(name, offset, wait.max(Duration::from_millis(1)));
        if self.out.get_mut().get_mut().peer_closed() {
            return Err(DumpEnd::Gone);
        }
        if let Some(p) = self.opts.heartbeat
            && !is_past(&end, name, offset)
            && !self.after_rotate
            && self.last_sent.elapsed() >= p
        {
            let hb = heartbeat(self.source.server_id(), name, offset);
            self.send(&hb)?;
            self.out.flush()?;
        }
        Ok(())
    }

    /// Sends one event held in memory.
    fn send(&mut self, event: &[u8]) -> Result<(), DumpEnd> {
        self.out.packet(&[0], &mut &event[..], event.len() as u64)?;
        self.last_sent = Instant::now();
        Ok(())
    }
}

fn corrupt(f: &EventFile, offset: u64, detail: &str) -> ReplicationError {
    ReplicationError::Corrupt {
        path: f.path().to_path_buf(),
        offset,
        detail: detail.to_string(),
    }
}
