//! File names, the index file (`<base>.index`, one `./<name>` per line, as MariaDB writes
//! it) and directory fsync.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Name of binlog file number `n`: `<base>.000001`.
pub(crate) fn file_name(base: &str, n: u32) -> String {
    format!("{base}.{n:06}")
}

/// The number of a binlog file name of this base, if it is one.
pub(crate) fn file_number(base: &str, name: &str) -> Option<u32> {
    let rest = name.strip_prefix(base)?.strip_prefix('.')?;
    if rest.len() >= 6 && rest.bytes().all(|b| b.is_ascii_digit()) {
        rest.parse().ok()
    } else {
        None
    }
}

/// Fsyncs a directory so created, renamed and deleted names in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("fsync directory", dir, e))?;
    crate::iotrace::note("fsync-dir", &dir.join("."));
    Ok(())
}

/// Fsyncs a file by path (data and size).
pub(crate) fn sync_file(path: &Path) -> Result<()> {
    let len = crate::iotrace::len_before_sync(path);
    File::open(path)
        .and_then(|f| f.sync_data())
        .map_err(|e| Error::io("fsync", path, e))?;
    crate::iotrace::note_sync("fdatasync", path, len);
    Ok(())
}

/// The index: the ordered list of binlog files.
#[derive(Debug)]
pub(crate) struct Index {
    path: PathBuf,
    dir: PathBuf,
    pub(crate) files: Vec<String>,
    /// The file had a torn or zeroed line: it must be rewritten before appending.
    pub(crate) damaged: bool,
}

impl Index {
    /// Path of the index file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Index {
    /// Reads the index of `base` in `dir` (empty if absent).
    pub(crate) fn load(dir: &Path, base: &str) -> Result<Index> {
        let path = dir.join(format!("{base}.index"));
        let mut files = Vec::new();
        let mut damaged = false;
        match std::fs::read(&path) {
            Ok(bytes) => {
                // A power cut can leave the last appended line cut short (no newline) or
                // as zeros: such a line is skipped and the index marked damaged, so
                // recovery rewrites it (the file it named, if any, is adopted). Zeros
                // alone count too: the next append would otherwise start its line with
                // them, a name MariaDB's tools could not open.
                let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                damaged = complete < bytes.len();
                let text = String::from_utf8_lossy(&bytes[..complete]);
                for raw in text.lines() {
                    let line = raw.trim_matches(|c: char| c == '\0' || c.is_whitespace());
                    if line.is_empty() {
                        damaged |= !raw.is_empty();
                        continue;
                    }
                    let name = line.trim_start_matches("./");
                    let name = name.rsplit('/').next().unwrap_or(name);
                    if file_number(base, name).is_none() {
                        return Err(Error::Invalid {
                            what: "index entry",
                            detail: format!(
                                "{line:?} in {} is not a {base}.NNNNNN name",
                                path.display()
                            ),
                        });
                    }
                    files.push(name.to_string());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("read", &path, e)),
        }
        if damaged {
            tracing::warn!("{}: skipping a torn last line", path.display());
        }
        Ok(Index {
            path,
            dir: dir.to_path_buf(),
            files,
            damaged,
        })
    }

    /// Appends one name and fsyncs the index.
    pub(crate) fn append(&mut self, name: &str) -> Result<()> {
        self.append_unsynced(name)?;
        self.sync()
    }

    /// Appends one name without fsync; [`Index::sync`] must follow before anything that
    /// depends on the entry is acknowledged. (If it is lost, recovery adopts the file.)
    pub(crate) fn append_unsynced(&mut self, name: &str) -> Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::io("open", &self.path, e))?;
        f.write_all(format!("./{name}\n").as_bytes())
            .map_err(|e| Error::io("write", &self.path, e))?;
        let len = crate::iotrace::len_before_sync(&self.path);
        crate::iotrace::note_sync("append", &self.path, len);
        self.files.push(name.to_string());
        Ok(())
    }

    /// Fsyncs the index file. Safe to call without the log lock.
    pub(crate) fn sync(&self) -> Result<()> {
        sync_file(&self.path)
    }

    /// Replaces the index atomically (temp file, fsync, rename, directory fsync).
    pub(crate) fn rewrite(&mut self, files: Vec<String>) -> Result<()> {
        let tmp = self.path.with_extension("index_tmp");
        let mut text = String::new();
        for f in &files {
            text.push_str("./");
            text.push_str(f);
            text.push('\n');
        }
        let mut f = File::create(&tmp).map_err(|e| Error::io("create", &tmp, e))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io("write", &tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io("rename", &tmp, e))?;
        sync_dir(&self.dir)?;
        self.files = files;
        self.damaged = false;
        Ok(())
    }
}
