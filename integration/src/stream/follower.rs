//! [`StreamFollower`]: a node's thread that keeps its stream files up with the cluster:
//! each round takes the cluster's watermark, reads the records committed since the last
//! round up to it, and appends them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::error::StreamError;
use super::item::StreamedTxn;
use super::published::StreamFiles;
use super::writer::StreamWriter;

/// A round's watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watermark {
    /// Every transaction that will ever commit at or below this timestamp has committed.
    pub resolved: u64,
    /// A record timestamp at or below that of every record that may still commit above
    /// `resolved`: where the next round's read starts.
    pub lower_record_ts: u64,
}

/// Where the follower reads the cluster's committed transactions (the transaction layer's
/// stream records; a test may give its own).
pub trait RecordSource: Send {
    /// The current watermark (settling what dead coordinators left, as needed).
    ///
    /// # Errors
    /// [`StreamError::Source`]: the round is retried.
    fn watermark(&mut self) -> Result<Watermark, StreamError>;

    /// Every transaction committed in `(after, upto]`, in commit_ts order, reading from
    /// record timestamp `lower_record_ts`.
    ///
    /// # Errors
    /// [`StreamError::Source`]: the round is retried.
    fn scan(
        &mut self,
        after: u64,
        upto: u64,
        lower_record_ts: u64,
    ) -> Result<Vec<StreamedTxn>, StreamError>;

    /// Tells the cluster that this copy needs no record with a record timestamp below
    /// `lower_record_ts` and holds every transaction committed at or below `done_ts`;
    /// returns the cluster's collected mark (records below it may be gone). The default
    /// tells no one and answers 0.
    ///
    /// # Errors
    /// [`StreamError::Source`]: retried.
    fn publish_position(&mut self, lower_record_ts: u64, done_ts: u64) -> Result<u64, StreamError> {
        let _ = (lower_record_ts, done_ts);
        Ok(0)
    }

    /// Deletes the records every copy has, if this source's policy makes it this node's
    /// turn; returns what it did (`None`: not its turn, or nothing to do). The default
    /// collects nothing.
    ///
    /// # Errors
    /// [`StreamError::Source`]: tried again at the next collection time.
    fn collect(&mut self) -> Result<Option<Collection>, StreamError> {
        Ok(None)
    }

    /// The stream settings in force for the cluster, claiming `mine` when there are none
    /// yet. The default keeps nothing and answers `mine` (a source of one writer).
    ///
    /// # Errors
    /// [`StreamError::Source`]: retried; [`StreamError::Layout`]: the cluster's records
    /// are another build's, the follower stops.
    fn claim_settings(&mut self, mine: &str) -> Result<String, StreamError> {
        Ok(mine.to_owned())
    }
}

/// What one collection of the cluster's stream records did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collection {
    /// The collected mark after it: records with a record timestamp below it are gone.
    pub below_record_ts: u64,
    /// Keys deleted (record chunks and external payload chunks).
    pub keys: u64,
    /// Records below the mark may remain: ask again at the next round rather than after
    /// [`FollowerConfig::collect_every`].
    pub more: bool,
}

/// Before the first round: the cluster's stream settings must be this writer's (the first
/// node to ask claims its own), since every node's copy must be the same bytes.
fn agree_settings(
    writer: &StreamWriter,
    source: &mut dyn RecordSource,
    stop: &AtomicBool,
    status: &Mutex<FollowerStatus>,
    cfg: FollowerConfig,
) -> Result<(), StreamError> {
    let mine = writer.config().shared_settings();
    match until_answered(stop, status, cfg, || source.claim_settings(&mine))? {
        Some(cluster) if cluster != mine => Err(StreamError::SettingsDiffer {
            node: mine,
            cluster,
        }),
        _ => Ok(()),
    }
}

/// Runs `f` until it does not fail with [`StreamError::Source`] (a cluster still starting:
/// each failure noted, then a pause), or until stopped (`Ok(None)`).
fn until_answered<T>(
    stop: &AtomicBool,
    status: &Mutex<FollowerStatus>,
    cfg: FollowerConfig,
    mut f: impl FnMut() -> Result<T, StreamError>,
) -> Result<Option<T>, StreamError> {
    while !stop.load(Ordering::SeqCst) {
        match f() {
            Err(e @ StreamError::Source { .. }) => {
                note_failure(status, &e);
                std::thread::sleep(cfg.retry);
            }
            other => return other.map(Some),
        }
    }
    Ok(None)
}

/// Counts a failed round (or publication, or collection) and keeps its error.
fn note_failure(status: &Mutex<FollowerStatus>, e: &StreamError) {
    let mut s = status.lock();
    s.failed_rounds += 1;
    s.last_error = Some(e.to_string());
}

/// How the follower paces itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerConfig {
    /// Time from one round's start to the next's (a round that takes longer is followed at
    /// once).
    pub interval: Duration,
    /// Pause after a failed round.
    pub retry: Duration,
    /// How often the node publishes its stream position to the cluster (what it no
    /// longer needs), so that records every copy has can be collected.
    pub publish_every: Duration,
    /// How often the node asks its source to collect (the source decides whether it is
    /// this node's turn).
    pub collect_every: Duration,
}

impl Default for FollowerConfig {
    fn default() -> Self {
        FollowerConfig {
            interval: super::config::DEFAULT_STREAM_ROUND,
            retry: Duration::from_millis(200),
            publish_every: Duration::from_secs(10),
            collect_every: Duration::from_secs(60),
        }
    }
}

/// What the follower has done (for `SHOW` commands, logs and benchmarks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowerStatus {
    /// Rounds completed.
    pub rounds: u64,
    /// Transactions appended.
    pub txns: u64,
    /// Rounds that failed (and were retried).
    pub failed_rounds: u64,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// Set when the writer failed: the follower stopped (restart the node).
    pub stopped: Option<String>,
    /// The cluster's collected mark as last seen (records below it may be gone).
    pub collected_below: u64,
    /// Keys this node's collections deleted.
    pub collected_keys: u64,
}

/// The running follower; stops when dropped.
#[derive(Debug)]
pub struct StreamFollower {
    stop: Arc<AtomicBool>,
    /// Set by the thread as it ends.
    finished: Arc<AtomicBool>,
    status: Arc<Mutex<FollowerStatus>>,
    files: Arc<StreamFiles>,
    thread: Option<JoinHandle<()>>,
}

impl StreamFollower {
    /// Starts following `source` into `writer`.
    ///
    /// # Errors
    /// When the thread cannot be spawned.
    pub fn start(
        mut writer: StreamWriter,
        mut source: Box<dyn RecordSource>,
        cfg: FollowerConfig,
    ) -> std::io::Result<StreamFollower> {
        let stop = Arc::new(AtomicBool::new(false));
        let status = Arc::new(Mutex::new(FollowerStatus::default()));
        let files = writer.files();
        let finished = Arc::new(AtomicBool::new(false));
        let (stop2, status2, finished2) = (stop.clone(), status.clone(), finished.clone());
        let thread = std::thread::Builder::new()
            .name("stream-follower".into())
            .spawn(move || {
                let _finished = SetOnDrop(finished2);
                if let Err(e) = follow(&mut writer, source.as_mut(), &stop2, &status2, cfg) {
                    let msg = e.to_string();
                    eprintln!("{msg}: the replica stream stopped on this node");
                    status2.lock().stopped = Some(msg);
                }
            })?;
        Ok(StreamFollower {
            stop,
            finished,
            status,
            files,
            thread: Some(thread),
        })
    }

    /// The readable side of the stream.
    pub fn files(&self) -> Arc<StreamFiles> {
        self.files.clone()
    }

    /// What the follower has done so far.
    pub fn status(&self) -> FollowerStatus {
        self.status.lock().clone()
    }

    /// Asks the thread to stop after its round in progress (see
    /// [`StreamFollower::stop_within`]).
    pub fn signal_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Stops the thread and waits for it (a round in progress finishes first).
    pub fn stop(&mut self) {
        self.signal_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Stops the thread and waits for it until `deadline`; returns whether it ended. A
    /// round in progress may wait on nodes that are stopping too (a whole cluster stopped
    /// at once) for as long as the coordinator's retry budget: past the deadline the thread
    /// is left to end on its own, or with the process; its files stay consistent either
    /// way (a crash point is no different).
    pub fn stop_within(&mut self, deadline: Instant) -> bool {
        self.signal_stop();
        while !self.finished.load(Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.finished.load(Ordering::SeqCst) {
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
            true
        } else {
            self.thread = None;
            false
        }
    }
}

/// Sets its flag when dropped (when the follower's thread ends, however it ends).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Drop for StreamFollower {
    fn drop(&mut self) {
        self.stop_within(Instant::now() + Duration::from_secs(2));
    }
}

/// Publishes the writer's durable position; [`StreamError::Collected`] when the cluster
/// collected records below what this copy still needs.
fn publish(
    writer: &StreamWriter,
    source: &mut dyn RecordSource,
    status: &Mutex<FollowerStatus>,
) -> Result<(), StreamError> {
    let (needed, done) = writer.stored_position();
    let collected = source.publish_position(needed, done)?;
    status.lock().collected_below = collected;
    if collected > needed {
        return Err(StreamError::Collected { needed, collected });
    }
    Ok(())
}

/// How often a node with an expiry looks for stream files to remove (more often when the
/// expiry is shorter).
const EXPIRE_EVERY: Duration = Duration::from_secs(60);

/// When the follower last published its position, last asked for a collection and last
/// expired files, and whether that collection left work for the next round.
struct Upkeep {
    published: Instant,
    collected: Instant,
    expired: Option<Instant>,
    more: bool,
}

impl Upkeep {
    fn new() -> Upkeep {
        let now = Instant::now();
        Upkeep {
            published: now,
            collected: now,
            expired: None,
            more: false,
        }
    }

    /// Carries out a `PURGE BINARY LOGS` a connection asked for, and the expiry
    /// ([`super::StreamConfig::expire_logs`]) when it is due. A file that cannot be removed
    /// is an error for the purge's client, or a line in the log for the expiry; the
    /// stream goes on.
    fn purge(writer: &mut StreamWriter) {
        let request = writer.files().purge_request.lock().take();
        if let Some((_, target, answer)) = request {
            let _ = answer.send(writer.purge(&target));
        }
    }

    fn expire(&mut self, writer: &mut StreamWriter) {
        let Some(keep) = writer.config().expire_logs else {
            return;
        };
        if self
            .expired
            .is_some_and(|at| at.elapsed() < EXPIRE_EVERY.min(keep))
        {
            return;
        }
        self.expired = Some(Instant::now());
        let Some(before) = std::time::SystemTime::now().checked_sub(keep) else {
            return;
        };
        match writer.purge(&crate::mysql::PurgeTarget::Before(before)) {
            Ok(removed) if !removed.is_empty() => {
                eprintln!(
                    "replica stream: expired {} file(s) older than {keep:?}: {} .. {}",
                    removed.len(),
                    removed[0],
                    removed[removed.len() - 1]
                );
            }
            Ok(_) => {}
            Err(e) => eprintln!("replica stream: expiry stopped: {e}"),
        }
    }

    /// Publishes and collects when they are due. A source that cannot answer is noted and
    /// tried again at the next time; only [`StreamError::Collected`] stops the follower.
    fn run(
        &mut self,
        writer: &mut StreamWriter,
        source: &mut dyn RecordSource,
        status: &Mutex<FollowerStatus>,
        cfg: FollowerConfig,
    ) -> Result<(), StreamError> {
        Upkeep::purge(writer);
        self.expire(writer);
        if self.published.elapsed() >= cfg.publish_every {
            self.published = Instant::now();
            match publish(writer, source, status) {
                Err(e @ StreamError::Source { .. }) => note_failure(status, &e),
                other => other?,
            }
        }
        if self.more || self.collected.elapsed() >= cfg.collect_every {
            self.collected = Instant::now();
            self.more = false;
            match source.collect() {
                Ok(Some(c)) => {
                    self.more = c.more;
                    let mut s = status.lock();
                    s.collected_below = s.collected_below.max(c.below_record_ts);
                    s.collected_keys += c.keys;
                }
                Ok(None) => {}
                Err(e) => note_failure(status, &e),
            }
        }
        Ok(())
    }
}

/// The follower thread's work until stopped; an error is one that stops it (the writer's,
/// different settings, records collected that this copy needs). Failed rounds are noted
/// and retried.
fn follow(
    writer: &mut StreamWriter,
    source: &mut dyn RecordSource,
    stop: &AtomicBool,
    status: &Mutex<FollowerStatus>,
    cfg: FollowerConfig,
) -> Result<(), StreamError> {
    agree_settings(writer, source, stop, status, cfg)?;
    // Once before the first round (retrying a source that cannot answer yet), so that a
    // node whose records were collected learns it before it reads.
    until_answered(stop, status, cfg, || publish(writer, source, status))?;
    let mut last_report = Instant::now() - Duration::from_secs(60);
    let mut upkeep = Upkeep::new();
    while !stop.load(Ordering::SeqCst) {
        upkeep.run(writer, source, status, cfg)?;
        // Rounds start `interval` apart, busy or not: each reads the last few seconds of
        // record keys (the skew window) on the stream's regions, so back-to-back rounds
        // under load would cost the cluster a core.
        let next = Instant::now() + cfg.interval;
        match round(writer, source) {
            Ok(n) => {
                let mut s = status.lock();
                s.rounds += 1;
                s.txns += n as u64;
                drop(s);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            Err(e @ StreamError::Source { .. }) => {
                note_failure(status, &e);
                // A cluster that is starting or losing a node fails rounds for a while; say
                // so at most every 10 s.
                if last_report.elapsed() >= Duration::from_secs(10) {
                    eprintln!("{e} (retrying)");
                    last_report = Instant::now();
                }
                std::thread::sleep(cfg.retry);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One round; returns how many transactions it appended.
fn round(writer: &mut StreamWriter, source: &mut dyn RecordSource) -> Result<usize, StreamError> {
    let wm = source.watermark()?;
    let c = writer.cursor().clone();
    if wm.resolved <= c.done_ts {
        return Ok(0);
    }
    let txns = source.scan(c.done_ts, wm.resolved, c.lower_record_ts)?;
    writer.append(&txns, wm.resolved, wm.lower_record_ts)?;
    Ok(txns.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamConfig;

    /// A cluster whose stream settings another build of the transaction layer claimed.
    struct OtherLayout {
        claims: usize,
    }

    impl RecordSource for OtherLayout {
        fn watermark(&mut self) -> Result<Watermark, StreamError> {
            Err(StreamError::Source {
                detail: "not reached".into(),
            })
        }

        fn scan(&mut self, _: u64, _: u64, _: u64) -> Result<Vec<StreamedTxn>, StreamError> {
            Err(StreamError::Source {
                detail: "not reached".into(),
            })
        }

        fn claim_settings(&mut self, _mine: &str) -> Result<String, StreamError> {
            self.claims += 1;
            Err(StreamError::Layout {
                detail: "layout 1 found, 2 read".into(),
            })
        }
    }

    /// A source error is retried until the cluster answers; a layout error is final: the
    /// follower stops at the first answer instead of retrying for good.
    #[test]
    fn settings_of_another_layout_stop_the_follower_at_once() {
        let dir = tempfile::tempdir().expect("dir");
        let writer = StreamWriter::open(StreamConfig::new(dir.path())).expect("writer");
        let mut source = OtherLayout { claims: 0 };
        let status = Mutex::new(FollowerStatus::default());
        let r = agree_settings(
            &writer,
            &mut source,
            &AtomicBool::new(false),
            &status,
            FollowerConfig::default(),
        );
        assert!(matches!(r, Err(StreamError::Layout { .. })), "{r:?}");
        assert_eq!(source.claims, 1);
    }
}
