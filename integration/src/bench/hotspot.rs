//! `surgedb bench hotspot`: one hot row updated by many clients, hot-row grouping off vs on
//! (AliSQL hot-row group commit), on `surge-hotspot` in this process: every update appended
//! to a file and fdatasynced.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::{BenchError, Progress};
use crate::scenarios::run_hot_row;

/// What `bench hotspot` runs.
///
/// Build it with [`HotspotOptions::default`] and the `with_*` methods, or assign the public fields
/// of a default value: the struct is `#[non_exhaustive]`, so later settings can be added
/// without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct HotspotOptions {
    /// Client counts.
    pub clients: Vec<usize>,
    /// Measured time per client count and mode, in rounds that alternate off, on, on, off.
    pub seconds: f64,
}

impl Default for HotspotOptions {
    fn default() -> HotspotOptions {
        HotspotOptions {
            clients: vec![1, 16, 64, 256],
            seconds: 2.0,
        }
    }
}

impl HotspotOptions {
    /// How many progress steps [`run_hotspot`] reports: one per client count.
    pub fn steps(&self) -> u64 {
        self.clients.len() as u64
    }

    /// Sets [`HotspotOptions::clients`].
    #[must_use]
    pub fn with_clients(mut self, clients: Vec<usize>) -> Self {
        self.clients = clients;
        self
    }

    /// Sets [`HotspotOptions::seconds`].
    #[must_use]
    pub fn with_seconds(mut self, seconds: f64) -> Self {
        self.seconds = seconds;
        self
    }
}

/// One (clients, mode) point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotspotPoint {
    /// Concurrent clients.
    pub clients: usize,
    /// Grouping on or off.
    pub grouping: &'static str,
    /// Seconds measured.
    pub seconds: f64,
    /// Acknowledged updates per second.
    pub updates_per_s: f64,
    /// On / off throughput at this client count (on rows only).
    pub on_off: Option<f64>,
    /// Mean updates per durable commit: per fdatasync on `surge-hotspot`, per one-phase
    /// commit (one Raft proposal) through `surge-txn`; 1 with grouping off.
    pub updates_per_commit: f64,
    /// Updates acknowledged.
    pub acknowledged: u64,
}

/// A whole `bench hotspot` run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotspotRun {
    /// Every point, off and on side by side for each client count.
    pub points: Vec<HotspotPoint>,
    /// The check that no update was lost or applied twice, as a sentence.
    pub check: String,
}

/// Runs each client count off and on in `dir`, on `surge-hotspot` directly.
///
/// # Errors
/// [`BenchError::Scenario`] if a durable update fails, and
/// [`BenchError::Cluster`] if an update was lost or applied twice.
pub fn run_hotspot(
    dir: &Path,
    opts: &HotspotOptions,
    progress: &mut dyn Progress,
) -> Result<HotspotRun, BenchError> {
    let mut points = Vec::new();
    for &n in &opts.clients {
        progress.message(&format!("{n} clients, grouping off and on"));
        let report = run_hot_row(dir, &[n], Duration::from_secs_f64(opts.seconds))?;
        if !report.no_lost_update {
            return Err(BenchError::Cluster(format!(
                "{n} clients: an update was lost or applied twice"
            )));
        }
        let ratio = report.ratio(n);
        points.extend(report.points.iter().map(|p| HotspotPoint {
            clients: p.threads,
            grouping: if p.on { "on" } else { "off" },
            seconds: p.seconds,
            updates_per_s: p.tps,
            on_off: ratio.filter(|_| p.on),
            updates_per_commit: p.mean_group,
            acknowledged: p.acknowledged,
        }));
        progress.step();
    }
    Ok(HotspotRun {
        points,
        check: "every round: how far the counter fell = updates acknowledged (none lost or \
                applied twice)"
            .into(),
    })
}
