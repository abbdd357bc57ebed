//! [`NodeCoordinator`]: a node's own transaction coordinator (the txn crate's
//! [`TxnClient`] with its binlog under the data directory), opened in the background.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use surge_raft_lite::NodeId;
use surge_txn::{ClientConfig, TxnClient, rpc::NodeRouter};

use super::join_by::join_by;
use crate::wire::{CoordinatorState, TxnFailure};

/// How long the opener waits between two failed attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

enum Slot {
    Recovering {
        attempts: u64,
        last_error: Option<String>,
    },
    Ready(TxnClient),
    Stopped,
}

/// A node's transaction coordinator.
///
/// Opening it ([`TxnClient::open`]) opens the binlog and its prepare journal and settles the
/// transactions a previous run of this node left in doubt, asking each one's primary for
/// its status: that needs the cluster, which may not be up yet when the node starts (its
/// peers restart too, or are down). So the node does not wait for it: a background thread
/// tries until it succeeds, and until then every transaction operation is refused with
/// [`TxnFailure::NotReady`] (nothing runs, the caller may go to another node). Refusing is
/// what keeps the binlog right: a new transaction committed before recovery could conflict
/// with an in-doubt one that recovery will log later, out of commit order.
///
/// A failed attempt's client is dropped (releasing the binlog directory's lock) before the
/// next one: the binlog's exactly-once rule (a prepare whose xid is already logged is not
/// logged again) makes a retry after a partial recovery safe.
pub struct NodeCoordinator {
    node: NodeId,
    binlog_dir: Option<PathBuf>,
    slot: Mutex<Slot>,
    stop: AtomicBool,
    /// The background opener, awaited by [`NodeCoordinator::shutdown`].
    opener: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for NodeCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCoordinator")
            .field("node", &self.node)
            .field("state", &self.state())
            .finish()
    }
}

impl NodeCoordinator {
    /// Starts opening node `node`'s coordinator over `router` with `config` in a
    /// background thread, and returns at once.
    ///
    /// # Errors
    /// If the thread cannot be spawned.
    pub fn start(
        node: NodeId,
        router: Arc<dyn NodeRouter>,
        config: ClientConfig,
    ) -> std::io::Result<Arc<NodeCoordinator>> {
        let me = Arc::new(NodeCoordinator {
            node,
            binlog_dir: config.binlog.as_ref().map(|b| b.dir.clone()),
            slot: Mutex::new(Slot::Recovering {
                attempts: 0,
                last_error: None,
            }),
            stop: AtomicBool::new(false),
            opener: Mutex::new(None),
        });
        let opener = me.clone();
        let handle = std::thread::Builder::new()
            .name("coordinator-open".into())
            .spawn(move || opener.open_until_ready(&router, &config))?;
        *me.opener.lock() = Some(handle);
        Ok(me)
    }

    fn open_until_ready(&self, router: &Arc<dyn NodeRouter>, config: &ClientConfig) {
        let mut attempts = 0u64;
        while !self.stop.load(Ordering::SeqCst) {
            attempts += 1;
            match TxnClient::open(router.clone(), config.clone()) {
                Ok(client) => {
                    let report = client.binlog_recovery().unwrap_or_default();
                    eprintln!(
                        "surgedb node {}: transaction coordinator ready (binlog {}; recovery: {} already logged, {} logged now, {} rolled back; attempt {attempts})",
                        self.node,
                        self.binlog_dir
                            .as_ref()
                            .map_or_else(|| "off".to_string(), |d| d.display().to_string()),
                        report.already_logged.len(),
                        report.logged_now.len(),
                        report.rolled_back.len(),
                    );
                    let mut slot = self.slot.lock();
                    if matches!(*slot, Slot::Stopped) {
                        drop(slot);
                        // Stopped while this attempt ran: close what it opened, as
                        // `shutdown` does (`close_binlog` reports a failure).
                        let _ = close_binlog(self.node, &client);
                        return;
                    }
                    *slot = Slot::Ready(client);
                    return;
                }
                Err(e) => {
                    eprintln!(
                        "surgedb node {}: transaction coordinator not ready (attempt {attempts}): {e}; retrying",
                        self.node
                    );
                    {
                        let mut slot = self.slot.lock();
                        if matches!(*slot, Slot::Stopped) {
                            return;
                        }
                        *slot = Slot::Recovering {
                            attempts,
                            last_error: Some(e.to_string()),
                        };
                    }
                    let paused = Instant::now();
                    while paused.elapsed() < RETRY_PAUSE && !self.stop.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
    }

    /// The coordinator, once ready.
    ///
    /// # Errors
    /// [`TxnFailure::NotReady`] while recovery runs or after [`NodeCoordinator::shutdown`].
    pub fn client(&self) -> Result<TxnClient, TxnFailure> {
        match &*self.slot.lock() {
            Slot::Ready(c) => Ok(c.clone()),
            Slot::Recovering {
                attempts,
                last_error,
            } => Err(TxnFailure::NotReady {
                node: self.node,
                detail: match last_error {
                    Some(e) => format!(
                        "opening (settling a previous run's in-doubt transactions, setting the GC hold), attempt {attempts} failed: {e}"
                    ),
                    None => "opening (settling a previous run's in-doubt transactions, setting the GC hold)".into(),
                },
            }),
            Slot::Stopped => Err(TxnFailure::NotReady {
                node: self.node,
                detail: "the node is stopping".into(),
            }),
        }
    }

    /// Where the coordinator stands.
    pub fn state(&self) -> CoordinatorState {
        match &*self.slot.lock() {
            Slot::Ready(c) => {
                let r = c.binlog_recovery().unwrap_or_default();
                let n = |v: &Vec<u64>| u64::try_from(v.len()).unwrap_or(u64::MAX);
                CoordinatorState::Ready {
                    binlog_dir: self.binlog_dir.as_ref().map(|d| d.display().to_string()),
                    recovered_already_logged: n(&r.already_logged),
                    recovered_logged_now: n(&r.logged_now),
                    recovered_rolled_back: n(&r.rolled_back),
                }
            }
            Slot::Recovering {
                attempts,
                last_error,
            } => CoordinatorState::Recovering {
                attempts: *attempts,
                last_error: last_error.clone(),
            },
            Slot::Stopped => CoordinatorState::Recovering {
                attempts: 0,
                last_error: Some("the node is stopping".into()),
            },
        }
    }

    /// Stops taking transactions, closes the binlog (its file fsynced and marked closed, so
    /// the next start has nothing to recover), and waits until `deadline` for a background
    /// opening to give up. An opening still inside an attempt after that closes what it
    /// opened when the attempt ends, if the process lives that long; a node process exits
    /// first, and its next start recovers the binlog as after a crash.
    ///
    /// Call it once no session runs a transaction any more ([`super::KvServer::shutdown`]
    /// returned 0): a commit still running would find the binlog closed and fail, leaving
    /// its transaction to the next start's recovery, as a crash would.
    ///
    /// # Errors
    /// The binlog's close error, also reported on stderr (as when the opener closes what it
    /// opened after the stop); the next start then recovers the binlog as after a crash.
    pub fn shutdown(&self, deadline: Instant) -> Result<(), surge_binlog::Error> {
        self.stop.store(true, Ordering::SeqCst);
        let previous = std::mem::replace(&mut *self.slot.lock(), Slot::Stopped);
        let closed = match &previous {
            Slot::Ready(client) => close_binlog(self.node, client),
            Slot::Recovering { .. } | Slot::Stopped => Ok(()),
        };
        drop(previous);
        let opener = self.opener.lock().take();
        if let Some(opener) = opener {
            join_by(opener, deadline);
        }
        closed
    }
}

/// Closes node `node`'s coordinator `client`'s binlog, if it has one (see
/// [`NodeCoordinator::shutdown`]), and says on stderr if that failed: the one place that
/// reports it, whichever of `shutdown` and the opener closes the binlog.
fn close_binlog(node: NodeId, client: &TxnClient) -> Result<(), surge_binlog::Error> {
    let closed = client
        .binlog()
        .map_or(Ok(()), surge_binlog::Binlog::shutdown);
    match &closed {
        Err(e) => {
            eprintln!("surgedb node {node}: the coordinator's binlog did not close cleanly: {e}");
        }
        // Closed with nothing in doubt: the GC hold has nothing left to keep, and would
        // otherwise hold the cluster's garbage collection back until its TTL.
        Ok(()) => {
            if let Err(e) = client.release_gc_hold() {
                eprintln!(
                    "surgedb node {node}: the coordinator's GC hold was not removed (it lapses after its TTL): {e}"
                );
            }
        }
    }
    closed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{RemoteConfig, TcpRouter};
    use surge_txn::BinlogOptions;

    /// An attempt that fails (here: the binlog directory is held by another writer) is
    /// retried in the background, transactions are refused meanwhile, and the coordinator
    /// becomes ready once the cause is gone.
    #[test]
    fn a_failed_open_is_retried_and_transactions_wait_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let binlog = dir.path().join("binlog");
        let holder = surge_binlog::Binlog::open(surge_binlog::BinlogConfig::new(&binlog)).unwrap();
        let router: Arc<dyn NodeRouter> =
            Arc::new(TcpRouter::new(Vec::new(), &RemoteConfig::default()).unwrap());
        let config = ClientConfig::default()
            .with_binlog(Some(BinlogOptions::new(&binlog).with_server_id(7)));
        let coordinator = NodeCoordinator::start(7, router, config).unwrap();
        let start = std::time::Instant::now();
        while !matches!(
            coordinator.state(),
            CoordinatorState::Recovering { attempts: 2.., .. }
        ) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{:?}",
                coordinator.state()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        match coordinator.client() {
            Err(TxnFailure::NotReady { node: 7, detail }) => {
                assert!(detail.contains("failed"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        holder.shutdown().unwrap();
        drop(holder);
        while coordinator.client().is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{:?}",
                coordinator.state()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(matches!(
            coordinator.state(),
            CoordinatorState::Ready {
                recovered_logged_now: 0,
                ..
            }
        ));
        coordinator
            .shutdown(Instant::now() + Duration::from_secs(5))
            .unwrap();
        assert!(coordinator.client().is_err());
    }
}
