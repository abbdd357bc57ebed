//! Hot-row group commit (AliSQL hot-row update, the "Inventory Hint"): one hot row updated by
//! many clients, with grouping off and on.
//!
//! The row is a stock counter whose every committed update is appended to a file and
//! `fdatasync`ed, so "durable" is real: with the switch off each update pays one flush, with it
//! on a whole group pays one.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use surge_hotspot::{Applied, Config, Coordinator, GroupExecutor, Hints};

use super::ScenarioError;
use super::table::row;

/// Column widths of the report's table.
const WIDTHS: [usize; 8] = [7, 4, 9, 9, 12, 9, 9, 9];

/// A durable stock counter: each group's records go to the file in one write and one flush.
#[derive(Debug)]
struct DurableCounter {
    state: Mutex<(File, i64)>,
}

impl GroupExecutor for DurableCounter {
    type Key = u64;
    type Op = i64;
    type Output = i64;
    type Change = i64;
    type Reject = &'static str;
    type Error = std::io::Error;
    /// The row image and the group's log records.
    type Group = (i64, Vec<u8>);

    fn begin(&self, _key: &u64) -> std::io::Result<(i64, Vec<u8>)> {
        let value = self.state.lock().map_err(|_| poisoned())?.1;
        Ok((value, Vec::new()))
    }

    fn apply(
        &self,
        group: &(i64, Vec<u8>),
        delta: &i64,
    ) -> Result<Applied<i64, i64>, &'static str> {
        let next = group.0.checked_add(*delta).ok_or("overflow")?;
        if next < 0 {
            return Err("out of stock");
        }
        Ok(Applied::one_row(next, next))
    }

    fn accept(&self, group: &mut (i64, Vec<u8>), next: i64) {
        group.0 = next;
        group.1.extend_from_slice(&next.to_le_bytes());
    }

    fn commit(&self, _key: &u64, group: (i64, Vec<u8>)) -> std::io::Result<()> {
        let mut state = self.state.lock().map_err(|_| poisoned())?;
        state.0.write_all(&group.1)?;
        state.0.sync_data()?;
        state.1 = group.0;
        Ok(())
    }
}

fn poisoned() -> std::io::Error {
    std::io::Error::other("counter mutex poisoned by a panic")
}

/// One measured point: `threads` clients for a fixed time with the switch `on` or off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HotRowPoint {
    /// Concurrent clients.
    pub threads: usize,
    /// Whether hot-row grouping was on.
    pub on: bool,
    /// Committed updates per second.
    pub tps: f64,
    /// Mean members per durable group (1 when off).
    pub mean_group: f64,
    /// Seconds measured (the sum of this mode's rounds).
    pub seconds: f64,
    /// Updates acknowledged to the clients (each a decrement by 1).
    pub acknowledged: u64,
    /// How far the counter fell, summed over this mode's rounds: equal to `acknowledged`
    /// when no update was lost or applied twice.
    pub counter_fell_by: u64,
}

/// What the hot-row scenario measured, and the check that nothing was lost.
#[derive(Debug, Clone, PartialEq)]
pub struct HotRowReport {
    /// Every point, off and on side by side for each thread count.
    pub points: Vec<HotRowPoint>,
    /// Whether, in every round, the counter's final value equals its start minus the number
    /// of acknowledged decrements.
    pub no_lost_update: bool,
    /// Length of one round; each mode runs two rounds per thread count.
    pub round: Duration,
}

/// Rounds per mode and thread count (in the order off, on, on, off).
const ROUNDS_PER_MODE: u32 = 2;

impl HotRowReport {
    /// `on` / `off` throughput at `threads`, if both were measured.
    pub fn ratio(&self, threads: usize) -> Option<f64> {
        let tps = |on| {
            self.points
                .iter()
                .find(|p| p.threads == threads && p.on == on)
                .map(|p| p.tps)
        };
        Some(tps(true)? / tps(false)?)
    }
}

/// Runs each thread count for `per_point` with the switch off and for `per_point` with it
/// on, in `dir`. The two modes alternate in four rounds (off, on, on, off) so that a disk
/// whose flush latency drifts during the run weighs on both alike.
///
/// # Errors
/// [`ScenarioError::Io`] if the log file cannot be created or removed, or
/// [`ScenarioError::Unexpected`] if an update fails (a durable step failed).
pub fn run(
    dir: &Path,
    threads: &[usize],
    per_point: Duration,
) -> Result<HotRowReport, ScenarioError> {
    let mut points = Vec::new();
    let mut no_lost_update = true;
    let round = per_point / 2;
    for &n in threads {
        let mut totals = [Totals::default(), Totals::default()];
        for on in [false, true, true, false] {
            let measured = measure(dir, n, on, round)?;
            no_lost_update &= measured.consistent;
            let t = &mut totals[usize::from(on)];
            t.committed += measured.committed;
            t.elapsed += measured.elapsed;
            t.grouped_members += measured.grouped_members;
            t.groups += measured.groups;
            t.fell_by += measured.fell_by;
        }
        for (on, t) in [(false, &totals[0]), (true, &totals[1])] {
            points.push(HotRowPoint {
                threads: n,
                on,
                tps: t.committed as f64 / t.elapsed.as_secs_f64(),
                mean_group: if t.groups == 0 {
                    1.0
                } else {
                    t.grouped_members as f64 / t.groups as f64
                },
                seconds: t.elapsed.as_secs_f64(),
                acknowledged: t.committed,
                counter_fell_by: t.fell_by,
            });
        }
    }
    Ok(HotRowReport {
        points,
        no_lost_update,
        round,
    })
}

#[derive(Debug, Default)]
struct Totals {
    committed: u64,
    elapsed: Duration,
    grouped_members: u64,
    groups: u64,
    fell_by: u64,
}

/// One round of one mode.
#[derive(Debug)]
struct Measured {
    committed: u64,
    elapsed: Duration,
    grouped_members: u64,
    groups: u64,
    /// How far the counter fell from its start.
    fell_by: u64,
    /// The counter's final value equals its start minus the acknowledged decrements.
    consistent: bool,
}

fn measure(
    dir: &Path,
    threads: usize,
    on: bool,
    time: Duration,
) -> Result<Measured, ScenarioError> {
    const START: i64 = i64::MAX / 2;
    let path = dir.join(format!("hot_row_{threads}_{on}.log"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let counter = DurableCounter {
        state: Mutex::new((file, START)),
    };
    let hot = Coordinator::new(counter, Config::default())?;
    hot.set_hotspot(on);
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    match hot.execute(&1, -1, Hints::hot_update()) {
                        Ok(_) => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => failed.store(true, Ordering::Relaxed),
                    }
                }
            });
        }
        std::thread::sleep(time);
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed();
    if failed.load(Ordering::Relaxed) {
        return Err(ScenarioError::Unexpected("a hot-row update failed"));
    }
    let committed = done.load(Ordering::Relaxed);
    let stats = hot.stats();
    let value = hot.executor().state.lock().map_err(|_| poisoned())?.1;
    drop(hot);
    std::fs::remove_file(&path)?;
    let (grouped_members, groups) = if on {
        (
            stats.leader_count + stats.follower_count,
            stats.leader_count,
        )
    } else {
        (0, 0)
    };
    Ok(Measured {
        committed,
        elapsed,
        grouped_members,
        groups,
        fell_by: u64::try_from(START - value).unwrap_or(0),
        consistent: START - value == committed as i64,
    })
}

impl fmt::Display for HotRowReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "one run; per client count each mode ran {ROUNDS_PER_MODE} rounds of {} ms \
             (off, on, on, off), every update appended to a file and fdatasynced",
            self.round.as_millis()
        )?;
        let w = WIDTHS;
        row(
            f,
            &w,
            &[
                &"clients",
                &"mode",
                &"measured",
                &"updates",
                &"throughput",
                &"on/off",
                &"updates",
                &"counter",
            ],
        )?;
        row(
            f,
            &w,
            &[
                &"",
                &"",
                &"(s)",
                &"per flush",
                &"(updates/s)",
                &"",
                &"acked",
                &"fell by",
            ],
        )?;
        for p in &self.points {
            let ratio = match (p.on, self.ratio(p.threads)) {
                (true, Some(r)) => format!("{r:.1}x"),
                _ => String::new(),
            };
            row(
                f,
                &w,
                &[
                    &p.threads,
                    &if p.on { "on" } else { "off" },
                    &format!("{:.2}", p.seconds),
                    &format!("{:.1}", p.mean_group),
                    &format!("{:.0}", p.tps),
                    &ratio,
                    &p.acknowledged,
                    &p.counter_fell_by,
                ],
            )?;
        }
        writeln!(
            f,
            "every round: counter start - final value = updates acknowledged: {}",
            if self.no_lost_update {
                "yes (no update lost or applied twice)"
            } else {
                "NO: an update was lost or applied twice"
            }
        )?;
        let most = self.points.iter().map(|p| p.threads).max().unwrap_or(0);
        let least = self.points.iter().map(|p| p.threads).min().unwrap_or(0);
        let on = self.points.iter().find(|p| p.threads == most && p.on);
        if let (Some(on), Some(ratio), Some(alone)) = (on, self.ratio(most), self.ratio(least)) {
            write!(
                f,
                "Shows: with grouping on, {most} clients share each fdatasync ({:.1} updates per \
                 flush on average), {ratio:.1}x the throughput with it off; {least} client(s): \
                 {alone:.1}x (a lone update is not delayed; on a shared disk this short run is \
                 noisy).",
                on.mean_group
            )?;
        }
        Ok(())
    }
}
