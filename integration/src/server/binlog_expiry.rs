//! The node's binlog expiry thread: removes the coordinator's binlog files (`DATA/binlog`)
//! last written more than a given time ago, as MariaDB's `binlog_expire_logs_seconds`
//! does, through [`TxnClient::purge_binlog_before`](surge_txn::TxnClient::purge_binlog_before)
//! (never the current file, nor one the binlog's recovery could still need).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use super::coordinator::NodeCoordinator;

/// The longest pause between two checks (a shorter `keep` checks every `keep`).
const MAX_CHECK_EVERY: Duration = Duration::from_secs(60);

/// Starts the thread for node `id`: every `min(keep, 60 s)` it removes the files last
/// written more than `keep` ago. It ends once `stop` is set or the coordinator is dropped.
pub(super) fn spawn(
    id: u64,
    coordinator: Weak<NodeCoordinator>,
    keep: Duration,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let every = keep.clamp(Duration::from_secs(1), MAX_CHECK_EVERY);
    std::thread::Builder::new()
        .name("surgedb-binlog-expiry".into())
        .spawn(move || {
            let mut next = Instant::now() + every;
            loop {
                while Instant::now() < next {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                next = Instant::now() + every;
                let Some(coordinator) = coordinator.upgrade() else {
                    return;
                };
                // Not open yet (recovery runs first): the next round tries again.
                let Ok(client) = coordinator.client() else {
                    continue;
                };
                let before = SystemTime::now()
                    .checked_sub(keep)
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                match client.purge_binlog_before(before) {
                    Ok(gone) if gone.is_empty() => {}
                    Ok(gone) => eprintln!(
                        "surgedb node {id}: binlog files expired: {}",
                        gone.join(", ")
                    ),
                    Err(e) => eprintln!(
                        "surgedb node {id}: binlog expiry failed (tried again next round): {e}"
                    ),
                }
            }
        })
}
