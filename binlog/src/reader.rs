//! `LogReader`: events across the files of a log, from a position, checksums verified.

use std::path::{Path, PathBuf};

use crate::binlog::Position;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::file_reader::FileEvents;
use crate::index::Index;
use crate::transactions::Transactions;

/// Iterates the events of a log's files in index order, starting at a position.
///
/// Each file's events come in order, its Format_description included; at the end of a file
/// the reader moves to the next one in the index (re-read at each switch, so files added
/// meanwhile are seen). It ends at the end of the last file, or at the end position it was
/// given ([`Binlog::reader`](crate::Binlog::reader) gives the log's position when the reader
/// was made, so it never sees a group being written). It reads a snapshot of each file's
/// length when it opens it: it is not a tailing reader.
///
/// [`LogReader::transactions`] turns it into an iterator of whole transactions.
#[derive(Debug)]
pub struct LogReader {
    dir: PathBuf,
    base: String,
    file: String,
    events: FileEvents,
    end: Option<Position>,
}

impl LogReader {
    /// Opens the log `base` in `dir` at `from` (`None`: the first event of the first file).
    ///
    /// `from.offset` must be where an event starts (4 for the first event, or a position
    /// this crate returned, such as [`CommitInfo::end_position`](crate::CommitInfo)).
    ///
    /// # Errors
    /// [`Error::Invalid`] if the file is not in the index or the log is empty;
    /// [`Error::NotEventBoundary`] if no event starts at `from.offset`;
    /// [`Error::Io`]/[`Error::Corrupt`] opening it.
    pub fn open(dir: impl AsRef<Path>, base: &str, from: Option<Position>) -> Result<LogReader> {
        let dir = dir.as_ref().to_path_buf();
        let index = Index::load(&dir, base)?;
        let from = match from {
            Some(p) => p,
            None => Position {
                file: index.files.first().cloned().ok_or_else(|| Error::Invalid {
                    what: "log",
                    detail: format!("no files in the index of {base}"),
                })?,
                offset: 4,
            },
        };
        if !index.files.contains(&from.file) {
            return Err(Error::Invalid {
                what: "position",
                detail: format!("{} is not in the index", from.file),
            });
        }
        let events = FileEvents::open_at(dir.join(&from.file), from.offset)?;
        Ok(LogReader {
            dir,
            base: base.to_string(),
            file: from.file,
            events,
            end: None,
        })
    }

    /// Stops the reader at `end` (exclusive): no event at or after that position of that
    /// file is returned, nor any event of a later file.
    pub fn until(mut self, end: Position) -> LogReader {
        self.end = Some(end);
        self
    }

    /// Whole transactions from here on: see [`Transactions`].
    pub fn transactions(self) -> Transactions {
        Transactions::new(self)
    }

    /// Position of the next event.
    pub fn position(&self) -> Position {
        Position {
            file: self.file.clone(),
            offset: self.events.offset(),
        }
    }

    /// The next event with its position, or `None` after the last one.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming file and offset; [`Error::Io`].
    pub fn next_event(&mut self) -> Result<Option<(Position, Event)>> {
        loop {
            if let Some(end) = &self.end
                && end.file == self.file
                && self.events.offset() >= end.offset
            {
                return Ok(None);
            }
            if let Some((offset, ev)) = self.events.next_event()? {
                let pos = Position {
                    file: self.file.clone(),
                    offset,
                };
                return Ok(Some((pos, ev)));
            }
            if self.end.as_ref().is_some_and(|e| e.file == self.file) {
                return Ok(None);
            }
            let index = Index::load(&self.dir, &self.base)?;
            let next = index
                .files
                .iter()
                .position(|f| *f == self.file)
                .and_then(|i| index.files.get(i + 1));
            match next {
                Some(n) => {
                    self.events = FileEvents::open(self.dir.join(n))?;
                    self.file = n.clone();
                }
                None => return Ok(None),
            }
        }
    }
}

impl Iterator for LogReader {
    type Item = Result<(Position, Event)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}
