//! [`Cursor`]: how far a node's stream files are durable, kept in `cursor.json` beside them.
//!
//! The writer appends a batch, fsyncs the files, then replaces the cursor (write a
//! temporary file, fsync, rename, fsync the directory). At open, bytes past the cursor
//! (a batch cut by a crash) are cut off and files it does not know are removed, so the
//! files are again exactly what the cursor's batches made, and the next batch, read again
//! from the cluster, writes the same bytes: the files are a function of the history alone.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::StreamError;

/// File name of the cursor inside the stream directory.
pub const CURSOR_FILE: &str = "cursor.json";
const CURSOR_TMP: &str = "cursor.json.tmp";
const CURSOR_VERSION: u32 = 1;

/// The stream's durable progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Format version.
    pub version: u32,
    /// Every transaction with a commit_ts at or below this is in the files; none above.
    pub done_ts: u64,
    /// The lower bound (a record timestamp) of the next read of the cluster's records.
    pub lower_record_ts: u64,
    /// The last GTID sequence number written (0: none).
    pub seq: u64,
    /// The file being appended to and its durable length; `None` after a rotation, until
    /// the next group creates file `next_file`.
    pub current: Option<(u32, u64)>,
    /// The number the next new file gets.
    pub next_file: u32,
}

impl Cursor {
    /// The cursor of an empty stream.
    pub fn genesis() -> Cursor {
        Cursor {
            version: CURSOR_VERSION,
            done_ts: 0,
            lower_record_ts: 0,
            seq: 0,
            current: None,
            next_file: 1,
        }
    }

    /// Reads `dir`'s cursor; `None` if there is none.
    ///
    /// # Errors
    /// [`StreamError::BadCursor`] when it cannot be read or parsed.
    pub fn load(dir: &Path) -> Result<Option<Cursor>, StreamError> {
        let path = dir.join(CURSOR_FILE);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StreamError::io("read", path, e)),
        };
        let c: Cursor = serde_json::from_slice(&text).map_err(|e| StreamError::BadCursor {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        if c.version != CURSOR_VERSION {
            return Err(StreamError::BadCursor {
                path,
                detail: format!("version {} (this build reads {CURSOR_VERSION})", c.version),
            });
        }
        if let Some((n, _)) = c.current
            && n >= c.next_file
        {
            return Err(StreamError::BadCursor {
                path,
                detail: format!("current file {n} is not below next file {}", c.next_file),
            });
        }
        Ok(Some(c))
    }

    /// Replaces `dir`'s cursor with `self`, durably.
    ///
    /// # Errors
    /// [`StreamError::Io`] when a step fails.
    pub fn store(&self, dir: &Path) -> Result<(), StreamError> {
        let tmp = dir.join(CURSOR_TMP);
        let text = serde_json::to_vec(self).map_err(|e| StreamError::BadCursor {
            path: tmp.clone(),
            detail: e.to_string(),
        })?;
        let mut f = fs::File::create(&tmp).map_err(|e| StreamError::io("create", &tmp, e))?;
        f.write_all(&text)
            .map_err(|e| StreamError::io("write", &tmp, e))?;
        f.sync_all()
            .map_err(|e| StreamError::io("fsync", &tmp, e))?;
        let path = dir.join(CURSOR_FILE);
        fs::rename(&tmp, &path).map_err(|e| StreamError::io("rename", &path, e))?;
        sync_dir(dir)
    }
}

/// Fsyncs a directory, so that names created, renamed or removed in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StreamError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StreamError::io("fsync", PathBuf::from(dir), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_then_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(Cursor::load(dir.path()).expect("load"), None);
        let c = Cursor {
            done_ts: 77,
            seq: 3,
            current: Some((2, 900)),
            next_file: 3,
            ..Cursor::genesis()
        };
        c.store(dir.path()).expect("store");
        assert_eq!(Cursor::load(dir.path()).expect("load"), Some(c));
    }

    #[test]
    fn damaged_cursor_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(CURSOR_FILE), b"{not json").expect("write");
        let e = Cursor::load(dir.path()).expect_err("damaged");
        assert!(e.to_string().contains("cursor.json"), "{e}");
        let bad = Cursor {
            current: Some((5, 4)),
            next_file: 5,
            ..Cursor::genesis()
        };
        fs::write(
            dir.path().join(CURSOR_FILE),
            serde_json::to_vec(&bad).expect("json"),
        )
        .expect("write");
        let e = Cursor::load(dir.path()).expect_err("contradiction");
        assert!(e.to_string().contains("current file 5"), "{e}");
    }
}
