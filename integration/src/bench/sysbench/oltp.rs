//! SurgeDB beside MariaDB on sysbench's own OLTP workloads: `oltp_point_select` and
//! `oltp_write_only` on the same `sbtest` tables, the two servers alternating slice by
//! slice, with where the tables' region leaders were at the start of each SurgeDB slice
//! (a read or lock served by another node's leader costs a network round trip more).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::endpoint::Endpoint;
use super::error::SysbenchError;
use super::tally::{SysbenchPoint, Tally};
use super::write_only::Tables;
use crate::bench::Progress;

/// The point-select workload (one primary-key `SELECT` per sysbench transaction, so its
/// TPS is its QPS).
pub const POINT_SELECT: &str = "oltp_point_select";
/// The write workload (per transaction: an indexed and a non-indexed `UPDATE`, a `DELETE`
/// and an `INSERT` of the same id).
pub const WRITE_ONLY: &str = "oltp_write_only";

/// The node whose MySQL port sysbench drives (`bench sysbench` uses node 1's).
const SURGEDB_NODE: u64 = 1;

/// The side-by-side's thread counts, and where its SurgeDB slices' leaders go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OltpPlan {
    pub(crate) point: usize,
    pub(crate) write: usize,
    /// The cluster's directory and the node to hand every region's leadership to before
    /// each SurgeDB slice; `None`: leave them where they are.
    pub(crate) leaders_on: Option<(PathBuf, u64)>,
}

/// Where the `sbtest` tables' regions were led at the start of one SurgeDB slice (as
/// `SHOW TABLE ... REGIONS` on node 1 answered: its region map's leader hints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaderShare {
    /// The workload of the slice.
    pub workload: String,
    /// Its round (1-based).
    pub round: usize,
    /// Regions holding `sbtest` rows whose leader was the node sysbench talked to.
    pub local: usize,
    /// Regions holding `sbtest` rows (a region holding several tables counted once).
    pub regions: usize,
}

/// What the side-by-side measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OltpReport {
    /// `oltp_point_select` points: `surgedb` and `mariadb`.
    pub point_select: Vec<SysbenchPoint>,
    /// `oltp_write_only` points: `surgedb` and `mariadb`.
    pub write_only: Vec<SysbenchPoint>,
    /// Per SurgeDB slice, how many of the tables' regions node 1 led.
    pub leaders: Vec<LeaderShare>,
}

/// Prepares `tables` on both servers, then per round: point select on SurgeDB, on
/// MariaDB, write-only on SurgeDB, on MariaDB; the tables' row counts are checked at the
/// end (write-only deletes and re-inserts the same ids).
///
/// # Errors
/// The first [`SysbenchError`].
pub(crate) fn run_oltp(
    surgedb: &Endpoint,
    mariadb: Option<&Endpoint>,
    tables: Tables,
    plan: &OltpPlan,
    seconds: u64,
    rounds: usize,
    progress: &mut dyn Progress,
) -> Result<OltpReport, SysbenchError> {
    progress.message("oltp: sysbench prepare");
    tables.prepare(surgedb)?;
    if let Some(m) = mariadb {
        tables.prepare(m)?;
    }
    let mut point = Tally::default();
    let mut write = Tally::default();
    let mut leaders = Vec::new();
    for round in 1..=rounds {
        for (workload, t, tally) in [
            (POINT_SELECT, plan.point, &mut point),
            (WRITE_ONLY, plan.write, &mut write),
        ] {
            progress.message(&format!("oltp: SurgeDB {workload}, {t} threads"));
            if let Some((cluster, to)) = &plan.leaders_on {
                move_leaders(cluster, *to)?;
            }
            let (local, regions) = local_leaders(surgedb, SURGEDB_NODE, tables)?;
            tally.add(
                "surgedb",
                t,
                &tables.run_workload(surgedb, workload, t, seconds, &[])?,
            );
            leaders.push(LeaderShare {
                workload: workload.to_string(),
                round,
                local,
                regions,
            });
            progress.step();
            if let Some(m) = mariadb {
                progress.message(&format!("oltp: MariaDB {workload}, {t} threads"));
                tally.add(
                    "mariadb",
                    t,
                    &tables.run_workload(m, workload, t, seconds, &[])?,
                );
                progress.step();
            }
        }
    }
    tables.check(surgedb)?;
    if let Some(m) = mariadb {
        tables.check(m)?;
    }
    Ok(OltpReport {
        point_select: point.into_points(),
        write_only: write.into_points(),
        leaders,
    })
}

/// Hands every region's leadership to node `to` of the cluster in `dir` (the call waits
/// until `to` leads each), then a second more, so that the meta group's view, which the
/// slice's `SHOW TABLE ... REGIONS` reports, has caught up. A region that splits or holds
/// an election just then fails its move: the whole move is tried up to three times.
pub(crate) fn move_leaders(dir: &Path, to: u64) -> Result<(), SysbenchError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match move_leaders_once(dir, to) {
            Err(_) if tries < 3 => std::thread::sleep(std::time::Duration::from_secs(1)),
            done => return done,
        }
    }
}

fn move_leaders_once(dir: &Path, to: u64) -> Result<(), SysbenchError> {
    let setup = |detail: String| SysbenchError::Setup {
        what: format!("the SurgeDB cluster's leaders on node {to}"),
        detail,
    };
    let (_, client) = crate::cli::connect_dir(dir, crate::ClientOptions::default())
        .map_err(|e| setup(e.to_string()))?;
    let moves = client
        .move_leaders(to, None)
        .map_err(|e| setup(e.to_string()))?;
    if let Some((region, why)) = moves.failed.first() {
        return Err(setup(format!("region {region} not moved: {why}")));
    }
    if let Some((node, why)) = moves.unasked.first() {
        return Err(setup(format!("node {node} not asked: {why}")));
    }
    if !moves.moved.is_empty() {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    Ok(())
}

/// How many of the regions holding the `sbtest` tables node `me` (the node behind
/// `surgedb`) leads, of how many, from `SHOW TABLE ... REGIONS` (`REGION_ID` first,
/// `LEADER_STORE_ID` fifth).
fn local_leaders(
    surgedb: &Endpoint,
    me: u64,
    tables: Tables,
) -> Result<(usize, usize), SysbenchError> {
    let mut seen = std::collections::BTreeMap::new();
    for i in 1..=tables.tables {
        let out = surgedb.sql(&format!("SHOW TABLE sbtest.sbtest{i} REGIONS"))?;
        for (region, leader) in region_leaders(&out) {
            seen.insert(region, leader);
        }
    }
    let local = seen.values().filter(|&&l| l == Some(me)).count();
    Ok((local, seen.len()))
}

/// (region id, leader's node id if known) of each row of `SHOW TABLE ... REGIONS` printed
/// tab-separated without a header.
fn region_leaders(out: &str) -> Vec<(u64, Option<u64>)> {
    out.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let region = cols.first()?.trim().parse().ok()?;
            Some((region, cols.get(4).and_then(|c| c.trim().parse().ok())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_rows_give_their_leaders_and_skip_what_is_not_a_row() {
        let out = "9\t70\t7480FF\t1\t1\t1,2,3\n18\t7480FF\t80\t2\t2\t1,2,3\n\
                   21\t80\t\tNULL\tNULL\t1,2,3\nwarning: something\n";
        assert_eq!(
            region_leaders(out),
            vec![(9, Some(1)), (18, Some(2)), (21, None)]
        );
    }
}
