//! The prepare journal: TiDB Binlog's prewrite binlog, kept beside the coordinator's MariaDB
//! binlog. Before a transaction prewrites, a *prepare record* (its start timestamp, primary
//! key, the binlog position at that moment and the row change of every key) is appended and
//! fsynced; once the transaction's outcome is settled (its group is in the binlog, or it
//! did not commit) a *settled record* is appended. Recovery reads the prepares without a
//! settled record: those are the transactions a crash left in doubt.
//!
//! File `surge-txn.prepare`: records of `len u32 LE | fnv64 u64 LE | payload` (payload
//! postcard-encoded, checksum FNV-1a over it). A torn or damaged record ends the file: only
//! its unsynced tail can be torn, and nothing there was relied on (a prepare is fsynced
//! before its transaction prewrites; a lost settled record only makes recovery look the
//! transaction up in the binlog, where it is found).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::error::TxnError;

/// File name of the journal inside the binlog directory.
pub(crate) const JOURNAL_FILE: &str = "surge-txn.prepare";

/// The journal is rewritten with only its open prepares once its settled (dead) bytes pass
/// this and the open (live) ones: a rewrite copies the live bytes under the journal's
/// locks, so it must wait until at least as many dead bytes came in. Counting the whole
/// file instead made every settle copy an open large transaction's prepare (all its
/// events, 64 MiB and more) while every other commit waited: seconds of stall per commit
/// beside a big `UPDATE`.
const COMPACT_AT: u64 = 4 << 20;

/// The net change of one key by a transaction, as the binlog shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RowChange {
    /// The key had no value before and has one after (Write_rows).
    Insert,
    /// The key had a value before and has one after (Update_rows).
    Update,
    /// The key had a value before and has none after (Delete_rows).
    Delete,
}

/// One member of a hot-row group, logged as its own binlog transaction (AliSQL's hot-row
/// group commit: one `BEGIN` / `Update_rows` / `COMMIT` per member, in arrival order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MemberRow {
    /// The xid of the member's binlog transaction: a timestamp reserved from the oracle for
    /// this member alone, so it differs from every transaction's `start_ts` and from every
    /// other member's xid.
    pub(crate) xid: u64,
    /// The value the member saw (its predecessor's `after`, or the stored value).
    pub(crate) before: Vec<u8>,
    /// The value it wrote.
    pub(crate) after: Vec<u8>,
    /// The member's own binlog events (a SQL table's row event, encoded), logged in place
    /// of a kv update of `after`. Journaled in [`Record::PrepareWithEvents`], so records
    /// without it keep their earlier encoding.
    #[serde(skip)]
    pub(crate) events: Option<Vec<u8>>,
}

/// A prepare record: enough to settle the transaction and rebuild its binlog group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Prepared {
    /// The transaction (also the xid of its binlog group).
    pub(crate) start_ts: u64,
    /// Its primary key, whose status decides it.
    pub(crate) primary: Vec<u8>,
    /// Every key it writes (for cleanup), in key order.
    pub(crate) keys: Vec<Vec<u8>>,
    /// The row change of each key that changes the table, in key order.
    pub(crate) changes: Vec<(Vec<u8>, RowChange)>,
    /// The binlog's end when the record was written: the group, if written, lies after it.
    pub(crate) binlog_file: String,
    /// Offset in `binlog_file`.
    pub(crate) binlog_offset: u64,
    /// For a hot-row group (one key, an update), its members in arrival order: the group is
    /// logged as one binlog transaction per member, each updating `primary` to its `after`.
    /// Empty for an ordinary transaction, logged as one transaction with xid `start_ts`.
    pub(crate) members: Vec<MemberRow>,
    /// For a transaction that logged the caller's events (SQL rows, DDL) instead of kv
    /// rows: those events, encoded, which recovery writes as its group. Journaled in
    /// [`Record::PrepareWithEvents`].
    #[serde(skip)]
    pub(crate) events: Option<Vec<u8>>,
}

/// The caller-given binlog events of a prepare (its `events` and its members' `events`),
/// which the `Prepare` record's encoding leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CallerEvents {
    group: Option<Vec<u8>>,
    members: Vec<Option<Vec<u8>>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
enum Record {
    Prepare(Prepared),
    Settled {
        start_ts: u64,
    },
    /// A prepare with caller-given events. Added after the others, so the encodings of
    /// the first two variants are unchanged and journals written before it still read.
    PrepareWithEvents {
        prepared: Prepared,
        events: CallerEvents,
    },
}

/// [`Record`]'s prepares as they are written: borrowed, so journaling a large
/// transaction's prepare does not copy its keys and events first. Serializes exactly as the
/// [`Record`] variant of the same name and index (serde serializes a reference as its
/// referent), which is how it is read back.
#[derive(Serialize)]
enum RecordRef<'a> {
    Prepare(&'a Prepared),
    #[allow(dead_code)] // Only here to keep the variant indexes of `Record`.
    Settled {
        start_ts: u64,
    },
    PrepareWithEvents {
        prepared: &'a Prepared,
        events: CallerEventsRef<'a>,
    },
}

/// [`CallerEvents`] borrowed.
#[derive(Serialize)]
struct CallerEventsRef<'a> {
    group: Option<&'a Vec<u8>>,
    members: Vec<Option<&'a Vec<u8>>>,
}

impl RecordRef<'_> {
    /// The record that journals `p` (with its caller-given events, if any).
    fn prepare(p: &Prepared) -> RecordRef<'_> {
        let members: Vec<Option<&Vec<u8>>> = p.members.iter().map(|m| m.events.as_ref()).collect();
        if p.events.is_none() && members.iter().all(Option::is_none) {
            return RecordRef::Prepare(p);
        }
        RecordRef::PrepareWithEvents {
            prepared: p,
            events: CallerEventsRef {
                group: p.events.as_ref(),
                members,
            },
        }
    }
}

struct Writer {
    file: File,
    len: u64,
    /// Records appended so far (a logical sequence number).
    appended: u64,
    /// Prepares without a settled record, by start_ts: where their framed record lies in
    /// the file (offset, length), which compaction copies. Not the bytes: a large
    /// transaction's prepare holds all its events, and memory would hold them again until
    /// it settles.
    open: BTreeMap<u64, Extent>,
    /// The bytes of the records in `open` (the live part of the file; the rest of `len` is
    /// settled prepares and settled records, which a compaction drops).
    live: u64,
    /// Compactions so far.
    compactions: u64,
}

/// The journal of one coordinator. Appends are serialized; fsyncs are shared by the
/// prepares that arrive while one is in progress (group commit).
pub(crate) struct Journal {
    path: PathBuf,
    writer: Mutex<Writer>,
    /// Highest sequence number known durable. Held while fsyncing, so one caller fsyncs for
    /// every record appended before it started.
    synced: Mutex<u64>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> TxnError {
    TxnError::Binlog {
        detail: format!("{what} {}: {e}", path.display()),
    }
}

/// FNV-1a, 64 bits: detects a torn or damaged record (not an adversary).
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Where a framed record lies in the journal file: offset and length.
type Extent = (u64, u64);

/// `rec` framed: length (u32), FNV-1a of the payload (u64), payload; encoded in place
/// behind the header's room (one buffer, not an encoding and a framed copy of it).
fn encode<R: Serialize>(rec: &R) -> Result<Vec<u8>, TxnError> {
    let mut out = postcard::to_extend(rec, vec![0u8; 12]).map_err(|e| TxnError::Binlog {
        detail: format!("encode a journal record: {e}"),
    })?;
    let len = u32::try_from(out.len() - 12).map_err(|_| TxnError::Binlog {
        detail: format!("journal record of {} bytes exceeds 4 GiB", out.len() - 12),
    })?;
    let sum = fnv64(&out[12..]);
    out[..4].copy_from_slice(&len.to_le_bytes());
    out[4..12].copy_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// The records of `bytes` up to the first torn or damaged one, each with its framed
/// extent (offset, length), and the length they cover.
fn decode_all(bytes: &[u8]) -> (Vec<(Record, Extent)>, u64) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while bytes.len() - at >= 12 {
        let mut len4 = [0u8; 4];
        len4.copy_from_slice(&bytes[at..at + 4]);
        let mut sum8 = [0u8; 8];
        sum8.copy_from_slice(&bytes[at + 4..at + 12]);
        let len = u32::from_le_bytes(len4) as usize;
        let Some(payload) = bytes.get(at + 12..at + 12 + len) else {
            break;
        };
        if fnv64(payload) != u64::from_le_bytes(sum8) {
            break;
        }
        let Ok(rec) = postcard::from_bytes::<Record>(payload) else {
            break;
        };
        out.push((rec, (at as u64, 12 + len as u64)));
        at += 12 + len;
    }
    (out, at as u64)
}

impl Journal {
    /// Opens (or creates) the journal in `dir` and returns it with the prepares a previous
    /// run left unsettled, in start_ts order. A torn tail is cut off.
    ///
    /// # Errors
    /// [`TxnError::Binlog`] for I/O failures.
    pub(crate) fn open(dir: &Path) -> Result<(Journal, Vec<Prepared>), TxnError> {
        let path = dir.join(JOURNAL_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_err("read", &path, e)),
        };
        let (records, good) = decode_all(&bytes);
        let mut open: BTreeMap<u64, (Prepared, Extent)> = BTreeMap::new();
        for (rec, extent) in records {
            match rec {
                Record::Prepare(p) => {
                    open.insert(p.start_ts, (p, extent));
                }
                Record::PrepareWithEvents {
                    mut prepared,
                    events,
                } => {
                    prepared.events = events.group;
                    for (m, e) in prepared.members.iter_mut().zip(events.members) {
                        m.events = e;
                    }
                    open.insert(prepared.start_ts, (prepared, extent));
                }
                Record::Settled { start_ts } => {
                    open.remove(&start_ts);
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .write(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err("open", &path, e))?;
        if good < bytes.len() as u64 {
            tracing::warn!(
                path = %path.display(),
                cut = bytes.len() as u64 - good,
                "journal: torn tail cut"
            );
            file.set_len(good)
                .map_err(|e| io_err("truncate", &path, e))?;
            file.sync_all().map_err(|e| io_err("fsync", &path, e))?;
        }
        let extents: BTreeMap<u64, Extent> = open.iter().map(|(ts, (_, e))| (*ts, *e)).collect();
        let live = extents.values().map(|(_, n)| n).sum();
        let journal = Journal {
            path,
            writer: Mutex::new(Writer {
                file,
                len: good,
                appended: 0,
                open: extents,
                live,
                compactions: 0,
            }),
            synced: Mutex::new(0),
        };
        Ok((journal, open.into_values().map(|(p, _)| p).collect()))
    }

    /// Appends `p` and returns once it is durable (fsynced, possibly by another caller's
    /// fsync that covered it).
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the write or the fsync fails.
    pub(crate) fn prepare(&self, p: &Prepared) -> Result<(), TxnError> {
        let bytes = encode(&RecordRef::prepare(p))?;
        let seq = {
            let mut w = self.writer.lock();
            let at = w.len;
            w.append(&self.path, &bytes)?;
            let n = bytes.len() as u64;
            if let Some((_, replaced)) = w.open.insert(p.start_ts, (at, n)) {
                w.live -= replaced;
            }
            w.live += n;
            w.appended
        };
        drop(bytes);
        self.sync_to(seq)
    }

    /// The start_ts of the oldest prepare not settled yet.
    pub(crate) fn oldest_open(&self) -> Option<u64> {
        self.writer.lock().open.keys().next().copied()
    }

    /// Appends a settled record for `start_ts` (not fsynced: see the module docs) and
    /// compacts the journal once enough of it is settled ([`COMPACT_AT`]).
    ///
    /// # Errors
    /// [`TxnError::Binlog`] if the write or a compaction fails.
    pub(crate) fn settle(&self, start_ts: u64) -> Result<(), TxnError> {
        let bytes = encode(&Record::Settled { start_ts })?;
        let compact = {
            let mut w = self.writer.lock();
            if let Some((_, n)) = w.open.remove(&start_ts) {
                w.live -= n;
            }
            w.append(&self.path, &bytes)?;
            w.worth_compacting()
        };
        if compact {
            self.compact()?;
        }
        Ok(())
    }

    /// Makes every record up to sequence number `seq` durable.
    fn sync_to(&self, seq: u64) -> Result<(), TxnError> {
        let mut synced = self.synced.lock();
        if *synced >= seq {
            return Ok(());
        }
        // Everything appended up to now is covered by this fsync.
        let (file, upto) = {
            let w = self.writer.lock();
            let f = w
                .file
                .try_clone()
                .map_err(|e| io_err("dup", &self.path, e))?;
            (f, w.appended)
        };
        file.sync_data()
            .map_err(|e| io_err("fsync", &self.path, e))?;
        *synced = upto;
        Ok(())
    }

    /// Rewrites the journal with only its open prepares: a new file written and fsynced,
    /// renamed over the old one, the directory fsynced. A crash leaves either file whole.
    fn compact(&self) -> Result<(), TxnError> {
        let mut synced = self.synced.lock();
        let mut w = self.writer.lock();
        // Another settle may have compacted while this one waited for the locks.
        if !w.worth_compacting() {
            return Ok(());
        }
        let tmp = self.path.with_extension("prepare.tmp");
        let mut f = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
        // The open prepares copied one at a time from the current file (which stays whole
        // until the rename), with their extents in the new one.
        let mut moved = BTreeMap::new();
        let mut len = 0u64;
        for (ts, (at, n)) in &w.open {
            use std::os::unix::fs::FileExt as _;
            let mut buf = vec![0u8; *n as usize];
            w.file
                .read_exact_at(&mut buf, *at)
                .map_err(|e| io_err("read", &self.path, e))?;
            f.write_all(&buf).map_err(|e| io_err("write", &tmp, e))?;
            moved.insert(*ts, (len, *n));
            len += n;
        }
        f.sync_all().map_err(|e| io_err("fsync", &tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io_err("rename", &tmp, e))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io_err("fsync dir", dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| io_err("open", &self.path, e))?;
        w.file = file;
        w.len = len;
        w.live = len;
        w.open = moved;
        w.compactions += 1;
        *synced = w.appended;
        Ok(())
    }

    /// Bytes in the journal file now.
    #[cfg(test)]
    fn len(&self) -> u64 {
        self.writer.lock().len
    }

    /// Compactions since the journal was opened.
    #[cfg(test)]
    fn compactions(&self) -> u64 {
        self.writer.lock().compactions
    }
}

impl Writer {
    /// Whether the dead bytes are worth a rewrite ([`COMPACT_AT`]).
    fn worth_compacting(&self) -> bool {
        self.len - self.live > COMPACT_AT.max(self.live)
    }

    fn append(&mut self, path: &Path, bytes: &[u8]) -> Result<(), TxnError> {
        use std::os::unix::fs::FileExt as _;
        self.file
            .write_all_at(bytes, self.len)
            .map_err(|e| io_err("write", path, e))?;
        self.len += bytes.len() as u64;
        self.appended += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(ts: u64) -> Prepared {
        Prepared {
            start_ts: ts,
            primary: b"p".to_vec(),
            keys: vec![b"p".to_vec(), b"q".to_vec()],
            changes: vec![(b"p".to_vec(), RowChange::Insert)],
            binlog_file: "surge-bin.000001".into(),
            binlog_offset: 4,
            members: Vec::new(),
            events: None,
        }
    }

    /// A hot-row group's two members: the first with caller events `events`, the second
    /// without.
    fn two_members(events: Vec<u8>) -> Vec<MemberRow> {
        vec![
            MemberRow {
                xid: 10,
                before: b"a".to_vec(),
                after: b"b".to_vec(),
                events: Some(events),
            },
            MemberRow {
                xid: 11,
                before: b"b".to_vec(),
                after: b"c".to_vec(),
                events: None,
            },
        ]
    }

    #[test]
    fn caller_events_survive_reopen_beside_plain_prepares() -> Result<(), TxnError> {
        let dir = tempfile::tempdir().map_err(|e| io_err("tmp", Path::new("."), e))?;
        let (j, _) = Journal::open(dir.path())?;
        let mut sql = prepared(2);
        sql.events = Some(vec![1, 2, 3]);
        let mut hot = prepared(3);
        hot.members = two_members(vec![9; 5]);
        j.prepare(&prepared(1))?;
        j.prepare(&sql)?;
        j.prepare(&hot)?;
        drop(j);
        let (_j, open) = Journal::open(dir.path())?;
        assert_eq!(open, vec![prepared(1), sql, hot]);
        Ok(())
    }

    #[test]
    fn a_plain_prepare_keeps_its_earlier_encoding() -> Result<(), TxnError> {
        // Variant 0 followed by the fields: what journals written before caller events
        // existed hold, so they still read.
        let bytes = postcard::to_allocvec(&RecordRef::prepare(&prepared(7))).map_err(|e| {
            TxnError::Binlog {
                detail: e.to_string(),
            }
        })?;
        assert_eq!(bytes[0], 0);
        assert_eq!(bytes[1], 7);
        Ok(())
    }

    /// The borrowed record written and the owned one read have one encoding, with caller
    /// events and members' events too.
    #[test]
    fn a_borrowed_prepare_encodes_as_the_owned_record() {
        let mut p = prepared(9);
        p.events = Some(vec![1, 2, 3]);
        p.members = two_members(vec![4; 300]);
        let owned = Record::PrepareWithEvents {
            prepared: p.clone(),
            events: CallerEvents {
                group: p.events.clone(),
                members: p.members.iter().map(|m| m.events.clone()).collect(),
            },
        };
        let written = postcard::to_allocvec(&RecordRef::prepare(&p)).expect("encode");
        assert_eq!(written, postcard::to_allocvec(&owned).expect("encode"));
        // (Read back, the prepare's own copies of the events are empty: they are skipped
        // fields, restored from `events` by `Journal::open`.)
        assert!(matches!(
            postcard::from_bytes::<Record>(&written),
            Ok(Record::PrepareWithEvents { .. })
        ));
        let plain = prepared(10);
        assert_eq!(
            postcard::to_allocvec(&RecordRef::prepare(&plain)).expect("encode"),
            postcard::to_allocvec(&Record::Prepare(plain.clone())).expect("encode")
        );
    }

    #[test]
    fn open_prepares_survive_reopen_and_settled_ones_do_not() -> Result<(), TxnError> {
        let dir = tempfile::tempdir().map_err(|e| io_err("tmp", Path::new("."), e))?;
        let (j, open) = Journal::open(dir.path())?;
        assert!(open.is_empty());
        for ts in 1..=3 {
            j.prepare(&prepared(ts))?;
        }
        j.settle(2)?;
        drop(j);
        let (_j, open) = Journal::open(dir.path())?;
        assert_eq!(open, vec![prepared(1), prepared(3)]);
        Ok(())
    }

    #[test]
    fn a_torn_tail_is_cut_and_earlier_records_kept() -> Result<(), TxnError> {
        let dir = tempfile::tempdir().map_err(|e| io_err("tmp", Path::new("."), e))?;
        let (j, _) = Journal::open(dir.path())?;
        j.prepare(&prepared(1))?;
        j.prepare(&prepared(2))?;
        let full = j.len();
        drop(j);
        let path = dir.path().join(JOURNAL_FILE);
        for cut in [1, 5, 13] {
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| io_err("open", &path, e))?;
            f.set_len(full - cut).map_err(|e| io_err("cut", &path, e))?;
            drop(f);
            let (_j, open) = Journal::open(dir.path())?;
            assert_eq!(open, vec![prepared(1)], "cut {cut}");
        }
        Ok(())
    }

    #[test]
    fn compaction_keeps_only_open_prepares() -> Result<(), TxnError> {
        let dir = tempfile::tempdir().map_err(|e| io_err("tmp", Path::new("."), e))?;
        let (j, _) = Journal::open(dir.path())?;
        j.prepare(&prepared(1))?;
        let mut big = prepared(2);
        big.keys = (0..600_000u64).map(|i| i.to_le_bytes().to_vec()).collect();
        j.prepare(&big)?;
        j.settle(2)?;
        assert!(j.len() < 1024, "compacted to {} bytes", j.len());
        drop(j);
        let (_j, open) = Journal::open(dir.path())?;
        assert_eq!(open, vec![prepared(1)]);
        Ok(())
    }

    /// A large open prepare is not copied by every small transaction's settle: only once
    /// the settled bytes outweigh it (they stalled every commit beside a big `UPDATE`).
    #[test]
    fn an_open_large_prepare_is_copied_only_once_dead_bytes_outweigh_it() -> Result<(), TxnError> {
        let dir = tempfile::tempdir().map_err(|e| io_err("tmp", Path::new("."), e))?;
        let (j, _) = Journal::open(dir.path())?;
        let mut big = prepared(1);
        big.events = Some(vec![7u8; 6 << 20]);
        j.prepare(&big)?;
        let live = j.len();
        // Small transactions whose records add up to past COMPACT_AT but under the big
        // prepare: a rule that ignored the open bytes would compact here.
        assert!(live * 9 / 10 > COMPACT_AT + (64 << 10));
        let mut ts = 2;
        for _ in 0..live * 9 / 10 / (64 << 10) {
            let mut small = prepared(ts);
            small.events = Some(vec![1u8; 64 << 10]);
            j.prepare(&small)?;
            j.settle(ts)?;
            ts += 1;
        }
        assert_eq!(j.compactions(), 0, "{} small settles", ts - 2);
        // Once the dead bytes pass the live ones, one rewrite keeps only the big prepare.
        while j.compactions() == 0 {
            let mut small = prepared(ts);
            small.events = Some(vec![1u8; 64 << 10]);
            j.prepare(&small)?;
            j.settle(ts)?;
            ts += 1;
            assert!(j.len() < 3 * live, "never compacted: {} bytes", j.len());
        }
        assert_eq!(j.len(), live);
        drop(j);
        let (_j, open) = Journal::open(dir.path())?;
        assert_eq!(open, vec![big]);
        Ok(())
    }
}
