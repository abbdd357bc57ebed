//! `surgedb cluster status`: every node's regions, roles, epochs, lock tables and counters,
//! and where its transaction coordinator stands.

use std::io::Write;

use surge_raft_lite::NodeId;
use surge_txn::rpc::NodeStatusReport;

use crate::client::ClientError;
use crate::wire::CoordinatorState;

/// What `cluster status` learned of one node: its id, address, status report and
/// coordinator state (or why each could not be had).
pub type NodeReport = (
    NodeId,
    String,
    Result<NodeStatusReport, ClientError>,
    Result<CoordinatorState, ClientError>,
);

/// Prints each node's report (or why it could not be asked) as labelled tables.
///
/// # Errors
/// Only if `out` fails.
pub fn print_status(reports: &[NodeReport], out: &mut impl Write) -> std::io::Result<()> {
    for (node, addr, report, coordinator) in reports {
        match report {
            Err(e) => writeln!(out, "node {node} at {addr}: DOWN ({e})")?,
            Ok(r) => {
                let led = r.regions.iter().filter(|s| s.is_leader).count();
                writeln!(
                    out,
                    "node {node} at {addr}: up, lock mode {}, leads {led} of {} regions, \
                     in-memory locks {} bytes",
                    r.lock_mode,
                    r.regions.len(),
                    r.memory_lock_bytes
                )?;
                writeln!(out, "  coordinator: {}", coordinator_text(coordinator))?;
                writeln!(
                    out,
                    "  region     range  epoch leader   term  applied  mem locks  mem bytes  lock table"
                )?;
                for s in &r.regions {
                    let range = format!(
                        "{}..{}",
                        s.region
                            .start
                            .first()
                            .map_or(String::new(), |b| format!("{b:02x}")),
                        s.region
                            .end
                            .first()
                            .map_or(String::new(), |b| format!("{b:02x}"))
                    );
                    let leader = s.leader.map_or("-".to_string(), |l| {
                        if s.is_leader {
                            format!("{l}*")
                        } else {
                            l.to_string()
                        }
                    });
                    writeln!(
                        out,
                        "  {:>6} {:>9} {:>6} {:>6} {:>6} {:>8} {:>10} {:>10}  {}",
                        s.region.id,
                        range,
                        format!("{}/{}", s.region.epoch.version, s.region.epoch.conf_ver),
                        leader,
                        s.term,
                        s.applied,
                        s.memory_locks,
                        s.memory_lock_bytes,
                        s.lock_status
                    )?;
                }
                let c = &r.counters;
                writeln!(
                    out,
                    "  counters: proposals {}, raft bytes {} (locks {}), in-memory locks {} \
                     (fell back: full {}, not writable {}, stale {}), migrated on transfer {} / \
                     split {} / merge {}, lost with leadership {}, lock waits {} (timeouts {}), \
                     deadlocks {}, one-phase commits {}",
                    c.proposals,
                    c.raft_bytes,
                    c.lock_raft_bytes,
                    c.in_memory_success,
                    c.in_memory_full,
                    c.in_memory_not_writable,
                    c.in_memory_stale,
                    c.locks_migrated_on_transfer,
                    c.locks_migrated_on_split,
                    c.locks_migrated_on_merge,
                    c.locks_lost_on_leader_loss,
                    c.lock_waits,
                    c.lock_wait_timeouts,
                    c.deadlocks,
                    c.one_pc
                )?;
            }
        }
    }
    writeln!(
        out,
        "(leader: * marks the node answering; epoch: version/conf_ver)"
    )
}

/// One line on a node's transaction coordinator.
fn coordinator_text(state: &Result<CoordinatorState, ClientError>) -> String {
    match state {
        Err(e) => format!("unknown ({e})"),
        Ok(CoordinatorState::Ready {
            binlog_dir,
            recovered_already_logged,
            recovered_logged_now,
            recovered_rolled_back,
        }) => format!(
            "ready, binlog {}; recovery at start: {recovered_already_logged} already logged, \
             {recovered_logged_now} logged, {recovered_rolled_back} rolled back",
            binlog_dir.as_deref().unwrap_or("off")
        ),
        Ok(CoordinatorState::Recovering {
            attempts,
            last_error,
        }) => format!(
            "RECOVERING (attempt {attempts}{}): transactions refused until the cluster answers",
            last_error
                .as_deref()
                .map_or(String::new(), |e| format!(", last error: {e}"))
        ),
    }
}
