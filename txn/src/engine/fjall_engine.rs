//! [`FjallEngine`]: one node's data on disk, shared by all its regions (TiKV's layout).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use parking_lot::Mutex;

use super::cf::Cf;
use super::error::EngineError;
use super::fjall_options::FjallOptions;
use super::fjall_region::FjallRegion;
use super::key_codec::split_ts;
use super::newest_writes::NewestWrites;

/// The key of the identity record in the `regions` keyspace (region records are keyed by
/// `b'r'` and the region id, so the two never meet).
const IDENTITY_KEY: &[u8] = b"identity";

/// The key of the newest commit timestamp noted by [`NewestWrites`] as of the last region
/// checkpoint, 8 bytes big-endian: the index's floor after a restart. Every write record
/// on disk is either at most it or after its region's last checkpoint, so replayed (and
/// noted again) at the restart. The stored value only grows (`commit_checkpoint`).
const NEWEST_WRITE_KEY: &[u8] = b"newest-write";

/// Whose engine directory this is: a node refuses a directory of another cluster or node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineIdentity {
    /// The cluster's id.
    pub cluster_id: String,
    /// The node's id.
    pub node_id: u64,
}

impl EngineIdentity {
    /// Node `node_id` of cluster `cluster_id`.
    pub fn new(cluster_id: impl Into<String>, node_id: u64) -> EngineIdentity {
        EngineIdentity {
            cluster_id: cluster_id.into(),
            node_id,
        }
    }

    fn encode(&self) -> String {
        format!("{}/{}", self.cluster_id, self.node_id)
    }
}

/// A node's disk engine: one fjall database holding every region's data, keyed by user key
/// (encoded) in three keyspaces (`lock`, `write`, `default`), and each region's record
/// (range, state, applied index, size) in a fourth (`regions`).
///
/// # Invariants
/// - A region's record (with its applied index) is written only at a checkpoint, in one
///   atomic fjall batch with the region's locks as of that index (the lock column family
///   lives in the view's memory between checkpoints; see [`FjallRegion`]): after a crash,
///   the locks are exactly as of the recorded index and the write and default column
///   families at or after it, and replaying the log after it (blind writes only) is exact.
/// - Each batch reaches the operating system before [`crate::Engine::write`] returns (fjall's
///   journal is written per batch), so a killed process loses nothing written; a power
///   loss loses what [`FjallEngine::persist`] did not sync, which the Raft log (synced
///   before any entry applies) replays.
/// - At most one [`FjallRegion`] view per region id lives at a time.
pub struct FjallEngine {
    pub(super) db: Database,
    pub(super) lock: Keyspace,
    pub(super) write: Keyspace,
    pub(super) default: Keyspace,
    pub(super) regions: Keyspace,
    path: PathBuf,
    views: Mutex<HashMap<u64, Weak<FjallRegion>>>,
    /// [`FjallOptions::max_write_buffer_bytes`].
    max_write_buffer: u64,
    /// Per key, a bound of its newest write record (see `newest_writes.rs`); written by
    /// every region's apply and snapshot apply before the records they write.
    pub(super) newest_writes: NewestWrites,
    /// Held from reading the newest timestamp to committing it (`commit_checkpoint`).
    floor_commit: Mutex<()>,
}

impl std::fmt::Debug for FjallEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallEngine")
            .field("path", &self.path)
            .finish()
    }
}

/// The longest one write waits in [`FjallEngine::throttle`].
const WRITE_STALL_MAX: std::time::Duration = std::time::Duration::from_secs(5);

impl FjallEngine {
    /// Opens (or creates) the engine in `path` for `identity`.
    ///
    /// # Errors
    /// [`EngineError::Open`] naming the directory when fjall cannot open it (damaged or
    /// unreadable files, a directory locked by a running node) or `options` are invalid;
    /// [`EngineError::Identity`] when it belongs to another cluster or node.
    pub fn open(
        path: impl AsRef<Path>,
        identity: &EngineIdentity,
        options: FjallOptions,
    ) -> Result<Arc<FjallEngine>, EngineError> {
        let path = path.as_ref().to_path_buf();
        options.validate()?;
        let open_err = |e: fjall::Error| EngineError::Open {
            path: path.display().to_string(),
            detail: describe(&e),
        };
        std::fs::create_dir_all(&path).map_err(|e| EngineError::Open {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        let db = Database::builder(&path)
            .cache_size(options.cache_bytes)
            .max_journaling_size(options.max_journal_bytes)
            .worker_threads(options.worker_threads)
            .open()
            .map_err(open_err)?;
        let memtable = options.memtable_bytes;
        let ks = |name: &str| {
            db.keyspace(name, || {
                KeyspaceCreateOptions::default().max_memtable_size(memtable)
            })
            .map_err(open_err)
        };
        let mut engine = FjallEngine {
            lock: ks(Cf::Lock.as_str())?,
            write: ks(Cf::Write.as_str())?,
            default: ks(Cf::Default.as_str())?,
            regions: ks("regions")?,
            db,
            path: path.clone(),
            views: Mutex::new(HashMap::new()),
            max_write_buffer: options.max_write_buffer_bytes,
            newest_writes: NewestWrites::new(u64::MAX, options.newest_write_keys),
            floor_commit: Mutex::new(()),
        };
        let ours = identity.encode();
        match engine.regions.get(IDENTITY_KEY).map_err(open_err)? {
            Some(found) if found.as_ref() != ours.as_bytes() => {
                return Err(EngineError::Identity {
                    path: path.display().to_string(),
                    expected: ours,
                    found: String::from_utf8_lossy(&found).into_owned(),
                });
            }
            Some(_) => {}
            None => {
                engine
                    .regions
                    .insert(IDENTITY_KEY, ours.as_bytes())
                    .map_err(open_err)?;
                engine.db.persist(PersistMode::SyncAll).map_err(open_err)?;
                // A new directory holds no write record.
                engine.newest_writes = NewestWrites::new(0, options.newest_write_keys);
                return Ok(Arc::new(engine));
            }
        }
        // A directory written before the key existed leaves the floor unknown (`u64::MAX`:
        // every conflict check seeks, as before). It stays so for that directory: its
        // checkpoints write the unknown floor back (finding the newest record would take a
        // read of the whole write keyspace).
        if let Some(found) = engine.regions.get(NEWEST_WRITE_KEY).map_err(open_err)? {
            let bytes: [u8; 8] = found.as_ref().try_into().map_err(|_| EngineError::Open {
                path: format!("{} (newest write timestamp)", path.display()),
                detail: format!("{} bytes where 8 were expected", found.len()),
            })?;
            engine.newest_writes =
                NewestWrites::new(u64::from_be_bytes(bytes), options.newest_write_keys);
        }
        Ok(Arc::new(engine))
    }

    /// The engine's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The view of region `id`, covering `[start, end)` (user keys; empty `end`: to the end
    /// of the key space) unless the engine holds a record of the region, whose range wins.
    /// A second call for a region whose view still lives returns that view.
    ///
    /// # Errors
    /// [`EngineError::Open`] when the region's record cannot be read or decoded.
    pub fn region(
        self: &Arc<Self>,
        id: u64,
        start: &[u8],
        end: &[u8],
    ) -> Result<Arc<FjallRegion>, EngineError> {
        let mut views = self.views.lock();
        if let Some(view) = views.get(&id).and_then(Weak::upgrade) {
            return Ok(view);
        }
        let view = FjallRegion::open(self.clone(), id, start, end)?;
        views.retain(|_, v| v.strong_count() > 0);
        views.insert(id, Arc::downgrade(&view));
        Ok(view)
    }

    /// The view of region `id` if one lives.
    pub(super) fn live_view(&self, id: u64) -> Option<Arc<FjallRegion>> {
        self.views.lock().get(&id).and_then(Weak::upgrade)
    }

    /// Whether the lock keyspace holds `key` (tests: what a checkpoint wrote).
    #[cfg(test)]
    pub(crate) fn lock_on_disk(&self, key: &[u8]) -> bool {
        self.lock.get(key).ok().flatten().is_some()
    }

    /// Registers a view made by a split (see [`FjallRegion`]'s `split_region`).
    pub(super) fn register(&self, id: u64, view: &Arc<FjallRegion>) {
        self.views.lock().insert(id, Arc::downgrade(view));
    }

    /// Forgets region `id`'s record (the region left this node or merged away); its data,
    /// keyed by user key, stays for whichever region now covers it.
    ///
    /// # Errors
    /// [`EngineError::Io`] when the write fails.
    pub fn remove_region(&self, id: u64) -> Result<(), EngineError> {
        self.regions
            .remove(FjallRegion::record_key(id))
            .map_err(|e| io("remove region record", &e))
    }

    /// Makes every batch written so far survive a power loss (fsyncs the journal).
    ///
    /// # Errors
    /// [`EngineError::Io`] when the sync fails.
    pub fn persist(&self) -> Result<(), EngineError> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(|e| io("persist", &e))
    }

    /// Waits while the memtables hold more than [`FjallOptions::max_write_buffer_bytes`],
    /// so writes cannot outrun the flushes and memory stays bounded; gives up after
    /// [`WRITE_STALL_MAX`] (logged) rather than stop the caller for good.
    ///
    /// Region leaders call it before they propose a write (`Engine::throttle_writes`),
    /// as TiKV's flow control sits in its scheduler: applies never wait, since an apply
    /// waiting here stalled every region of the node's Raft thread (splits of 10-225 ms
    /// while the flushes of a snapshot just applied ran). Nor does a snapshot's apply:
    /// throttled, the apply of a 9 GiB region took 85.9 s against 17.8 s, and its peak
    /// memory was no lower (+3.7 GiB for the process; one run each), so that memory is not
    /// memtables.
    pub(super) fn throttle(&self) {
        if self.db.write_buffer_size() <= self.max_write_buffer {
            return;
        }
        let started = std::time::Instant::now();
        while self.db.write_buffer_size() > self.max_write_buffer {
            if started.elapsed() >= WRITE_STALL_MAX {
                tracing::warn!(
                    buffered = self.db.write_buffer_size(),
                    limit = self.max_write_buffer,
                    "memtables still over the limit after a write stall; writing anyway"
                );
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        tracing::debug!(
            waited_ms = started.elapsed().as_millis() as u64,
            "write stall"
        );
    }

    /// Bytes the engine takes on disk (tables and journals).
    pub fn disk_bytes(&self) -> u64 {
        self.db.disk_space().unwrap_or(0)
    }

    /// Notes write column family keys (with their timestamps) in [`NewestWrites`] before
    /// they are written; a key that does not decode raises its floor for good.
    pub(super) fn note_writes<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) {
        let mut bad = false;
        self.newest_writes
            .note(keys.into_iter().filter_map(|key| match split_ts(key) {
                Ok(pair) => Some(pair),
                Err(_) => {
                    bad = true;
                    None
                }
            }));
        if bad {
            self.newest_writes.raise_floor(u64::MAX);
        }
    }

    /// Commits `batch`, which holds a region's record (a checkpoint), with the index's
    /// newest timestamp (see [`NEWEST_WRITE_KEY`]).
    ///
    /// The timestamp is read and the batch committed under one lock, so the stored value
    /// only grows: two checkpoints of different regions (the Raft thread's and a
    /// compaction's, on another thread) could otherwise commit in the other order than
    /// they read it, and a stale floor land after a newer one whose region no longer
    /// replays the records above it.
    pub(super) fn commit_checkpoint(
        &self,
        mut batch: fjall::OwnedWriteBatch,
    ) -> Result<(), fjall::Error> {
        let _ordered = self.floor_commit.lock();
        batch.insert(
            &self.regions,
            NEWEST_WRITE_KEY,
            self.newest_writes.newest().to_be_bytes(),
        );
        batch.commit()
    }

    /// The keyspace of a column family.
    pub(super) fn cf(&self, cf: Cf) -> &Keyspace {
        match cf {
            Cf::Lock => &self.lock,
            Cf::Write => &self.write,
            Cf::Default => &self.default,
        }
    }
}

/// A fjall error in words (fjall's own `Display` prints its `Debug` form).
pub(super) fn describe(e: &fjall::Error) -> String {
    match e {
        fjall::Error::Io(io) => format!("i/o error: {io}"),
        fjall::Error::Storage(s) => format!("storage error: {s}"),
        fjall::Error::JournalRecovery(r) => format!("journal recovery failed: {r:?}"),
        fjall::Error::InvalidVersion(v) => format!("unknown data format version {v:?}"),
        fjall::Error::Decompress(c) => format!("decompression failed ({c:?})"),
        fjall::Error::InvalidTrailer => "invalid journal trailer".into(),
        fjall::Error::InvalidTag((what, tag)) => format!("invalid tag {tag} in {what}"),
        fjall::Error::Poisoned => "a previous write failed; the engine refuses writes".into(),
        fjall::Error::KeyspaceDeleted => "keyspace deleted".into(),
        fjall::Error::Locked => "locked by another process (a node already running?)".into(),
        fjall::Error::Unrecoverable => "unrecoverable (see the log)".into(),
        other => format!("{other:?}"),
    }
}

/// A fjall error of operation `what` as an [`EngineError::Io`].
pub(super) fn io(what: &'static str, e: &fjall::Error) -> EngineError {
    EngineError::Io {
        what,
        detail: describe(e),
    }
}
