//! Where a binlog dump begins: the replica's request ([`Start`]) checked against the
//! source and turned into a file, an offset and the GTIDs still to skip ([`StartPoint`]),
//! with the rules of `start_position.rs`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use surge_binlog::{GtidList, HEADER_LEN};

use super::error::ReplicationError;
use super::gtid_pos::GtidPos;
use super::scan::{EventFile, code, gtid_of, leading_gtid_list};
use super::source::ReplicationSource;
use super::start_position::{BinlogState, check_start, start_file};

/// How often a start waiting out the source's grace looks again.
const START_POLL: Duration = Duration::from_millis(100);

/// Where the replica asked to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    /// After the GTIDs of `@slave_connect_state` (file and position ignored).
    Gtid(GtidPos),
    /// At an offset of a file (a replica with `MASTER_USE_GTID=no`); an empty name means
    /// the first file.
    File(String, u64),
}

/// The binlog's GTID state at `end`: the leading Gtid_list of `end`'s file plus the GTIDs of
/// its groups before `end`'s offset.
///
/// # Errors
/// A file cannot be read or does not start as a binlog file must.
pub(crate) fn binlog_state(
    files: &[(String, PathBuf)],
    end: &(String, u64),
) -> Result<BinlogState, ReplicationError> {
    let Some((_, path)) = files.iter().find(|(n, _)| *n == end.0) else {
        return Ok(BinlogState::default());
    };
    let mut state = BinlogState::from_list(&leading_gtid_list(path)?);
    let mut f = EventFile::open(path)?;
    while let Some((h, head)) = f.next_header(end.1)? {
        if h.type_code == code::GTID {
            let at = f.pos() - HEADER_LEN as u64;
            let ev = f.read_rest(&h, &head)?;
            state.add(gtid_of(&ev, path, at)?.0);
        } else {
            f.skip_rest(&h)?;
        }
    }
    Ok(state)
}

/// Where a dump begins.
#[derive(Debug)]
pub(crate) struct StartPoint {
    /// The source's files when the start was found.
    pub(crate) files: Vec<(String, PathBuf)>,
    /// The index in `files` of the first file to send.
    pub(crate) index: usize,
    /// The offset in it of the first event after its Format_description to send.
    pub(crate) offset: u64,
    /// The requested GTIDs whose groups are still to be skipped.
    pub(crate) pending: GtidPos,
}

/// Where the dump for `start` begins.
///
/// # Errors
/// The requested GTID is not in the binlog (after the source's start grace), no file's
/// leading state is covered, the file or offset does not exist, a file cannot be read.
pub(crate) fn starting_point(
    source: &dyn ReplicationSource,
    start: &Start,
) -> Result<StartPoint, ReplicationError> {
    let mut files = source.files();
    match start {
        Start::Gtid(request) => {
            // A GTID the source does not hold yet may arrive within its start grace.
            let deadline = Instant::now() + source.start_grace();
            let end = loop {
                let end = source.end();
                let state = binlog_state(&files, &end)?;
                match check_start(request, &state) {
                    Ok(()) => break end,
                    Err(e) if Instant::now() >= deadline => return Err(e),
                    Err(_) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        source.wait_past(&end.0, end.1, left.min(START_POLL));
                        files = source.files();
                    }
                }
            };
            let last = files
                .iter()
                .position(|(n, _)| *n == end.0)
                .map_or(files.len(), |i| i + 1);
            let lists = files[..last]
                .iter()
                .map(|(_, p)| leading_gtid_list(p))
                .collect::<Result<Vec<GtidList>, _>>()?;
            let i = start_file(request, &lists)?;
            Ok(StartPoint {
                files,
                index: i,
                offset: 4,
                pending: request.clone(),
            })
        }
        Start::File(name, offset) => {
            let i = if name.is_empty() {
                if files.is_empty() {
                    return Err(ReplicationError::NoSuchFile {
                        file: String::new(),
                    });
                }
                0
            } else {
                files
                    .iter()
                    .position(|(n, _)| n == name)
                    .ok_or_else(|| ReplicationError::NoSuchFile { file: name.clone() })?
            };
            let offset = (*offset).max(4);
            // The offset must be where an event starts.
            let mut f = EventFile::open(&files[i].1)?;
            while f.pos() < offset {
                match f.next_header(offset)? {
                    Some((h, _)) => f.skip_rest(&h)?,
                    None => break,
                }
            }
            if f.pos() != offset {
                return Err(ReplicationError::BadPosition {
                    file: files[i].0.clone(),
                    offset,
                });
            }
            Ok(StartPoint {
                files,
                index: i,
                offset,
                pending: GtidPos::new(),
            })
        }
    }
}
