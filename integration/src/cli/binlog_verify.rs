//! `surgedb binlog verify DIR`: every binlog file under a cluster directory, a node's data
//! directory or a binlog directory read back, and optionally by `mariadb-binlog`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use surge_binlog::{BINLOG_MAGIC, CACHE_DIR_NAME, EventBody, FileEvents};

/// One binlog file read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedFile {
    /// The file.
    pub path: PathBuf,
    /// Its events, every checksum verified.
    pub events: u64,
    /// Its transactions (GTID events).
    pub transactions: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether `mariadb-binlog --verify-binlog-checksum` read it too (exit status 0).
    pub mariadb_checked: bool,
}

/// Whether `mariadb-binlog` reads the files too (also `binlog verify --mariadb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MariadbCheck {
    /// When `mariadb-binlog` is installed (on `PATH`).
    #[default]
    Auto,
    /// Always: verification fails if it is not installed.
    Require,
    /// Never.
    Off,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// What kind of directory it was.
    pub kind: DirKind,
    /// Every binlog file, in path order.
    pub files: Vec<VerifiedFile>,
    /// Whether `mariadb-binlog` read the files.
    pub mariadb: bool,
}

/// What kind of directory was verified (from the files that mark each kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirKind {
    /// A `surgedb cluster start` directory (`cluster.json` and `node-N/` directories).
    Cluster,
    /// A node's data directory (`LOCK`, `raft/`, `binlog/`).
    NodeData,
    /// A binlog directory (`surge-bin.index`).
    Binlog,
    /// Any other directory, searched for binlog files.
    Other,
}

impl DirKind {
    /// A short description.
    pub fn describe(self) -> &'static str {
        match self {
            DirKind::Cluster => "cluster directory",
            DirKind::NodeData => "node data directory",
            DirKind::Binlog => "binlog directory",
            DirKind::Other => "directory",
        }
    }
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
    /// A file was given where a directory is wanted.
    #[error(
        "{} is a file, not a directory: `binlog verify` reads every binlog file under a \
         directory; to read this one file run `surgedb binlog dump {}` (it verifies every \
         checksum too)",
        path.display(),
        path.display()
    )]
    NotADirectory {
        /// The file.
        path: PathBuf,
    },
    /// A binlog file did not read back.
    #[error("{} is damaged{}: {detail}", path.display(), offset.map(|o| format!(" at byte offset {o}")).unwrap_or_default())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The byte offset of the bad event, when the reader names one.
        offset: Option<u64>,
        /// What the reader said.
        detail: String,
    },
    /// `mariadb-binlog` refused a file.
    #[error("mariadb-binlog --verify-binlog-checksum refused {}: {detail}", path.display())]
    MariadbRefused {
        /// The file.
        path: PathBuf,
        /// Its exit status and the end of its error output.
        detail: String,
    },
    /// `mariadb-binlog` was required but could not be run.
    #[error(
        "mariadb-binlog could not be run ({detail}); install mariadb-client or drop --mariadb require"
    )]
    MariadbMissing {
        /// Why.
        detail: String,
    },
    /// No binlog file was found.
    #[error("no binlog file under {} ({})", dir.display(), kind.describe())]
    NoFiles {
        /// The directory.
        dir: PathBuf,
        /// What kind it was.
        kind: DirKind,
    },
}

/// Reads every binlog file under `dir` (recursively; a binlog file is one starting with
/// the magic `fe 62 69 6e`; the spill files in `#binlog_cache_files/` are skipped) back
/// with `surge-binlog`'s [`FileEvents`] reader, which verifies every event's CRC-32. Files
/// are visited in path order.
///
/// # Errors
/// [`VerifyError::NotADirectory`] if `dir` is a file; [`VerifyError::Damaged`] for the
/// first file that does not read back whole.
pub fn verify_dir(dir: &Path) -> Result<Vec<VerifiedFile>, VerifyError> {
    if dir.is_file() {
        return Err(VerifyError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for path in files {
        if starts_with_magic(&path)? {
            out.push(read_back(path)?);
        }
    }
    Ok(out)
}

/// [`verify_dir`], then (per `mariadb`) every file through `mariadb-binlog
/// --verify-binlog-checksum`; fails when no binlog file is found at all.
///
/// # Errors
/// As [`verify_dir`]; [`VerifyError::NoFiles`], [`VerifyError::MariadbRefused`],
/// [`VerifyError::MariadbMissing`].
pub fn verify(dir: &Path, mariadb: MariadbCheck) -> Result<VerifyReport, VerifyError> {
    let kind = kind_of(dir);
    let mut files = verify_dir(dir)?;
    if files.is_empty() {
        return Err(VerifyError::NoFiles {
            dir: dir.to_path_buf(),
            kind,
        });
    }
    let run = match mariadb {
        MariadbCheck::Off => false,
        MariadbCheck::Require => true,
        MariadbCheck::Auto => mariadb_binlog_installed(),
    };
    if run {
        for f in &mut files {
            mariadb_read(&f.path)?;
            f.mariadb_checked = true;
        }
    }
    Ok(VerifyReport {
        kind,
        files,
        mariadb: run,
    })
}

/// Whether `mariadb-binlog` can be run.
pub fn mariadb_binlog_installed() -> bool {
    Command::new("mariadb-binlog")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn kind_of(dir: &Path) -> DirKind {
    if dir.join("surge-bin.index").is_file() {
        DirKind::Binlog
    } else if dir.join("raft").is_dir() || dir.join("LOCK").is_file() {
        DirKind::NodeData
    } else if dir.join("cluster.json").is_file() {
        DirKind::Cluster
    } else {
        DirKind::Other
    }
}

fn read_back(path: PathBuf) -> Result<VerifiedFile, VerifyError> {
    let damaged = |e: surge_binlog::Error| VerifyError::Damaged {
        path: path.clone(),
        offset: match &e {
            surge_binlog::Error::Corrupt { offset, .. }
            | surge_binlog::Error::NotEventBoundary { offset, .. } => Some(*offset),
            _ => None,
        },
        detail: e.to_string(),
    };
    let mut reader = FileEvents::open(&path).map_err(damaged)?;
    let (mut events, mut transactions) = (0, 0);
    while let Some((_, event)) = reader.next_event().map_err(damaged)? {
        events += 1;
        if matches!(event.body, EventBody::Gtid(_)) {
            transactions += 1;
        }
    }
    Ok(VerifiedFile {
        bytes: reader.file_len(),
        path,
        events,
        transactions,
        mariadb_checked: false,
    })
}

/// Reads `path` with `mariadb-binlog --verify-binlog-checksum`.
pub(crate) fn mariadb_read(path: &Path) -> Result<(), VerifyError> {
    // Only the exit status and stderr matter: the decoded dump (as large as the file, or
    // more) is thrown away instead of held in memory.
    let out = Command::new("mariadb-binlog")
        .arg("--verify-binlog-checksum")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| VerifyError::MariadbMissing {
            detail: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(VerifyError::MariadbRefused {
        path: path.to_path_buf(),
        detail: format!(
            "{}: {}",
            out.status,
            stderr.trim().lines().last().unwrap_or("no error output")
        ),
    })
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
            // Transaction caches that spilled are not binlog files (one renamed into the
            // log is, once renamed, and then lives beside the others).
            if entry.file_name() != CACHE_DIR_NAME {
                collect(&entry.path(), files)?;
            }
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
        assert_eq!(files.iter().map(|f| f.transactions).sum::<u64>(), 3);
        let report = verify(&dir, MariadbCheck::Off).unwrap();
        assert_eq!(report.kind, DirKind::Binlog);

        // A flipped byte inside an event fails its checksum and is reported with its
        // file and offset.
        let first = &files[0].path;
        let mut bytes = std::fs::read(first).unwrap();
        let last = bytes.len() - 6;
        bytes[last] ^= 0xff;
        std::fs::write(first, bytes).unwrap();
        match verify_dir(tmp.path()) {
            Err(
                e @ VerifyError::Damaged {
                    offset: Some(_), ..
                },
            ) => {
                let text = e.to_string();
                assert!(text.contains(&first.display().to_string()), "{text}");
                assert!(text.contains("at byte offset"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_directory_without_binlog_files_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("cluster.json"), b"{}").unwrap();
        assert!(matches!(
            verify(tmp.path(), MariadbCheck::Off),
            Err(VerifyError::NoFiles {
                kind: DirKind::Cluster,
                ..
            })
        ));
    }
}
