//! [`CoordinatorBinlog`]: the binlog a coordinator owns, and [`BinlogStep`], one
//! transaction's way through it at commit (see the crate README, "Binlog at commit").
//!
//! Order of a commit with a binlog:
//! 1. prepare: register with the [`Sequencer`], append the prepare record to the journal
//!    and fsync it (TiDB Binlog's prewrite binlog);
//! 2. prewrite, take `commit_ts`, commit the primary (the commit point), or commit in one
//!    phase;
//! 3. wait for the sequencer, commit the transaction's cache to the MariaDB binlog (its
//!    group: GTID, row events, Xid = `start_ts`; by rename when it is large; for a hot-row
//!    group, one such transaction per member instead, Xid = the member's reserved xid, all
//!    in one batch: one binlog group commit), then a settled record (TiDB's commit binlog);
//! 4. commit the secondaries and answer.
//!
//! The group is written only once the primary is committed, so nothing rolled back ever
//! reaches the binlog, and before the answer, so every acknowledged commit is there. A
//! crash between 2 and 3 leaves a prepare without a group: recovery settles it from the
//! primary's status.

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;
use surge_binlog::{Binlog, CommitInfo};

use super::binlog_config::BinlogOptions;
use super::binlog_crash::{crash_point, txn_crash_points};
use super::binlog_journal::{Journal, MemberRow, Prepared, RowChange};
use super::binlog_recovery::BinlogRecoveryReport;
use super::binlog_sequencer::Sequencer;
use super::binlog_txn::{BinlogTxn, take_hot_members};
use super::core::ClientCore;
use super::error::TxnError;
use super::stream_commit::build_record;
use super::two_pc::{CommitPlan, StopAt};

/// The binlog of one coordinator: the MariaDB log, the prepare journal and the sequencer.
#[derive(Debug)]
pub(crate) struct CoordinatorBinlog {
    pub(crate) log: Binlog,
    pub(crate) journal: Journal,
    seq: Sequencer,
    /// Why the binlog stopped taking commits (a failed write, an outcome left in doubt).
    stopped: Mutex<Option<String>>,
    /// What recovery did when the coordinator started.
    pub(crate) recovery: Mutex<BinlogRecoveryReport>,
}

/// Whether a client has a binlog.
#[derive(Debug)]
pub(crate) enum BinlogSlot {
    /// No binlog configured.
    Off,
    /// The coordinator's binlog.
    On(Arc<CoordinatorBinlog>),
    /// Configured but could not be opened: every commit fails (none may go unlogged).
    Failed(String),
}

impl BinlogSlot {
    /// The binlog, `None` if there is none; an error if it is configured but unusable.
    pub(crate) fn get(&self) -> Result<Option<&Arc<CoordinatorBinlog>>, TxnError> {
        match self {
            BinlogSlot::Off => Ok(None),
            BinlogSlot::On(b) => Ok(Some(b)),
            BinlogSlot::Failed(reason) => Err(TxnError::Binlog {
                detail: format!("binlog could not be opened: {reason}"),
            }),
        }
    }

    /// A fresh transaction state if the client has a usable binlog.
    pub(crate) fn new_txn(&self) -> Option<BinlogTxn> {
        match self {
            BinlogSlot::On(b) => Some(BinlogTxn::new(b.log.new_cache())),
            _ => None,
        }
    }
}

fn binlog_err(what: &str, e: surge_binlog::Error) -> TxnError {
    TxnError::Binlog {
        detail: format!("{what}: {e}"),
    }
}

impl CoordinatorBinlog {
    /// Opens the binlog (its own recovery runs) and the journal; returns the prepares a
    /// previous run left unsettled, for [`ClientCore::recover_binlog`].
    ///
    /// # Errors
    /// [`TxnError::Binlog`] for bad options, a directory held by another writer, damage,
    /// I/O errors.
    pub(crate) fn open(
        opts: &BinlogOptions,
    ) -> Result<(Arc<CoordinatorBinlog>, Vec<Prepared>), TxnError> {
        let log = Binlog::open(opts.binlog_config()).map_err(|e| binlog_err("open", e))?;
        let (journal, pending) = Journal::open(&opts.dir)?;
        let b = CoordinatorBinlog {
            log,
            journal,
            seq: Sequencer::default(),
            stopped: Mutex::new(None),
            recovery: Mutex::new(BinlogRecoveryReport::default()),
        };
        Ok((Arc::new(b), pending))
    }

    /// Fails if the binlog stopped.
    pub(crate) fn check(&self) -> Result<(), TxnError> {
        match &*self.stopped.lock() {
            Some(reason) => Err(TxnError::Binlog {
                detail: format!("binlog stopped: {reason}; restart the coordinator"),
            }),
            None => Ok(()),
        }
    }

    /// Stops taking commits: a transaction's outcome is unknown or its group could not be
    /// written, and writing later conflicting groups first could break the order. The
    /// next open settles what is open (fail-stop, as `surge-binlog` does after a failed
    /// write).
    pub(crate) fn stop(&self, reason: &str) {
        tracing::error!(reason, "coordinator binlog stopped");
        self.stopped
            .lock()
            .get_or_insert_with(|| reason.to_string());
        self.seq.stop(reason);
    }

    /// Writes a hot-row group's members on `key`, in arrival order, as one binlog
    /// transaction each (an Update_rows to the member's value, Xid = the member's xid),
    /// skipping those whose xid is in `logged` (recovery after a crash that left only some
    /// of them in the binlog). The members go to `surge-binlog` as one batch
    /// ([`Binlog::commit_many`]): contiguous, in one binlog group commit and one fsync,
    /// whatever their number.
    pub(crate) fn write_members(
        &self,
        key: &[u8],
        members: &[MemberRow],
        logged: &BTreeSet<u64>,
    ) -> Result<(), TxnError> {
        let mut batch = Vec::with_capacity(members.len());
        for m in members.iter().filter(|m| !logged.contains(&m.xid)) {
            let mut cache = self.log.new_cache();
            match &m.events {
                // The member's own row event (a SQL table's Update_rows).
                Some(events) => cache.push_encoded(events),
                None => cache.update(key, &m.after),
            }
            .map_err(|e| binlog_err("member cache", e))?;
            batch.push((cache, m.xid));
        }
        self.log
            .commit_many(batch)
            .map_err(|e| binlog_err("commit members", e))?;
        Ok(())
    }

    /// Writes `cache` (caller-given events of no key: DDL, or rows of a transaction that
    /// wrote no key) as a group of its own with xid `xid` (a fresh oracle timestamp, so
    /// unique), outside the commit protocol: there is nothing in the store to settle.
    pub(crate) fn write_standalone(
        &self,
        cache: surge_binlog::TxnCache,
        xid: u64,
    ) -> Result<CommitInfo, TxnError> {
        self.check()?;
        self.log
            .commit(cache, xid)
            .map_err(|e| binlog_err("commit", e))
    }

    /// Commits `txn`'s cache as the group of transaction `start_ts`.
    pub(crate) fn write_group(
        &self,
        cache: surge_binlog::TxnCache,
        start_ts: u64,
    ) -> Result<CommitInfo, TxnError> {
        self.log
            .commit(cache, start_ts)
            .map_err(|e| binlog_err("commit", e))
    }
}

/// Where one transaction is in its binlog step.
#[derive(Debug)]
enum StepState {
    /// The client has no binlog.
    Off,
    /// Prepared: registered, prepare record durable, group not written.
    Prepared {
        binlog: Arc<CoordinatorBinlog>,
        /// Boxed: the state is moved through the commit path and mostly not `Prepared`.
        txn: Option<Box<BinlogTxn>>,
        /// A hot-row group's key and members (logged one transaction each, in one batch),
        /// else `None`.
        hot: Option<Box<(Vec<u8>, Vec<MemberRow>)>>,
        ticket: u64,
        start_ts: u64,
    },
    /// The group is in the binlog.
    Written,
}

/// One transaction's binlog step through its commit (a no-op without a binlog).
#[derive(Debug)]
pub(crate) struct BinlogStep {
    state: StepState,
    /// The transaction's encoded stream record, built at prepare, until the commit takes it
    /// (`stream_commit.rs`).
    stream: Option<Vec<u8>>,
}

impl BinlogStep {
    /// The step of a commit without a binlog group.
    pub(crate) fn off() -> BinlogStep {
        BinlogStep {
            state: StepState::Off,
            stream: None,
        }
    }

    /// The encoded stream record built at prepare, if any (taken once).
    pub(crate) fn take_stream_record(&mut self) -> Option<Vec<u8>> {
        self.stream.take()
    }
}

impl ClientCore {
    /// Step 1 of a commit with a binlog: registers `plan` with the sequencer and makes its
    /// prepare record durable, before anything is prewritten.
    ///
    /// # Errors
    /// [`TxnError::Binlog`]: the binlog is unusable or the journal write failed; nothing was
    /// prewritten.
    pub(crate) fn binlog_prepare(
        &self,
        plan: &CommitPlan,
        txn: Option<BinlogTxn>,
    ) -> Result<BinlogStep, TxnError> {
        let Some(binlog) = self.binlog.get()? else {
            return Ok(BinlogStep::off());
        };
        binlog.check()?;
        // A prepare while the client's GC hold is not set would not be covered by it (a
        // client made with `TxnClient::new` sets it on its first heartbeat tick; a
        // released one never again).
        if self.config.gc_hold.is_some()
            && !matches!(
                *self.gc_hold_state.lock(),
                super::gc_hold::HoldState::SetAt(_)
            )
        {
            return Err(TxnError::Binlog {
                detail: "the coordinator's GC hold is not set (TxnClient::open sets it; \
                         release_gc_hold removes it for good)"
                    .to_string(),
            });
        }
        let mut txn = txn.ok_or_else(|| TxnError::Binlog {
            detail: "transaction has no binlog cache".to_string(),
        })?;
        // The caller's events (SQL rows, DDL), kept with the prepare so recovery can write
        // them; a transaction logging kv rows rebuilds them from the store instead.
        let events = txn.caller_events()?;
        let keys: BTreeSet<Vec<u8>> = plan
            .mutations
            .iter()
            .map(|(m, _)| m.key().to_vec())
            .collect();
        let members = take_hot_members(plan.start_ts);
        let changes = txn.changes();
        // A hot-row group is one update of one existing key; its members are logged in place
        // of its cache, so they must describe exactly that change.
        if !members.is_empty() && changes != [(plan.primary.clone(), RowChange::Update)] {
            return Err(TxnError::Binlog {
                detail: format!(
                    "txn {}: hot-row members given for a transaction that is not one update",
                    plan.start_ts
                ),
            });
        }
        // The stream record carries what the binlog group will: the same events.
        let stream = if self.config.stream.enabled {
            build_record(binlog, &mut txn, events.as_deref(), &plan.primary, &members)?
        } else {
            None
        };
        let pos = binlog.log.current_position();
        let record = Prepared {
            start_ts: plan.start_ts,
            primary: plan.primary.clone(),
            keys: keys.iter().cloned().collect(),
            changes,
            binlog_file: pos.file,
            binlog_offset: pos.offset,
            members: members.clone(),
            events,
        };
        let ticket = binlog.seq.register(Arc::new(keys));
        if let Err(e) = binlog.journal.prepare(&record) {
            binlog.seq.finish(ticket);
            return Err(e);
        }
        crash_point(txn_crash_points::AFTER_PREPARE);
        Ok(BinlogStep {
            state: StepState::Prepared {
                binlog: Arc::clone(binlog),
                txn: Some(Box::new(txn)),
                hot: (!members.is_empty()).then(|| Box::new((plan.primary.clone(), members))),
                ticket,
                start_ts: plan.start_ts,
            },
            stream,
        })
    }
}

impl BinlogStep {
    /// Step 3, right after the commit point: waits for the transaction's turn, writes its
    /// group, settles its prepare record.
    ///
    /// # Errors
    /// [`TxnError::Undetermined`] if the group could not be written: the transaction is
    /// committed in the store but not yet in the binlog, so the binlog stops and the next
    /// open of the coordinator writes the group.
    pub(crate) fn committed(&mut self, commit_ts: u64) -> Result<(), TxnError> {
        let StepState::Prepared {
            binlog,
            txn,
            hot,
            ticket,
            start_ts,
        } = &mut self.state
        else {
            return Ok(());
        };
        crash_point(txn_crash_points::AFTER_PRIMARY_COMMIT);
        let start_ts = *start_ts;
        let written = binlog.seq.wait_turn(*ticket).and_then(|()| {
            let cache = txn
                .take()
                .map(|t| t.into_cache())
                .ok_or_else(|| TxnError::Binlog {
                    detail: "binlog cache already used".to_string(),
                })?;
            if let Some((key, members)) = hot.as_deref() {
                // Still within the transaction's turn: no conflicting group comes between.
                binlog.write_members(key, members, &BTreeSet::new())
            } else {
                binlog.write_group(cache, start_ts).map(|_| ())
            }
        });
        match written {
            Ok(()) => {
                tracing::debug!(
                    start_ts,
                    commit_ts,
                    members = hot.as_ref().map_or(0, |h| h.1.len()),
                    "binlog group written"
                );
                crash_point(txn_crash_points::AFTER_BINLOG);
                // A lost settled record only makes recovery find the group in the binlog.
                if let Err(e) = binlog.journal.settle(start_ts) {
                    tracing::warn!(start_ts, error = %e, "journal settle failed");
                }
                binlog.seq.finish(*ticket);
                self.state = StepState::Written;
                Ok(())
            }
            Err(e) => {
                let reason =
                    format!("group of txn {start_ts} (committed at {commit_ts}) not written: {e}");
                binlog.stop(&reason);
                Err(TxnError::Undetermined {
                    start_ts,
                    detail: format!(
                        "committed in the store; {reason}; the coordinator's next start writes it"
                    ),
                })
            }
        }
    }

    /// Ends the step after the commit returned `result` (with test stop point `stop`) and
    /// returns what the caller gets: a definite failure settles the prepare as not
    /// committed; an outcome in doubt (or a simulated crash) stops the binlog so that
    /// recovery settles it. An `Ok` whose group was not written (a path that skipped
    /// [`BinlogStep::committed`]) is turned into [`TxnError::Undetermined`]: no commit is
    /// acknowledged without its group.
    pub(crate) fn finish(
        self,
        result: Result<u64, TxnError>,
        stop: StopAt,
    ) -> Result<u64, TxnError> {
        let StepState::Prepared {
            binlog,
            ticket,
            start_ts,
            ..
        } = self.state
        else {
            if result.is_ok() && stop == StopAt::Never {
                crash_point(txn_crash_points::BEFORE_ACK);
            }
            return result;
        };
        if stop != StopAt::Never {
            binlog.stop(&format!("txn {start_ts}: coordinator crash simulated"));
            return result;
        }
        match result {
            Err(e) if !matches!(e, TxnError::Undetermined { .. }) => {
                if let Err(e) = binlog.journal.settle(start_ts) {
                    tracing::warn!(start_ts, error = %e, "journal settle failed");
                }
                binlog.seq.finish(ticket);
                Err(e)
            }
            Err(e) => {
                binlog.stop(&format!("txn {start_ts}: outcome unknown"));
                Err(e)
            }
            Ok(commit_ts) => {
                let reason = format!("txn {start_ts} committed at {commit_ts} without its group");
                binlog.stop(&reason);
                Err(TxnError::Undetermined {
                    start_ts,
                    detail: reason,
                })
            }
        }
    }
}

/// Opens the binlog of `opts` (if any) for a new client: the slot, and the prepares to
/// settle once the client exists ([`ClientCore::recover_binlog_slot`]).
pub(crate) fn open_slot(opts: Option<&BinlogOptions>) -> (BinlogSlot, Vec<Prepared>) {
    let Some(opts) = opts else {
        return (BinlogSlot::Off, Vec::new());
    };
    match CoordinatorBinlog::open(opts) {
        Ok((b, pending)) => (BinlogSlot::On(b), pending),
        Err(e) => {
            tracing::error!(error = %e, dir = %opts.dir.display(), "binlog not opened");
            (BinlogSlot::Failed(e.to_string()), Vec::new())
        }
    }
}

impl ClientCore {
    /// Settles `pending` into this client's binlog; a failure stops the binlog (every
    /// commit fails until a restart settles them).
    pub(crate) fn recover_binlog_slot(&self, pending: Vec<Prepared>) {
        let BinlogSlot::On(b) = &self.binlog else {
            return;
        };
        match self.recover_binlog(b, pending) {
            Ok(report) => *b.recovery.lock() = report,
            Err(e) => b.stop(&format!("recovery failed: {e}")),
        }
    }
}
