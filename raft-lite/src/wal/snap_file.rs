//! Snapshot files: one file per snapshot in `<wal dir>/snap/`, named
//! `<group>-<index>-<nonce>.snap` (hex), never rewritten in place.
//!
//! Layout: magic `SRSF`, body length (`u64` LE), CRC-32 of the body (`u32` LE), then the
//! body: the snapshot's metadata and its data. A file is written whole and durable (write a
//! temporary, fsync, rename, fsync the directory) before any log record refers to it; the
//! record carries the file's name, body length and CRC, so replay checks it found the very
//! file the log meant. A file no record refers to (its writer died before the reference) or
//! that a later reference superseded is garbage, deleted at open.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::fs::WalFs;
use crate::codec::{self, Reader};
use crate::{Error, Result, Snapshot, SnapshotFile, SnapshotPersister};

/// The directory under the log's directory that holds the snapshot files.
pub(crate) const DIR: &str = "snap";
const MAGIC: &[u8; 4] = b"SRSF";
const HEADER_LEN: usize = 16;

/// The file name of the snapshot of `group` at `index`; `nonce` makes it unique (a
/// snapshot received from a leader may land at the index of one still being written).
fn name(group: u64, index: u64, nonce: u64) -> String {
    format!("{group:016x}-{index:016x}-{nonce:016x}.snap")
}

/// The group, index and nonce of a snapshot file's name, if it is one.
pub(crate) fn parse_name(name: &str) -> Option<(u64, u64, u64)> {
    let mut it = name.strip_suffix(".snap")?.split('-');
    let mut next = || {
        it.next()
            .filter(|h| h.len() == 16)
            .and_then(|h| u64::from_str_radix(h, 16).ok())
    };
    let parsed = (next()?, next()?, next()?);
    it.next().is_none().then_some(parsed)
}

/// A snapshot encoded as a file, not yet written.
pub(crate) struct Encoded {
    pub(crate) file: SnapshotFile,
    bytes: Vec<u8>,
}

/// Writes and reads the snapshot files of one log directory. Shared by the log (inline
/// snapshots) and the driver's background snapshot writer.
#[derive(Debug)]
pub(crate) struct SnapFiles {
    fs: Arc<dyn WalFs>,
    dir: PathBuf,
    next_nonce: AtomicU64,
}

impl SnapFiles {
    /// The snapshot directory under `wal_dir`; nonces continue after `first_nonce`.
    pub(crate) fn new(fs: Arc<dyn WalFs>, wal_dir: &Path, first_nonce: u64) -> SnapFiles {
        SnapFiles {
            fs,
            dir: wal_dir.join(DIR),
            next_nonce: AtomicU64::new(first_nonce),
        }
    }

    /// The path of a snapshot file.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Encodes `s` of `group` under a fresh name (no I/O).
    ///
    /// # Errors
    /// [`Error::WriteTooLarge`] if the data exceeds [`crate::MAX_BYTES_LEN`] (followers
    /// could not decode it from a message, nor could replay read it back).
    pub(crate) fn encode(&self, group: u64, s: &Snapshot) -> Result<Encoded> {
        if s.data.len() > codec::MAX_BYTES_LEN {
            return Err(Error::WriteTooLarge {
                what: "snapshot data",
                size: s.data.len(),
                limit: codec::MAX_BYTES_LEN,
            });
        }
        let mut bytes = Vec::with_capacity(HEADER_LEN + 64 + s.data.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&[0; HEADER_LEN - 4]);
        codec::put_snapshot_meta(&mut bytes, &s.meta);
        codec::put_bytes(&mut bytes, &s.data);
        let body = &bytes[HEADER_LEN..];
        let (len, crc) = (body.len() as u64, crc32fast::hash(body));
        bytes[4..12].copy_from_slice(&len.to_le_bytes());
        bytes[12..16].copy_from_slice(&crc.to_le_bytes());
        let nonce = self.next_nonce.fetch_add(1, Ordering::Relaxed);
        Ok(Encoded {
            file: SnapshotFile {
                name: name(group, s.meta.index, nonce),
                len,
                crc,
            },
            bytes,
        })
    }

    /// Writes an encoded snapshot durably (temporary, fsync, rename, fsync directory).
    ///
    /// # Errors
    /// [`Error::Io`] naming the file.
    pub(crate) fn store(&self, e: &Encoded) -> Result<()> {
        let path = self.path(&e.file.name);
        self.fs
            .write_atomic(&path, &e.bytes)
            .map_err(|err| Error::io(&path, err))
    }

    /// Encodes and stores `s`: the whole job of the background writer.
    ///
    /// # Errors
    /// As [`SnapFiles::encode`] and [`SnapFiles::store`].
    pub(crate) fn persist(&self, group: u64, s: &Snapshot) -> Result<SnapshotFile> {
        let e = self.encode(group, s)?;
        self.store(&e)?;
        Ok(e.file)
    }

    /// Deletes a snapshot file that is no longer referenced (best effort: a file left
    /// behind is deleted at the next open).
    pub(crate) fn discard(&self, name: &str) {
        let path = self.path(name);
        if let Err(e) = self.fs.remove(&path) {
            tracing::warn!(path = %path.display(), error = %e, "wal: cannot delete snapshot file");
        }
    }

    /// Reads back the file `f` refers to, checking that it is that file, whole.
    ///
    /// # Errors
    /// [`Error::Corrupt`] naming the file if it is missing, damaged or not the one `f`
    /// describes; [`Error::Io`].
    pub(crate) fn read(&self, f: &SnapshotFile) -> Result<Snapshot> {
        let path = self.path(&f.name);
        let corrupt = |offset, reason| Error::Corrupt {
            path: path.clone(),
            offset,
            reason,
        };
        let bytes = match self.fs.read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(corrupt(0, "snapshot file is missing"));
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        if bytes.len() < HEADER_LEN || &bytes[..4] != MAGIC {
            return Err(corrupt(0, "bad snapshot file magic"));
        }
        let mut h = Reader::new(&bytes[4..HEADER_LEN], "snapshot file header");
        let (len, crc) = (h.u64()?, h.u32()?);
        let body = &bytes[HEADER_LEN..];
        if len != f.len || body.len() as u64 != len {
            return Err(corrupt(
                4,
                "snapshot file length differs from its log record",
            ));
        }
        if crc != f.crc || crc32fast::hash(body) != crc {
            return Err(corrupt(12, "snapshot file checksum mismatch"));
        }
        let mut r = Reader::new(body, "snapshot file");
        let bad = |_| corrupt(HEADER_LEN as u64, "undecodable snapshot file body");
        let meta = codec::get_snapshot_meta(&mut r).map_err(bad)?;
        let data = r.bytes().map_err(bad)?;
        r.finish().map_err(bad)?;
        Ok(Snapshot { meta, data })
    }
}

impl SnapshotPersister for SnapFiles {
    fn persist(&self, group: u64, snapshot: &Snapshot) -> Result<SnapshotFile> {
        SnapFiles::persist(self, group, snapshot)
    }

    fn discard(&self, file: &SnapshotFile) {
        SnapFiles::discard(self, &file.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_not_snapshot_files() {
        let n = name(3, 2000, 7);
        assert_eq!(parse_name(&n), Some((3, 2000, 7)));
        for other in [
            "snap-0000000000000003.bin",
            "0000000000000003-00000000000007d0.snap",
            "0000000000000003-00000000000007d0-0000000000000007.snap.tmp",
            "0000000000000003-00000000000007d0-0000000000000007-1.snap",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }
}
