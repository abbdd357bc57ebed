//! [`run_sysbench`]: the three experiments (and the OLTP side-by-side) against a fresh
//! 3-node SurgeDB cluster and a private MariaDB, then the binlogs verified.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::big_update::{BigPlan, BigServer, BigUpdatePoint, run_big_update};
use super::endpoint::{Endpoint, write_hot_row_script};
use super::error::SysbenchError;
use super::hot_row::run_hot_row;
use super::machine::Machine;
use super::mariadb::PrivateMariadb;
use super::oltp::{OltpPlan, OltpReport, run_oltp};
use super::tally::SysbenchPoint;
use super::write_only::{LOCK_MODES, Tables, run_write_only};
use crate::bench::Progress;
use crate::local::{ClusterManifest, StartOptions};

/// One of the write-ups' experiments, or the OLTP side-by-side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Experiment {
    /// 000: in-memory pessimistic locks, `oltp_write_only`.
    Locks,
    /// 003: large transactions beside `oltp_write_only`.
    BigTxn,
    /// 004: the hot-row `UPDATE`.
    HotRow,
    /// SurgeDB beside MariaDB on `oltp_point_select` and `oltp_write_only`.
    Oltp,
}

/// What `bench sysbench` runs.
///
/// Build it with [`SysbenchOptions::new`] and adjust the public fields; the struct is
/// `#[non_exhaustive]`, so settings can be added without breaking callers.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct SysbenchOptions {
    /// The `surgedb` executable run as the cluster's nodes.
    pub surgedb_exe: PathBuf,
    /// Scratch directory: the cluster, MariaDB's data, the Lua script (created; left in
    /// place for inspection).
    pub dir: PathBuf,
    /// The experiments, run in this order.
    pub experiments: Vec<Experiment>,
    /// Also run every experiment on a private MariaDB 10.11.
    pub mariadb: bool,
    /// 000's thread counts.
    pub lock_threads: Vec<usize>,
    /// 004's thread counts.
    pub hot_threads: Vec<usize>,
    /// `Oltp`'s `oltp_point_select` threads.
    pub point_threads: usize,
    /// `Oltp`'s `oltp_write_only` threads.
    pub write_threads: usize,
    /// Seconds per slice (one sysbench run of one variant).
    pub seconds: u64,
    /// Rotations through all variants (interleaved, so drift hits every variant alike).
    pub rounds: usize,
    /// `--tables` of `oltp_write_only`.
    pub tables: usize,
    /// `--table-size` of `oltp_write_only`.
    pub table_size: usize,
    /// 003's big-transaction sizes in MiB of binlog events.
    pub big_mib: Vec<u64>,
    /// 003's sysbench threads.
    pub big_threads: usize,
    /// 003's seconds per run.
    pub big_seconds: u64,
    /// 003's period between big transactions.
    pub big_every: Duration,
    /// Extra `surgedb node` arguments for every node.
    pub node_args: Vec<String>,
    /// 003 also runs on a second cluster whose nodes copy every transaction into the
    /// binlog (`surgedb node --binlog-copy`), beside the first one's commit by rename.
    pub big_copy: bool,
    /// `Oltp`: before each SurgeDB slice, hand every region's leadership to this node
    /// ([`crate::Client::move_leaders`]; node 1 is the one sysbench talks to, any other
    /// puts every read and lock a network hop away). `None`, the default: leave the
    /// leaders where the cluster put them (the slice reports where that was).
    pub oltp_leaders_on: Option<u64>,
}

impl SysbenchOptions {
    /// The full plan: 000 at 1, 8, 32, 64 threads; 003 at 4 threads with 64, 256,
    /// 512 and 1024 MiB every 5 s; 004 at 1 ..= 512 threads; 10 s slices, one round,
    /// 4 tables of 10 000 rows, MariaDB beside.
    pub fn new(surgedb_exe: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> SysbenchOptions {
        SysbenchOptions {
            surgedb_exe: surgedb_exe.into(),
            dir: dir.into(),
            experiments: vec![Experiment::Locks, Experiment::BigTxn, Experiment::HotRow],
            mariadb: true,
            lock_threads: vec![1, 8, 32, 64],
            hot_threads: vec![1, 4, 8, 16, 32, 64, 128, 256, 512],
            point_threads: 16,
            write_threads: 32,
            seconds: 10,
            rounds: 1,
            tables: 4,
            table_size: 10_000,
            big_mib: vec![64, 256, 512, 1024],
            big_threads: 4,
            big_seconds: 30,
            big_every: Duration::from_secs(5),
            node_args: Vec::new(),
            big_copy: false,
            oltp_leaders_on: None,
        }
    }

    /// Sysbench runs in all, for a progress bar.
    pub fn steps(&self) -> u64 {
        let servers = |n: usize| n + usize::from(self.mariadb);
        let per = |e: &Experiment| match e {
            Experiment::Locks => self.lock_threads.len() * servers(LOCK_MODES.len()),
            Experiment::HotRow => self.hot_threads.len() * servers(2),
            Experiment::Oltp => 2 * servers(1),
            Experiment::BigTxn => {
                (self.big_mib.len() + 1) * servers(1 + usize::from(self.big_copy))
            }
        };
        (self.experiments.iter().map(per).sum::<usize>() * self.rounds) as u64
    }

    fn validate(&self) -> Result<(), SysbenchError> {
        let bad = |option, detail: &str| {
            Err(SysbenchError::BadOption {
                option,
                detail: detail.into(),
            })
        };
        if self.experiments.is_empty() {
            return bad("experiments", "none chosen");
        }
        if self.rounds == 0 || self.seconds == 0 {
            return bad("rounds/seconds", "must be at least 1");
        }
        let zero = |v: &[usize]| v.is_empty() || v.contains(&0);
        if zero(&self.lock_threads)
            || zero(&self.hot_threads)
            || self.big_threads == 0
            || self.point_threads == 0
            || self.write_threads == 0
        {
            return bad("threads", "each list needs at least one count, none 0");
        }
        if self.tables == 0 || self.table_size == 0 {
            return bad("tables/table-size", "must be at least 1");
        }
        if let Some(n) = self.oltp_leaders_on {
            if !(1..=3).contains(&n) {
                return bad(
                    "oltp-leaders-on",
                    "the bench's cluster has nodes 1, 2 and 3",
                );
            }
            if !self.experiments.contains(&Experiment::Oltp) {
                return bad("oltp-leaders-on", "only the oltp experiment places leaders");
            }
        }
        if self.big_mib.contains(&0) || self.big_seconds == 0 {
            return bad(
                "big-mib/big-seconds",
                "sizes and seconds must be at least 1",
            );
        }
        Ok(())
    }
}

/// Everything one `bench sysbench` measured.
#[derive(Debug, Clone, Serialize)]
pub struct SysbenchReport {
    /// Cores and fsync latency where the data lives.
    pub machine: Machine,
    /// 000's points (empty when not run).
    pub locks: Vec<SysbenchPoint>,
    /// 003's points.
    pub big: Vec<BigUpdatePoint>,
    /// 004's points.
    pub hot: Vec<SysbenchPoint>,
    /// The OLTP side-by-side (empty when not run).
    pub oltp: OltpReport,
    /// Binlog files that passed `mariadb-binlog --verify-binlog-checksum` (SurgeDB's also
    /// read back by `surge-binlog`).
    pub verified_binlogs: Vec<String>,
}

/// Stops the cluster however the run ends.
struct ClusterGuard(PathBuf);

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        let _ = crate::local::stop(&self.0, Duration::from_secs(60));
    }
}

/// Runs `opts.experiments` on a fresh 3-node cluster in `opts.dir/cluster` (sysbench on
/// node 1's MySQL port) and, with `opts.mariadb`, on a private MariaDB in
/// `opts.dir/mariadb`; after each run the data is checked against what sysbench
/// acknowledged; at the end both servers are stopped and every binlog file verified.
///
/// # Errors
/// The first [`SysbenchError`].
pub fn run_sysbench(
    opts: &SysbenchOptions,
    progress: &mut dyn Progress,
) -> Result<SysbenchReport, SysbenchError> {
    opts.validate()?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SysbenchError::Io { path, source }
    };
    std::fs::create_dir_all(&opts.dir).map_err(io(&opts.dir))?;
    let dir = opts.dir.canonicalize().map_err(io(&opts.dir))?;
    let machine = Machine::measure(&dir, 200)?;
    let script = write_hot_row_script(&dir)?;

    progress.message("starting the SurgeDB cluster");
    let cluster_dir = dir.join("cluster");
    if cluster_dir.exists() {
        return Err(SysbenchError::Setup {
            what: "the cluster".into(),
            detail: format!("{} exists; give an empty --dir", cluster_dir.display()),
        });
    }
    let start = StartOptions::new(&opts.surgedb_exe)
        .with_node_args(opts.node_args.clone())
        .with_ready_timeout(Duration::from_secs(120));
    let setup = |detail: String| SysbenchError::Setup {
        what: "the SurgeDB cluster".into(),
        detail,
    };
    let guard = ClusterGuard(cluster_dir.clone());
    let (manifest, _) =
        crate::local::start(&cluster_dir, 3, &start).map_err(|e| setup(e.to_string()))?;
    let surgedb = surgedb_endpoint(&manifest)?;
    progress.message("starting MariaDB");
    let mariadb = if opts.mariadb {
        Some(PrivateMariadb::start(&dir.join("mariadb"))?)
    } else {
        None
    };
    let m_ep = mariadb.as_ref().map(PrivateMariadb::endpoint);
    let tables = Tables {
        tables: opts.tables,
        size: opts.table_size,
    };
    let mut report = SysbenchReport {
        machine,
        locks: Vec::new(),
        big: Vec::new(),
        hot: Vec::new(),
        oltp: OltpReport::default(),
        verified_binlogs: Vec::new(),
    };
    for e in &opts.experiments {
        match e {
            Experiment::Locks => {
                report.locks = run_write_only(
                    &surgedb,
                    m_ep,
                    tables,
                    &opts.lock_threads,
                    opts.seconds,
                    opts.rounds,
                    progress,
                )?;
            }
            Experiment::HotRow => {
                report.hot = run_hot_row(
                    &surgedb,
                    m_ep,
                    &script,
                    &opts.hot_threads,
                    opts.seconds,
                    opts.rounds,
                    progress,
                )?;
            }
            Experiment::Oltp => {
                report.oltp = run_oltp(
                    &surgedb,
                    m_ep,
                    tables,
                    &OltpPlan {
                        point: opts.point_threads,
                        write: opts.write_threads,
                        leaders_on: opts.oltp_leaders_on.map(|to| (cluster_dir.clone(), to)),
                    },
                    opts.seconds,
                    opts.rounds,
                    progress,
                )?;
            }
            Experiment::BigTxn => {
                let binlog_dirs = |m: &ClusterManifest| -> Vec<PathBuf> {
                    m.nodes.iter().map(|n| n.data.join("binlog")).collect()
                };
                let mut servers = vec![BigServer {
                    ep: &surgedb,
                    variant: "surgedb (rename)",
                    binlog_dirs: binlog_dirs(&manifest),
                }];
                // The copy variant: a second cluster, the same but for `--binlog-copy`.
                let copy_dir = dir.join("cluster-copy");
                let copy = if opts.big_copy {
                    progress.message("starting the SurgeDB cluster that copies");
                    let mut args = opts.node_args.clone();
                    args.push("--binlog-copy".into());
                    let start = StartOptions::new(&opts.surgedb_exe)
                        .with_node_args(args)
                        .with_ready_timeout(Duration::from_secs(120));
                    let guard = ClusterGuard(copy_dir.clone());
                    let (m, _) = crate::local::start(&copy_dir, 3, &start)
                        .map_err(|e| setup(e.to_string()))?;
                    let ep = surgedb_endpoint(&m)?;
                    Some((guard, m, ep))
                } else {
                    None
                };
                if let Some((_, m, ep)) = &copy {
                    servers.push(BigServer {
                        ep,
                        variant: "surgedb (copy)",
                        binlog_dirs: binlog_dirs(m),
                    });
                }
                if let Some(m) = &mariadb {
                    servers.push(BigServer {
                        ep: m.endpoint(),
                        variant: "mariadb (copy)",
                        binlog_dirs: vec![m.binlog_dir()],
                    });
                }
                let plan = BigPlan {
                    sizes_mib: opts.big_mib.clone(),
                    threads: opts.big_threads,
                    seconds: opts.big_seconds,
                    every: opts.big_every,
                    rounds: opts.rounds,
                };
                report.big = run_big_update(&servers, tables, &plan, progress)?;
                drop(servers);
                if let Some((guard, _, _)) = copy {
                    drop(guard);
                    let verified = crate::cli::verify(&copy_dir, crate::cli::MariadbCheck::Require)
                        .map_err(|e| SysbenchError::Binlog {
                            path: copy_dir.clone(),
                            detail: e.to_string(),
                        })?;
                    report
                        .verified_binlogs
                        .extend(verified.files.iter().map(|f| f.path.display().to_string()));
                }
            }
        }
    }
    progress.message("stopping and verifying the binlogs");
    let mdb_files = match mariadb {
        Some(m) => {
            let files = m.binlog_files()?;
            m.stop()?;
            files
        }
        None => Vec::new(),
    };
    drop(guard);
    for f in &mdb_files {
        crate::cli::mariadb_read(f).map_err(|e| SysbenchError::Binlog {
            path: f.clone(),
            detail: e.to_string(),
        })?;
        report.verified_binlogs.push(f.display().to_string());
    }
    let surge =
        crate::cli::verify(&cluster_dir, crate::cli::MariadbCheck::Require).map_err(|e| {
            SysbenchError::Binlog {
                path: cluster_dir.clone(),
                detail: e.to_string(),
            }
        })?;
    report
        .verified_binlogs
        .extend(surge.files.iter().map(|f| f.path.display().to_string()));
    Ok(report)
}

/// Node 1's MySQL address from the manifest.
fn surgedb_endpoint(manifest: &ClusterManifest) -> Result<Endpoint, SysbenchError> {
    let addr = manifest
        .nodes
        .first()
        .and_then(|n| n.mysql_addr.clone())
        .ok_or_else(|| SysbenchError::Setup {
            what: "the SurgeDB cluster".into(),
            detail: "node 1 serves no MySQL port (cluster.json has no mysql_addr)".into(),
        })?;
    Endpoint::parse("surgedb", &addr)
}
