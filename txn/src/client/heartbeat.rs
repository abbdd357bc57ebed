//! Heartbeats: one background thread per client keeps the primary locks of its long-running
//! transactions alive, so resolvers do not roll back a transaction that is still working.

use std::collections::HashMap;
use std::sync::Weak;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::backoff::Backoff;
use super::core::{ClientCore, age_ms};
use super::counters::bump;
use crate::{KvRequest, KvResponse};

/// The transactions to heartbeat: start_ts -> primary key.
///
/// # Invariants
/// - A transaction is registered once its primary is locked (pessimistic lock or prewrite)
///   and unregistered when it commits, rolls back or is dropped; a registered transaction
///   older than half its lock TTL gets a `TxnHeartBeat` every tick.
#[derive(Debug)]
pub(crate) struct Heartbeats {
    live: Mutex<HashMap<u64, Vec<u8>>>,
    /// Dropping this (with the client) stops the thread.
    _stop: Sender<()>,
}

impl Heartbeats {
    /// A registry and the receiver the heartbeat thread waits on.
    pub(crate) fn new() -> (Heartbeats, Receiver<()>) {
        let (stop, stopped) = crossbeam_channel::bounded(0);
        let registry = Heartbeats {
            live: Mutex::new(HashMap::new()),
            _stop: stop,
        };
        (registry, stopped)
    }

    /// Starts heartbeating transaction `start_ts` with primary `primary` (idempotent).
    pub(crate) fn register(&self, start_ts: u64, primary: &[u8]) {
        self.live
            .lock()
            .entry(start_ts)
            .or_insert_with(|| primary.to_vec());
    }

    /// Stops heartbeating transaction `start_ts`.
    pub(crate) fn unregister(&self, start_ts: u64) {
        self.live.lock().remove(&start_ts);
    }

    /// Whether transaction `start_ts` is being heartbeated.
    pub(crate) fn is_registered(&self, start_ts: u64) -> bool {
        self.live.lock().contains_key(&start_ts)
    }

    fn due(&self, lock_ttl_ms: u64) -> Vec<(u64, Vec<u8>)> {
        self.live
            .lock()
            .iter()
            .filter(|(start_ts, _)| age_ms(**start_ts) > lock_ttl_ms / 2)
            .map(|(ts, p)| (*ts, p.clone()))
            .collect()
    }
}

/// Spawns the heartbeat thread of a client. It holds only a weak reference, and exits when
/// the client's last clone is dropped (the stop channel disconnects).
pub(crate) fn spawn(core: Weak<ClientCore>, interval: Duration, stopped: Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name("surge-txn-heartbeat".to_string())
        .spawn(move || {
            loop {
                match stopped.recv_timeout(interval) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                let Some(core) = core.upgrade() else { return };
                core.heartbeat_tick();
                core.gc_hold_tick();
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "could not start the heartbeat thread; long transactions may be rolled back by others");
    }
}

impl ClientCore {
    /// Sends one heartbeat to every registered transaction older than half its lock TTL,
    /// asking for a TTL that covers its age plus the configured TTL.
    pub(crate) fn heartbeat_tick(&self) {
        for (start_ts, primary) in self.heartbeats.due(self.config.lock_ttl_ms) {
            let _span = tracing::debug_span!("txn_heartbeat", start_ts).entered();
            let mut bo = Backoff::with_budget(&self.config, self.config.heartbeat_interval / 2);
            let advise_ttl = self.lock_ttl_for(start_ts);
            let reply = self.send_key(&primary, &mut bo, |ctx| KvRequest::TxnHeartBeat {
                ctx,
                primary_key: primary.clone(),
                start_ts,
                advise_ttl,
            });
            match reply {
                Ok(KvResponse::Ttl { .. }) => bump(&self.counters.heartbeats),
                Ok(KvResponse::KeyError(e)) => {
                    // The primary lock is gone (committed meanwhile, or rolled back by a
                    // resolver): nothing left to keep alive.
                    tracing::debug!(start_ts, error = %e, "heartbeat found no lock");
                    self.heartbeats.unregister(start_ts);
                }
                Ok(other) => tracing::warn!(start_ts, ?other, "unexpected heartbeat reply"),
                Err(e) => {
                    tracing::debug!(start_ts, error = %e, "heartbeat failed; retrying next tick")
                }
            }
        }
    }
}
