//! Reading the events of one binlog file, from disk or from memory.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{DecodeError, Error, Result};
use crate::event::{Event, EventBody};
use crate::header::{BINLOG_MAGIC, ChecksumAlg, EventHeader, HEADER_LEN};

/// Decodes a whole binlog file held in memory: magic, then events to the end.
///
/// Returns `(offset, event)` pairs. The checksum algorithm comes from the file's
/// Format_description (CRC-32 until one is seen).
///
/// # Errors
/// `(offset, error)` of the first thing that does not decode; offset 0 for a bad magic.
pub fn decode_file_bytes(
    bytes: &[u8],
) -> std::result::Result<Vec<(u64, Event)>, (u64, DecodeError)> {
    if bytes.len() < 4 || bytes[..4] != BINLOG_MAGIC {
        return Err((
            0,
            DecodeError::BadMagic {
                found: bytes[..bytes.len().min(4)].to_vec(),
            },
        ));
    }
    let mut alg = ChecksumAlg::Crc32;
    let mut pos = 4usize;
    let mut out = Vec::new();
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let header = EventHeader::parse(rest).map_err(|e| (pos as u64, e))?;
        let size = header.event_size as usize;
        if size < HEADER_LEN {
            return Err((
                pos as u64,
                DecodeError::BadLength {
                    size: header.event_size,
                },
            ));
        }
        if size > rest.len() {
            return Err((
                pos as u64,
                DecodeError::Truncated {
                    needed: size as u64,
                    available: rest.len() as u64,
                },
            ));
        }
        let ev = Event::decode(&rest[..size], alg).map_err(|e| (pos as u64, e))?;
        if let EventBody::FormatDescription(fd) = &ev.body {
            alg = fd.checksum_alg;
        }
        out.push((pos as u64, ev));
        pos += size;
    }
    Ok(out)
}

/// Streams the events of one binlog file, verifying each checksum.
///
/// Errors name the file and the offset of the bad event.
#[derive(Debug)]
pub struct FileEvents {
    reader: BufReader<File>,
    path: PathBuf,
    offset: u64,
    len: u64,
    alg: ChecksumAlg,
    failed: bool,
}

impl FileEvents {
    /// Opens `path` and checks the magic; the first event returned is at offset 4.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened, [`Error::Corrupt`] for a bad magic.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::io("open", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("stat", &path, e))?
            .len();
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let mut magic = [0u8; 4];
        let n = read_up_to(&mut reader, &mut magic).map_err(|e| Error::io("read", &path, e))?;
        if magic[..n] != BINLOG_MAGIC {
            return Err(Error::corrupt(
                &path,
                0,
                DecodeError::BadMagic {
                    found: magic[..n].to_vec(),
                },
            ));
        }
        Ok(FileEvents {
            reader,
            path,
            offset: 4,
            len,
            alg: ChecksumAlg::Crc32,
            failed: false,
        })
    }

    /// Opens `path` and positions at `offset` (which must be an event boundary), after
    /// reading the Format_description for the checksum algorithm.
    ///
    /// The header at `offset` is checked before anything is decoded there, so an offset
    /// inside an event is refused with a clear error rather than read as a huge or garbled
    /// event: its type code must be known, its length at least a header and within the
    /// file, and its end-of-event field either 0 (events copied from a transaction cache)
    /// or `offset + length` (modulo 2^32, the field's width).
    ///
    /// # Errors
    /// As [`FileEvents::open`], plus decoding errors of the Format_description,
    /// [`Error::Invalid`] for an offset past the end of the file and
    /// [`Error::NotEventBoundary`] for one where no event starts.
    pub fn open_at(path: impl AsRef<Path>, offset: u64) -> Result<Self> {
        let mut f = FileEvents::open(path)?;
        if offset > f.len {
            return Err(Error::Invalid {
                what: "position",
                detail: format!(
                    "offset {offset} is past the end of {} ({} bytes)",
                    f.path.display(),
                    f.len
                ),
            });
        }
        if offset < 4 {
            return Err(f.not_boundary(offset, "inside the 4-byte magic; the first event is at 4"));
        }
        if offset > 4 {
            f.next_event()?;
            f.reader
                .seek(SeekFrom::Start(offset))
                .map_err(|e| Error::io("seek", &f.path, e))?;
            f.offset = offset;
            if offset < f.len {
                f.check_boundary()?;
            }
        }
        Ok(f)
    }

    fn not_boundary(&self, offset: u64, reason: &'static str) -> Error {
        Error::NotEventBoundary {
            file: self.path.clone(),
            offset,
            reason,
        }
    }

    /// Checks that the header at the current offset is plausible (see
    /// [`FileEvents::open_at`]), leaving the reader where it was.
    fn check_boundary(&mut self) -> Result<()> {
        let at = self.offset;
        let available = self.len - at;
        if available < HEADER_LEN as u64 {
            return Err(self.not_boundary(at, "fewer bytes left than an event header"));
        }
        let mut head = [0u8; HEADER_LEN];
        self.reader
            .read_exact(&mut head)
            .map_err(|e| Error::io("read", &self.path, e))?;
        self.reader
            .seek_relative(-(HEADER_LEN as i64))
            .map_err(|e| Error::io("seek", &self.path, e))?;
        let Ok(header) = EventHeader::parse(&head) else {
            return Err(self.not_boundary(at, "unknown event type code"));
        };
        let size = u64::from(header.event_size);
        if size < HEADER_LEN as u64 {
            return Err(self.not_boundary(at, "event length shorter than a header"));
        }
        if size > available {
            return Err(self.not_boundary(at, "event length runs past the end of the file"));
        }
        if header.log_pos != 0 && header.log_pos != (at + size) as u32 {
            return Err(self.not_boundary(at, "end-of-event field is not offset + length"));
        }
        Ok(())
    }

    /// Offset of the next event (or the end of the file).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Size of the file when opened.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The file's checksum algorithm (known after its Format_description was read).
    pub fn checksum_alg(&self) -> ChecksumAlg {
        self.alg
    }

    /// The next event and its offset, or `None` at the end of the file.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming file and offset: truncated event, bad length, bad CRC,
    /// unknown type or malformed body. After an error the reader stays at that offset.
    pub fn next_event(&mut self) -> Result<Option<(u64, Event)>> {
        if self.failed || self.offset >= self.len {
            return Ok(None);
        }
        let at = self.offset;
        let available = self.len - at;
        let corrupt = |e| Error::corrupt(&self.path, at, e);
        if available < HEADER_LEN as u64 {
            self.failed = true;
            return Err(corrupt(DecodeError::Truncated {
                needed: HEADER_LEN as u64,
                available,
            }));
        }
        let mut head = [0u8; HEADER_LEN];
        self.reader
            .read_exact(&mut head)
            .map_err(|e| Error::io("read", &self.path, e))?;
        let header = match EventHeader::parse(&head) {
            Ok(h) => h,
            Err(e) => {
                self.failed = true;
                return Err(corrupt(e));
            }
        };
        let size = u64::from(header.event_size);
        if size < HEADER_LEN as u64 {
            self.failed = true;
            return Err(corrupt(DecodeError::BadLength {
                size: header.event_size,
            }));
        }
        if size > available {
            self.failed = true;
            return Err(corrupt(DecodeError::Truncated {
                needed: size,
                available,
            }));
        }
        let mut buf = vec![0u8; size as usize];
        buf[..HEADER_LEN].copy_from_slice(&head);
        self.reader
            .read_exact(&mut buf[HEADER_LEN..])
            .map_err(|e| Error::io("read", &self.path, e))?;
        let ev = match Event::decode(&buf, self.alg) {
            Ok(ev) => ev,
            Err(e) => {
                self.failed = true;
                return Err(corrupt(e));
            }
        };
        if let EventBody::FormatDescription(fd) = &ev.body {
            self.alg = fd.checksum_alg;
        }
        self.offset += size;
        Ok(Some((at, ev)))
    }
}

impl Iterator for FileEvents {
    type Item = Result<(u64, Event)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

/// Reads every event of one file.
///
/// # Errors
/// As [`FileEvents::next_event`].
pub fn read_file_events(path: impl AsRef<Path>) -> Result<Vec<(u64, Event)>> {
    FileEvents::open(path)?.collect()
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
