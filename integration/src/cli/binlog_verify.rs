//! `surgedb binlog verify DIR`: every binlog file under a directory read back.

use std::io::Read;
use std::path::{Path, PathBuf};

use surge_binlog::{BINLOG_MAGIC, FileEvents};

/// One binlog file read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedFile {
    /// The file.
    pub path: PathBuf,
    /// Its events, every checksum verified.
    pub events: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Why verification failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// A directory or file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A binlog file did not read back.
    #[error("{}: {detail}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What the reader said.
        detail: String,
    },
}

/// Reads every binlog file under `dir` (recursively; a binlog file is one starting with
/// the magic `fe 62 69 6e`) back with `surge-binlog`'s [`FileEvents`] reader, which
/// verifies every event's CRC-32. Files are visited in path order.
///
/// # Errors
/// [`VerifyError::Damaged`] for the first file that does not read back whole.
pub fn verify_dir(dir: &Path) -> Result<Vec<VerifiedFile>, VerifyError> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for path in files {
        if !starts_with_magic(&path)? {
            continue;
        }
        let damaged = |e: surge_binlog::Error| VerifyError::Damaged {
            path: path.clone(),
            detail: e.to_string(),
        };
        let mut reader = FileEvents::open(&path).map_err(damaged)?;
        let mut events = 0;
        while reader.next_event().map_err(damaged)?.is_some() {
            events += 1;
        }
        out.push(VerifiedFile {
            bytes: reader.file_len(),
            path,
            events,
        });
    }
    Ok(out)
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), VerifyError> {
    let io = |source| VerifyError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            collect(&entry.path(), files)?;
        } else if kind.is_file() {
            files.push(entry.path());
        }
    }
    Ok(())
}

fn starts_with_magic(path: &Path) -> Result<bool, VerifyError> {
    let mut head = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(|source| VerifyError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(f.read_exact(&mut head).is_ok() && head == BINLOG_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_binlog::{Binlog, BinlogConfig};

    #[test]
    fn every_binlog_file_is_read_back_and_other_files_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("node-1").join("binlog");
        let log = Binlog::open(BinlogConfig::new(&dir)).unwrap();
        for xid in 1..=3 {
            let mut txn = log.new_cache();
            txn.put(format!("k{xid}").as_bytes(), b"v").unwrap();
            log.commit(txn, xid).unwrap();
        }
        log.shutdown().unwrap();
        std::fs::write(tmp.path().join("notes.txt"), b"not a binlog").unwrap();
        let files = verify_dir(tmp.path()).unwrap();
        assert!(!files.is_empty());
        assert!(files.iter().map(|f| f.events).sum::<u64>() >= 3 * 3);

        // A flipped byte inside an event fails its checksum and is reported.
        let first = &files[0].path;
        let mut bytes = std::fs::read(first).unwrap();
        let last = bytes.len() - 6;
        bytes[last] ^= 0xff;
        std::fs::write(first, bytes).unwrap();
        assert!(matches!(
            verify_dir(tmp.path()),
            Err(VerifyError::Damaged { .. })
        ));
    }
}
