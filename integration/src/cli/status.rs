//! `surgedb cluster status`: every node's regions, roles, epochs, lock tables and counters,
//! and where its transaction coordinator stands.

use std::io::Write;
use std::path::{Path, PathBuf};

use surge_raft_lite::NodeId;
use surge_txn::rpc::NodeStatusReport;

use super::connect::{ConnectError, connect_dir};
use crate::ClientOptions;
use crate::client::{ClientError, unreached_reason};
use crate::dump::escaped;
use crate::local::ClusterManifest;
use crate::wire::CoordinatorState;

/// Why `cluster status` failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The directory could not be read, or connecting failed for another reason than every
    /// node being down.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// No node answered (each is printed as DOWN).
    #[error(
        "no node answers: the cluster in {} is stopped; run `surgedb cluster start --data {}`",
        dir.display(),
        dir.display()
    )]
    NoneAnswers {
        /// The cluster directory.
        dir: PathBuf,
    },
    /// Writing the output failed.
    #[error("output: {0}")]
    Output(#[from] std::io::Error),
}

/// `surgedb cluster status --data DIR`: every node's report, a node that does not answer
/// as DOWN with the reason, and how to start the nodes that are down.
///
/// # Errors
/// [`StatusError::NoneAnswers`] (after printing every node as DOWN) when no node answers;
/// [`StatusError::Connect`] if `dir` is not a cluster directory.
pub fn cluster_status(dir: &Path, out: &mut impl Write) -> Result<(), StatusError> {
    let (manifest, client) = match connect_dir(dir, ClientOptions::default()) {
        Ok(c) => c,
        Err(ConnectError::NotRunning { nodes, .. }) => {
            let manifest = ClusterManifest::load(dir).map_err(ConnectError::from)?;
            writeln!(out, "cluster {}", manifest.cluster_id)?;
            let reports: Vec<NodeReport> = nodes
                .into_iter()
                .map(|(id, u)| {
                    let down = || ClientError::Service(u.error.clone());
                    (id, u.addr.clone(), Err(down()), Err(down()))
                })
                .collect();
            print_status(&reports, out)?;
            return Err(StatusError::NoneAnswers {
                dir: dir.to_path_buf(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let reports: Vec<NodeReport> = manifest
        .nodes
        .iter()
        .map(|n| {
            (
                n.id,
                n.addr.clone(),
                client.node_status(n.id),
                client.coordinator_state(n.id),
            )
        })
        .collect();
    writeln!(out, "cluster {}", manifest.cluster_id)?;
    print_status(&reports, out)?;
    print_sql_lines(&manifest, out)?;
    let down: Vec<NodeId> = reports
        .iter()
        .filter(|r| r.2.is_err())
        .map(|r| r.0)
        .collect();
    if !down.is_empty() {
        writeln!(
            out,
            "DOWN: node{} {}; run `surgedb cluster start --data {}` to start {} again \
             (running nodes are left alone)",
            if down.len() == 1 { "" } else { "s" },
            down.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            dir.display(),
            if down.len() == 1 { "it" } else { "them" }
        )?;
    }
    Ok(())
}

/// One line per node that serves MySQL: the `mariadb` command that connects to it.
fn print_sql_lines(manifest: &ClusterManifest, out: &mut impl Write) -> std::io::Result<()> {
    for n in &manifest.nodes {
        if let Some(line) = manifest.mariadb_command(n.id) {
            writeln!(out, "node {} SQL: {line}", n.id)?;
        }
    }
    Ok(())
}

/// Why a node could not be asked, naming its address once and no placeholder node id.
fn down_text(addr: &str, e: &ClientError) -> String {
    match e {
        ClientError::Service(s) => unreached_reason(addr, s),
        other => other.to_string(),
    }
}

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
            Err(e) => writeln!(out, "node {node} at {addr}: DOWN ({})", down_text(addr, e))?,
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
                let ranges: Vec<String> = r
                    .regions
                    .iter()
                    .map(|s| key_range(&s.region.start, &s.region.end))
                    .collect();
                let width = ranges
                    .iter()
                    .map(String::len)
                    .chain([RANGE_HEADER.len()])
                    .max()
                    .unwrap_or(0);
                writeln!(
                    out,
                    "  region  {RANGE_HEADER:<width$}  epoch leader   term  applied  mem locks  \
                     mem bytes  lock table"
                )?;
                for (s, range) in r.regions.iter().zip(&ranges) {
                    let leader = s.leader.map_or("-".to_string(), |l| {
                        if s.is_leader {
                            format!("{l}*")
                        } else {
                            l.to_string()
                        }
                    });
                    writeln!(
                        out,
                        "  {:>6}  {:<width$} {:>6} {:>6} {:>6} {:>8} {:>10} {:>10}  {}",
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
    if reports.iter().any(|r| r.2.is_ok()) {
        writeln!(
            out,
            "(keys: the region's key range, from its first key to the first key past it, \
             -inf/+inf for the ends of the key space, bytes outside printable ASCII as \\xNN; \
             leader: * marks the node answering; epoch: version/conf_ver)"
        )?;
    }
    Ok(())
}

/// The key-range column's header.
const RANGE_HEADER: &str = "keys [start, end)";

/// A region's keys as `[start, end)`, escaped as the binlog dump prints keys (and spaces as
/// `\x20`), with `-inf` and `+inf` for the empty start and end keys (the ends of the key
/// space).
fn key_range(start: &[u8], end: &[u8]) -> String {
    let bound = |key: &[u8], empty: &str| {
        if key.is_empty() {
            empty.to_string()
        } else {
            // Unquoted here, so a space would not show: it is escaped too.
            escaped(key).replace(' ', "\\x20")
        }
    };
    format!("[{}, {})", bound(start, "-inf"), bound(end, "+inf"))
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

#[cfg(test)]
mod tests {
    use super::key_range;

    #[test]
    fn key_ranges_print_whole_keys_with_the_ends_of_the_key_space_named() {
        let cases: [(&[u8], &[u8], &str); 4] = [
            (b"", &[0x10], "[-inf, \\x10)"),
            (&[0x10], &[0x20], "[\\x10, \\x20)"),
            (&[0xf0], b"", "[\\xf0, +inf)"),
            (b"stock/42", b"stock/9", "[stock/42, stock/9)"),
        ];
        for (start, end, want) in cases {
            assert_eq!(key_range(start, end), want);
        }
    }
}
