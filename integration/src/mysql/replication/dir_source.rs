//! [`DirSource`]: a [`ReplicationSource`] over a directory that `surge_binlog::Binlog`
//! writes, found by polling its index file and scanning the last file's events.
//!
//! The writer appends whole events and fsyncs after each group; a file enters the index
//! only once its header is written, and every file but the last is complete (rotation
//! writes the Rotate first; commit by rename puts the renamed file in the index before its
//! Xid, which the scan then waits for). So the end of the complete groups is the offset
//! after the last event of the last file that is not inside an open group.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use surge_binlog::BinlogConfig;

use super::error::ReplicationError;
use super::scan::{EventFile, GroupTracker, Place, SMALL_QUERY, code, gtid_of, query_ends_txn};
use super::source::{ReplicationSource, is_past};

/// How often [`DirSource::wait_past`] looks at the directory by default.
pub const DEFAULT_POLL: Duration = Duration::from_millis(10);

/// A binlog directory written by `surge_binlog::Binlog` (or by MariaDB: same index and file
/// format), served as a [`ReplicationSource`].
///
/// Invariant (of the scan state): `end <= pos`, both offsets in `file`; `pos` is an event
/// boundary, `end` the boundary after the last event outside a group; `tracker` describes
/// the events before `pos`.
#[derive(Debug)]
pub struct DirSource {
    dir: PathBuf,
    base_name: String,
    server_id: u32,
    poll: Duration,
    start_grace: Duration,
    scan: Mutex<Scan>,
}

#[derive(Debug, Default)]
struct Scan {
    file: String,
    reader: Option<EventFile>,
    pos: u64,
    end: u64,
    tracker: GroupTracker,
    /// Why the last scan stopped short, if it did.
    error: Option<String>,
}

impl DirSource {
    /// Serves the binlog `base_name` (`<base_name>.index`, `<base_name>.000001`, ...) in
    /// `dir`, whose events carry `server_id`. The directory may be empty still.
    pub fn new(dir: impl Into<PathBuf>, base_name: impl Into<String>, server_id: u32) -> DirSource {
        DirSource {
            dir: dir.into(),
            base_name: base_name.into(),
            server_id,
            poll: DEFAULT_POLL,
            start_grace: Duration::ZERO,
            scan: Mutex::new(Scan::default()),
        }
    }

    /// Serves the binlog a `surge_binlog::Binlog` with `cfg` writes.
    pub fn for_binlog(cfg: &BinlogConfig) -> DirSource {
        DirSource::new(cfg.dir.clone(), cfg.base_name.clone(), cfg.server_id)
    }

    /// Sets how often [`DirSource::wait_past`] polls.
    pub fn with_poll(mut self, poll: Duration) -> DirSource {
        self.poll = poll.max(Duration::from_millis(1));
        self
    }

    /// Sets [`ReplicationSource::start_grace`] (zero by default, as MariaDB).
    pub fn with_start_grace(mut self, grace: Duration) -> DirSource {
        self.start_grace = grace;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Why the last look at the directory could not read the last file to its end (a file
    /// being renamed in, a damaged event), if it could not. The end stays where it was.
    pub fn last_error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Scan> {
        // The scan state is re-derived from the files when in doubt (see `advance`).
        self.scan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The names in the index, in order. Only whole lines count: a line still being
    /// written has no newline yet.
    fn names(&self) -> Vec<String> {
        let path = self.dir.join(format!("{}.index", self.base_name));
        let Ok(bytes) = std::fs::read(&path) else {
            return Vec::new();
        };
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        String::from_utf8_lossy(&bytes[..complete])
            .lines()
            .map(|l| l.trim_matches(|c: char| c == '\0' || c.is_whitespace()))
            .filter(|l| !l.is_empty())
            .map(|l| l.rsplit('/').next().unwrap_or(l).to_string())
            .collect()
    }

    /// Scans `last` from where the scan stopped to its current length.
    fn advance(&self, scan: &mut Scan, last: &str) -> Result<(), ReplicationError> {
        let path = self.dir.join(last);
        if scan.file != last || scan.reader.is_none() {
            *scan = Scan {
                file: last.to_string(),
                reader: Some(EventFile::open(&path)?),
                pos: 4,
                end: 4,
                tracker: GroupTracker::default(),
                error: None,
            };
        }
        let Some(f) = scan.reader.as_mut() else {
            return Ok(());
        };
        let len = f.len()?;
        if len < scan.pos {
            // Cut back (a writer's recovery dropped a torn tail): start the file over.
            scan.reader = None;
            return self.advance(scan, last);
        }
        while let Some((h, head)) = f.next_header(len)? {
            let at = f.pos() - head.len() as u64;
            let (flags, ends) = match h.type_code {
                code::GTID => {
                    let ev = f.read_rest(&h, &head)?;
                    (gtid_of(&ev, &path, at)?.1, false)
                }
                code::QUERY if h.size <= SMALL_QUERY => {
                    let ev = f.read_rest(&h, &head)?;
                    (0, query_ends_txn(&ev))
                }
                _ => {
                    f.skip_rest(&h)?;
                    (0, false)
                }
            };
            let place = scan.tracker.observe(h.type_code, flags, ends);
            if matches!(place, Place::Outside | Place::End) {
                scan.end = f.pos();
            }
        }
        scan.pos = f.pos();
        Ok(())
    }
}

impl ReplicationSource for DirSource {
    fn files(&self) -> Vec<(String, PathBuf)> {
        self.names()
            .into_iter()
            .map(|n| {
                let p = self.dir.join(&n);
                (n, p)
            })
            .collect()
    }

    fn end(&self) -> (String, u64) {
        let names = self.names();
        let Some(last) = names.last() else {
            return (String::new(), 0);
        };
        let mut scan = self.lock();
        scan.error = None;
        if let Err(e) = self.advance(&mut scan, last) {
            // Unreadable now (a file being renamed in, a damaged event): what was found
            // complete before stays the end; the next call looks again.
            scan.error = Some(e.to_string());
            scan.reader = None;
            if scan.file != *last {
                return (last.clone(), 4);
            }
        }
        (scan.file.clone(), scan.end)
    }

    fn wait_past(&self, file: &str, offset: u64, timeout: Duration) -> (String, u64) {
        let deadline = Instant::now() + timeout;
        loop {
            let end = self.end();
            let now = Instant::now();
            if is_past(&end, file, offset) || now >= deadline {
                return end;
            }
            std::thread::sleep(self.poll.min(deadline - now));
        }
    }

    fn server_id(&self) -> u32 {
        self.server_id
    }

    fn start_grace(&self) -> Duration {
        self.start_grace
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_binlog::Binlog;

    #[test]
    fn follows_groups_rotation_and_rename() {
        let dir = tempfile::tempdir().unwrap();
        let src = DirSource::new(dir.path(), "surge-bin", 1);
        assert_eq!(src.end(), (String::new(), 0));
        assert!(src.files().is_empty());
        let cfg = BinlogConfig::new(dir.path()).with_large_commit_threshold(1 << 20);
        let log = Binlog::open(cfg).unwrap();
        let (f1, header_end) = src.end();
        assert_eq!(f1, "surge-bin.000001");
        assert!(header_end > 4);
        let mut c = log.new_cache();
        c.put(b"a", b"1").unwrap();
        let done = log.commit(c, 1).unwrap();
        assert_eq!(src.end(), (f1.clone(), done.end_position));
        // Bytes of a group still being written are not part of the end.
        let path = dir.path().join(&f1);
        let before = std::fs::read(&path).unwrap();
        let gtid_len = 19 + 19 + 4;
        let mut partial = before.clone();
        partial.extend_from_slice(&before[header_end as usize..header_end as usize + gtid_len]);
        log.close().unwrap();
        std::fs::write(&path, &partial).unwrap();
        let fresh = DirSource::new(dir.path(), "surge-bin", 1);
        assert_eq!(fresh.end(), (f1.clone(), done.end_position));
        std::fs::write(&path, &before).unwrap();

        let log = Binlog::open(BinlogConfig::new(dir.path()).with_large_commit_threshold(1 << 20))
            .unwrap();
        let (f2, _) = src.end();
        assert_eq!(f2, "surge-bin.000002");
        // A large transaction: committed by rename into a file of its own.
        let mut c = log.new_cache();
        let value = vec![7u8; 60_000];
        for i in 0..40u32 {
            c.put(&i.to_be_bytes(), &value).unwrap();
        }
        let big = log.commit(c, 2).unwrap();
        assert_eq!(big.method, surge_binlog::CommitMethod::Renamed);
        let end = src.wait_past(&f2, 0, Duration::from_secs(5));
        assert_eq!(end, (big.file.clone(), big.end_position));
        assert_eq!(src.files().len(), 3);
        assert_eq!(src.server_id(), 1);
        // Nothing new: wait_past returns at its timeout with the same end.
        let t = Instant::now();
        assert_eq!(src.wait_past(&end.0, end.1, Duration::from_millis(50)), end);
        assert!(t.elapsed() >= Duration::from_millis(50));
        log.close().unwrap();
    }

    #[test]
    fn a_damaged_last_file_keeps_the_end_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let log = Binlog::open(BinlogConfig::new(dir.path())).unwrap();
        let mut c = log.new_cache();
        c.put(b"a", b"1").unwrap();
        let done = log.commit(c, 1).unwrap();
        log.close().unwrap();
        let src = DirSource::new(dir.path(), "surge-bin", 1);
        assert_eq!(src.end(), (done.file.clone(), done.end_position));
        assert_eq!(src.last_error(), None);
        // Garbage appended where the next event would start: a header claiming 3 bytes.
        let path = dir.path().join(&done.file);
        let mut bytes = std::fs::read(&path).unwrap();
        let mut bad = [0u8; 19];
        bad[9] = 3;
        bytes.extend_from_slice(&bad);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(src.end(), (done.file.clone(), done.end_position));
        let e = src.last_error().unwrap();
        assert!(
            e.contains(&format!("offset {}", done.end_position)) && e.contains(&done.file),
            "{e}"
        );
    }
}
