//! The file operations the WAL needs, behind a trait so tests can run it on a simulated
//! disk that loses unsynced bytes and tears the last write on a crash.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fs2::FileExt;
use parking_lot::Mutex;

/// An append-only file handle.
pub trait WalFile: Send + std::fmt::Debug {
    /// Appends `buf`.
    ///
    /// # Errors
    /// I/O errors.
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable (`fdatasync`).
    ///
    /// # Errors
    /// I/O errors; the caller must then treat the file's state as unknown.
    fn sync(&mut self) -> io::Result<()>;
}

/// A held directory lock; released when dropped.
pub trait DirLock: Send + std::fmt::Debug {}

/// The file system under a [`crate::Wal`]: the real one ([`StdFs`]) or a simulated one
/// ([`MemFs`]).
pub trait WalFs: Send + Sync + std::fmt::Debug {
    /// Creates `dir` and its parents.
    ///
    /// # Errors
    /// I/O errors.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Takes the exclusive lock of `dir`; `Ok(None)` if another owner holds it.
    ///
    /// # Errors
    /// I/O errors.
    fn lock(&self, dir: &Path) -> io::Result<Option<Box<dyn DirLock>>>;
    /// Names of the files in `dir`.
    ///
    /// # Errors
    /// I/O errors.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// The whole content of a file.
    ///
    /// # Errors
    /// I/O errors.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates a new, empty file for appending (fails if it exists).
    ///
    /// # Errors
    /// I/O errors.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WalFile>>;
    /// Cuts a file to `len` bytes and syncs it.
    ///
    /// # Errors
    /// I/O errors.
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()>;
    /// Deletes a file.
    ///
    /// # Errors
    /// I/O errors.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Replaces `path` atomically and durably: write a temporary, sync, rename, sync dir.
    ///
    /// # Errors
    /// I/O errors.
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// Makes `dir`'s entries (creations, renames, deletions) durable.
    ///
    /// # Errors
    /// I/O errors.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system (`std::fs`, `fdatasync`, `fs2` locks).
#[derive(Debug, Clone, Copy, Default)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(File);

impl WalFile for StdFile {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

#[derive(Debug)]
struct StdLock(#[allow(dead_code)] File); // Held for its lock; released on drop.

impl DirLock for StdLock {}

impl WalFs for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }
    fn lock(&self, dir: &Path) -> io::Result<Option<Box<dyn DirLock>>> {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("LOCK"))?;
        if f.try_lock_exclusive().is_err() {
            return Ok(None);
        }
        Ok(Some(Box::new(StdLock(f))))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut v = Vec::new();
        for e in fs::read_dir(dir)? {
            v.push(e?.file_name().to_string_lossy().into_owned());
        }
        Ok(v)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let f = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)?;
        Ok(Box::new(StdFile(f)))
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let f = OpenOptions::new().write(true).open(path)?;
        f.set_len(len)?;
        f.sync_all()
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        self.sync_dir(path.parent().unwrap_or(Path::new(".")))
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

#[derive(Debug, Default)]
struct MemFile {
    data: Vec<u8>,
    synced: usize,
}

#[derive(Debug, Default)]
struct MemState {
    files: BTreeMap<PathBuf, MemFile>,
    locks: BTreeSet<PathBuf>,
    fail_next_sync: bool,
    /// Removals allowed before removals start failing (a crash in the middle of them).
    removes_left: Option<usize>,
}

/// A simulated disk for tests: appended bytes are volatile until synced;
/// [`MemFs::crash`] keeps the synced prefix of every file and a random part of the unsynced
/// tail (a torn write), and releases the locks. [`MemFs::fail_next_sync`] makes the next
/// sync fail, as a crash in the middle of `fdatasync`. Directory operations are durable at
/// once (the WAL syncs the directory after each of them).
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<MemState>>,
}

#[derive(Debug)]
struct MemFileHandle {
    fs: MemFs,
    path: PathBuf,
}

#[derive(Debug)]
struct MemLock {
    fs: MemFs,
    dir: PathBuf,
}

impl DirLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.fs.state.lock().locks.remove(&self.dir);
    }
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, p.display().to_string())
}

impl MemFs {
    /// An empty simulated disk.
    pub fn new() -> MemFs {
        MemFs::default()
    }

    /// Simulates a power loss under `dir`: each file keeps its synced bytes plus the first
    /// `tear(unsynced_len)` unsynced bytes; locks under `dir` are released.
    pub fn crash(&self, dir: &Path, mut tear: impl FnMut(usize) -> usize) {
        let mut s = self.state.lock();
        for (p, f) in s.files.iter_mut() {
            if p.starts_with(dir) {
                let unsynced = f.data.len() - f.synced;
                let keep = f.synced + tear(unsynced).min(unsynced);
                f.data.truncate(keep);
                f.synced = keep;
            }
        }
        s.locks.retain(|l| !l.starts_with(dir));
        s.fail_next_sync = false;
        s.removes_left = None;
    }

    /// Makes the next sync fail (the caller should then crash).
    pub fn fail_next_sync(&self) {
        self.state.lock().fail_next_sync = true;
    }

    /// Lets `n` more file removals succeed, then fails every further one (the caller
    /// should then crash), as a process dying in the middle of deleting files.
    pub fn fail_removes_after(&self, n: usize) {
        self.state.lock().removes_left = Some(n);
    }
}

impl WalFile for MemFileHandle {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.fs.state.lock();
        let f = s
            .files
            .get_mut(&self.path)
            .ok_or_else(|| not_found(&self.path))?;
        f.data.extend_from_slice(buf);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        let mut s = self.fs.state.lock();
        if std::mem::take(&mut s.fail_next_sync) {
            return Err(io::Error::other("simulated fsync failure"));
        }
        let f = s
            .files
            .get_mut(&self.path)
            .ok_or_else(|| not_found(&self.path))?;
        f.synced = f.data.len();
        Ok(())
    }
}

impl WalFs for MemFs {
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
    fn lock(&self, dir: &Path) -> io::Result<Option<Box<dyn DirLock>>> {
        let mut s = self.state.lock();
        if !s.locks.insert(dir.to_path_buf()) {
            return Ok(None);
        }
        Ok(Some(Box::new(MemLock {
            fs: self.clone(),
            dir: dir.to_path_buf(),
        })))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let s = self.state.lock();
        Ok(s.files
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let s = self.state.lock();
        s.files
            .get(path)
            .map(|f| f.data.clone())
            .ok_or_else(|| not_found(path))
    }
    fn create(&self, path: &Path) -> io::Result<Box<dyn WalFile>> {
        let mut s = self.state.lock();
        if s.files.contains_key(path) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                path.display().to_string(),
            ));
        }
        s.files.insert(path.to_path_buf(), MemFile::default());
        Ok(Box::new(MemFileHandle {
            fs: self.clone(),
            path: path.to_path_buf(),
        }))
    }
    fn truncate(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        let f = s.files.get_mut(path).ok_or_else(|| not_found(path))?;
        f.data.truncate(len as usize);
        f.synced = f.data.len();
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        match s.removes_left {
            Some(0) => return Err(io::Error::other("simulated crash while removing")),
            Some(n) => s.removes_left = Some(n - 1),
            None => {}
        }
        s.files
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        if std::mem::take(&mut s.fail_next_sync) {
            return Err(io::Error::other("simulated fsync failure"));
        }
        s.files.insert(
            path.to_path_buf(),
            MemFile {
                data: data.to_vec(),
                synced: data.len(),
            },
        );
        Ok(())
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}
