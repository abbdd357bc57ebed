//! The `surgedb` command.
#![deny(unsafe_code)]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use surge_txn::LockMode;
use surgedb::bench::{BenchTarget, BigTxnOptions, HotspotOptions, LocksOptions, WriteMode};
use surgedb::dump::{self, Input};
use surgedb::local::{ClusterManifest, NodeStart, StartOptions};
use surgedb::server::{NodeConfig, NodeProcess, parse_peers};
use surgedb::{Client, ClientOptions, cli};

/// mimalloc, not glibc malloc: a node that ran a few large transactions kept about as much
/// freed memory in glibc's per-thread arenas as it used (see `integration/README.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// SurgeDB's command-line tool: node processes, a local cluster, a client, a demo and binlog
/// tools.
#[derive(Debug, Parser)]
#[command(
    name = "surgedb",
    version,
    about = "SurgeDB's command-line tool: node processes, a local cluster, a client, a demo and binlog tools.",
    long_about = "SurgeDB's command-line tool.\n\n\
        `surgedb node` runs one node of a cluster (Raft over TCP, Percolator transactions from \
        surge-txn, clients served over TCP); `surgedb cluster start|stop|status` manages a \
        cluster of node processes on loopback; `surgedb kv` and `surgedb txn` talk to a \
        running cluster. `surgedb demo` runs TiKV 6.0's in-memory pessimistic locks, \
        large-transaction binlog commit by rename and AliSQL hot-row group commit through \
        surge-txn on in-process 3-node clusters. `surgedb bench` \
        runs the experiments with variants side by side."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the three techniques and print what each shows: in-memory pessimistic locks,
    /// binlog commit by rename and hot-row group commit, through surge-txn on in-process
    /// 3-node clusters.
    Demo,
    /// Run one node of a cluster until SIGTERM or SIGINT. Warnings and errors of the
    /// disk engine and of the Raft and transaction layers go to standard error (the node's
    /// log); `SURGE_LOG` chooses other levels, as `RUST_LOG` does (`SURGE_LOG=info`,
    /// `SURGE_LOG=surge_txn=debug`).
    Node(NodeArgs),
    /// Manage a local cluster of node processes on loopback.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// One-shot reads and writes against a running cluster.
    Kv {
        #[command(subcommand)]
        command: KvCommand,
    },
    /// Run a script of transactional operations (one per line; `-` reads standard input):
    /// `begin optimistic|pessimistic`, `get K`, `get_for_update K`, `put K V`, `delete K`,
    /// `commit`, `rollback`, `sleep MS` (to stage a conflict with another script); `#`
    /// starts a comment.
    Txn {
        #[command(flatten)]
        target: Target,
        /// The script file.
        file: OsString,
    },
    /// Run an experiment with its variants side by side: a table (or JSON) and an SVG plot.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Binlog tools.
    Binlog {
        #[command(subcommand)]
        command: BinlogCommand,
    },
    /// Garbage collection's holds: list them, or remove a gone node's.
    Gc {
        #[command(subcommand)]
        command: GcCommand,
    },
    /// The replica stream's records in the store: where each node's copy stands, and
    /// removing a gone node's position.
    Stream {
        #[command(subcommand)]
        command: StreamCommand,
    },
}

#[derive(Debug, Subcommand)]
enum StreamCommand {
    /// Print how far the stream records were collected and each node's position: the
    /// record timestamp its copy still needs from, how far it is complete, and when it
    /// said so.
    Positions {
        #[command(flatten)]
        target: Target,
    },
    /// Remove OWNER's stream position, so that record collection passes a node that is
    /// gone for good (a running node publishes its position again within seconds).
    RemovePosition {
        #[command(flatten)]
        target: Target,
        /// The position's owner (a node id).
        #[arg(long)]
        owner: u64,
    },
}

#[derive(Debug, Subcommand)]
enum GcCommand {
    /// Print the GC holds in force: owner (a node id), the timestamp below which no version
    /// is collected, its age and the time left before it expires.
    Holds {
        #[command(flatten)]
        target: Target,
    },
    /// Remove OWNER's GC hold, so that collection passes a node that is gone for good (a
    /// running node sets its hold again at its next refresh).
    RemoveHold {
        #[command(flatten)]
        target: Target,
        /// The hold's owner (a node id).
        #[arg(long)]
        owner: u64,
    },
}

#[derive(Debug, Args)]
struct NodeArgs {
    /// This node's id (1, 2, ...; a key of --peers).
    #[arg(long)]
    id: u64,
    /// Client address (HOST:PORT); Raft listens on PORT + 1 of the same host.
    #[arg(long)]
    listen: String,
    /// Every node of the cluster, this one included: ID=HOST:PORT,... (client addresses).
    #[arg(long)]
    peers: String,
    /// Data directory (locked while the node runs; the WAL is in DIR/raft).
    #[arg(long)]
    data: PathBuf,
    /// Cluster id (default: the data directory's, or one derived from --peers).
    #[arg(long)]
    cluster_id: Option<String>,
    /// Pessimistic lock mode at start (changeable at run time).
    #[arg(long, value_enum, default_value_t = LockModeArg::InMemory)]
    lock_mode: LockModeArg,
    /// Raft election timeout in milliseconds (ticks are 20 ms).
    #[arg(long, default_value_t = 500)]
    election_ms: u64,
    /// Serve the MySQL protocol on HOST:PORT (the `mariadb` client, sysbench, any MySQL
    /// driver; user root with an empty password).
    #[arg(long)]
    mysql_listen: Option<String>,
    /// Where the regions' data lives: `disk` (DIR/engine, survives restarts without
    /// replaying the whole log) or `memory` (rebuilt from the Raft log at start).
    #[arg(long, value_enum, default_value_t = EngineArg::Disk)]
    engine: EngineArg,
    /// The disk engine's block cache, MiB (its bound on cached data; 1024 suits a node of
    /// a 24 GiB machine that also runs two others).
    #[arg(long, default_value_t = 1024)]
    engine_cache_mib: u64,
    /// The disk engine's memtable size per column family, MiB (smaller memtables make
    /// small transactions' inserts cheaper).
    #[arg(long, default_value_t = surge_txn::FjallOptions::default().memtable_bytes >> 20)]
    engine_memtable_mib: u64,
    /// Keys whose newest write timestamp the disk engine remembers, so a prewrite skips
    /// its conflict seek for keys last written before the transaction began.
    #[arg(long, default_value_t = surge_txn::FjallOptions::default().newest_write_keys)]
    engine_newest_write_keys: usize,
    /// The disk engine's background flush and compaction threads.
    #[arg(long, default_value_t = surge_txn::FjallOptions::default().worker_threads)]
    engine_workers: usize,
    /// The disk engine's journal size before it flushes, MiB (at least 64; bounds what a
    /// reopen replays).
    #[arg(long, default_value_t = 64)]
    engine_journal_mib: u64,
    /// The disk engine's bound on memtables not yet flushed, all column families, MiB (a
    /// write waits above it; at least twice the memtable size).
    #[arg(long, default_value_t = 128)]
    engine_write_buffer_mib: u64,
    /// Do not keep the cluster's replica stream (DIR/stream) nor serve MariaDB replicas,
    /// and do not write stream records (the whole cluster must agree: a replica stream is
    /// complete only if every coordinator writes its records).
    #[arg(long)]
    no_stream: bool,
    /// Write stream records as a coordinator, but do not keep the replica stream nor serve
    /// replicas on this node (other nodes do).
    #[arg(long, conflicts_with = "no_stream")]
    no_stream_follower: bool,
    /// Rotate the replica stream's files at this size (every node must agree).
    #[arg(long, default_value_t = surgedb::stream::DEFAULT_STREAM_FILE_SIZE)]
    stream_file_size: u64,
    /// A transaction of at least this many binlog bytes gets a stream file of its own,
    /// renamed into place (every node must agree).
    #[arg(long, default_value_t = surgedb::stream::DEFAULT_LARGE_GROUP)]
    stream_large_group: u64,
    /// Keep the cluster's stream records (in the store, beside the rows) at least this many
    /// seconds; older ones are deleted once every node keeping the stream has them in its
    /// files. The files themselves are not touched.
    #[arg(long, default_value_t = 3600)]
    stream_retention_secs: u64,
    /// A node that has not said where its stream stands for this many seconds stops holding
    /// the stream records back (if it comes back needing one that went, its copy stops
    /// with an error).
    #[arg(long, default_value_t = 86_400)]
    stream_position_ttl_secs: u64,
    /// Milliseconds from one round of this node's stream follower to the next (each takes
    /// the cluster's watermark and reads the new records: a few requests per table on
    /// every node, so shorter rounds cost the cluster more and cut the replica's lag).
    #[arg(long, default_value_t = surgedb::stream::DEFAULT_STREAM_ROUND.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(1..=2_000))]
    stream_round_ms: u64,
    /// How often, in seconds, this node asks whether it collects stream records (the
    /// smallest live node id does) and publishes its stream position (at most every 10 s).
    #[arg(long, default_value_t = 60)]
    stream_collect_interval_secs: u64,
    /// Remove this node's replica stream files last modified more than this many seconds
    /// ago (never the last one, nor one a replica is reading), as MariaDB's
    /// `binlog_expire_logs_seconds`; 0 (the default, as MariaDB's) keeps them all. A
    /// replica that needs a removed file gets error 1236. `PURGE BINARY LOGS TO 'name'` /
    /// `BEFORE 'YYYY-MM-DD HH:MM:SS'` (UTC) on the MySQL port removes them by hand.
    #[arg(long, default_value_t = 0)]
    stream_expire_logs_secs: u64,
    /// Remove this node's own binlog files (`DATA/binlog`) last modified more than this
    /// many seconds ago (never the current one, nor one the coordinator's binlog recovery
    /// could still read), as MariaDB's `binlog_expire_logs_seconds`; 0 (the default, as
    /// MariaDB's) keeps them all.
    #[arg(long, default_value_t = 0)]
    binlog_expire_logs_secs: u64,
    /// At a clean stop by SIGTERM (`surgedb cluster stop --node N`, a service manager),
    /// first hand every region and the meta group this node leads to another node, for
    /// about this many seconds at most: the regions then need no election and keep their
    /// in-memory pessimistic locks (PD's evict-leader before a TiKV restart). 0: stop
    /// without it (as SIGINT does, which `cluster stop` of every node sends).
    #[arg(long, default_value_t = 5)]
    evict_leaders_on_stop_secs: u64,
    /// This node's binlog commits a transaction whose cache reaches this many bytes by
    /// renaming the cache file into the next binlog file (MariaDB 11.7's
    /// `binlog_large_commit_threshold`).
    #[arg(long, default_value_t = surge_binlog::DEFAULT_LARGE_COMMIT_THRESHOLD)]
    binlog_large_commit_threshold: u64,
    /// This node's binlog copies every transaction's cache into the binlog, however large
    /// (MariaDB before 11.7): commit by rename off, for comparisons.
    #[arg(long)]
    binlog_copy: bool,
    /// MVCC garbage collection's transaction life time, in seconds (600, TiDB's, by
    /// default): reads and locks older than it are refused, and versions older than it plus
    /// the margin are collected (every node must agree). 0 turns garbage collection off:
    /// every version is kept for ever, and old reads are served.
    #[arg(long, default_value_t = 600)]
    gc_life_time_secs: u64,
    /// How often the node leading the meta group collects MVCC garbage, in seconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    gc_interval_secs: u64,
    /// How much older than the life time the GC safe point is, in seconds: the bound on
    /// clock skew between the nodes (at least 5: the timestamp oracle may also run up to
    /// 3 s ahead of the clocks after a leader change).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(5..))]
    gc_margin_secs: u64,
    /// How long a node's GC hold outlives the node, in seconds: the safe point stays below
    /// what a crashed node's coordinator needs to settle its in-doubt transactions for this
    /// long (TiCDC's `gc-ttl` is 86400 too).
    #[arg(long, default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..))]
    gc_hold_ttl_secs: u64,
    /// A region this node leads splits once its data passes this many MiB (TiKV's
    /// `region-split-size`); 0: never by size. The replica stream's records count: they
    /// lie in their table's last region, and a split that parts a transaction's rows from
    /// its table's newest records makes its commit two-phase.
    #[arg(long, default_value_t = surge_txn::DEFAULT_SPLIT_SIZE >> 20)]
    split_size_mib: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EngineArg {
    /// One fjall database per node in DIR/engine.
    Disk,
    /// A MemEngine per region.
    Memory,
}

impl EngineArg {
    fn as_str(self) -> &'static str {
        match self {
            EngineArg::Disk => "disk",
            EngineArg::Memory => "memory",
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LockModeArg {
    /// Through Raft; reply after apply.
    Sync,
    /// Through Raft; reply once the leader accepted the proposal.
    Pipelined,
    /// In the region leader's memory only (TiKV 6.0's in-memory pessimistic locks).
    InMemory,
}

impl From<LockModeArg> for LockMode {
    fn from(m: LockModeArg) -> LockMode {
        match m {
            LockModeArg::Sync => LockMode::Sync,
            LockModeArg::Pipelined => LockMode::Pipelined,
            LockModeArg::InMemory => LockMode::InMemory,
        }
    }
}

#[derive(Debug, Subcommand)]
enum ClusterCommand {
    /// Start N node processes on loopback ports (or restart the stopped nodes of DIR) and
    /// wait until every region has a leader.
    Start {
        /// Number of nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Cluster directory: cluster.json (addresses, pids), node-N/ and node-N.log.
        #[arg(long)]
        data: PathBuf,
        /// Pessimistic lock mode of the nodes at start.
        #[arg(long, value_enum, default_value_t = LockModeArg::InMemory)]
        lock_mode: LockModeArg,
        /// How long to wait for the cluster to answer, in seconds.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        /// Where the nodes keep the regions' data (see `surgedb node --engine`).
        #[arg(long, value_enum, default_value_t = EngineArg::Disk)]
        engine: EngineArg,
        /// Also start a private MariaDB replica (mariadbd from mariadb-server, in
        /// DIR/replica/) that follows the cluster's replica stream, and show its
        /// `SHOW SLAVE STATUS`.
        #[arg(long)]
        replica: bool,
        /// One more argument for every node process (repeatable), after the ones above:
        /// `--node-arg=--no-stream` starts the nodes without the replica stream (see
        /// `surgedb node --help`).
        #[arg(long = "node-arg", value_name = "ARG", allow_hyphen_values = true)]
        node_args: Vec<String>,
    },
    /// Stop every node of DIR cleanly (SIGINT), or one with --node (SIGTERM: it hands the
    /// regions it leads to the others first), and wait for them to exit.
    Stop {
        /// Cluster directory.
        #[arg(long)]
        data: PathBuf,
        /// Stop only this node (the others keep running, and lead its regions, with their
        /// in-memory locks, without an election; `cluster start` restarts it).
        #[arg(long)]
        node: Option<u64>,
        /// How long to wait before SIGKILL, in seconds.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
    /// Print every node's regions, leaders, epochs, lock-table memory and counters.
    Status {
        /// Cluster directory.
        #[arg(long)]
        data: PathBuf,
    },
    /// Hand the leadership of every data region (or one, with --region) to node --to, with
    /// its in-memory pessimistic locks (TiKV's transfer-leader operator): to put the
    /// leaders beside the node a benchmark's client connects to, or to empty a node before
    /// maintenance. The meta group stays where it is.
    MoveLeaders {
        /// Cluster directory.
        #[arg(long)]
        data: PathBuf,
        /// The node to lead.
        #[arg(long)]
        to: u64,
        /// Only this region (an id from `cluster status`).
        #[arg(long)]
        region: Option<u64>,
    },
}

/// Which cluster to talk to.
#[derive(Debug, Args)]
struct Target {
    /// Node addresses (HOST:PORT,...): any one that answers is enough.
    #[arg(long, value_delimiter = ',', conflicts_with = "cluster_dir")]
    cluster: Vec<String>,
    /// A directory made by `surgedb cluster start`.
    #[arg(long)]
    cluster_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum KvCommand {
    /// Print KEY's value (exit status 1 if it has none).
    Get {
        #[command(flatten)]
        target: Target,
        /// The key.
        key: String,
    },
    /// Set KEY to VALUE in one transaction.
    Put {
        #[command(flatten)]
        target: Target,
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Delete KEY in one transaction.
    Delete {
        #[command(flatten)]
        target: Target,
        /// The key.
        key: String,
    },
    /// Print KEY<TAB>VALUE for the keys of [START, END).
    Scan {
        #[command(flatten)]
        target: Target,
        /// First key (default: the start of the key space).
        #[arg(default_value = "")]
        start: String,
        /// End key, exclusive (default: the end of the key space).
        end: Option<String>,
        /// At most this many keys.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

/// How a benchmark reports.
#[derive(Debug, Args)]
struct BenchOutputArgs {
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Draw the results into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

impl From<&BenchOutputArgs> for cli::BenchOutput {
    fn from(a: &BenchOutputArgs) -> cli::BenchOutput {
        cli::BenchOutput {
            json: a.json,
            plot: a.plot.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WriteModeArg {
    /// Optimistic transactions.
    Optimistic,
    /// Pessimistic, locks through Raft, reply after apply.
    Sync,
    /// Pessimistic, locks through Raft, reply once proposed.
    Pipelined,
    /// Pessimistic, locks in the region leader's memory (TiKV 6.0).
    InMemory,
}

impl From<WriteModeArg> for WriteMode {
    fn from(m: WriteModeArg) -> WriteMode {
        match m {
            WriteModeArg::Optimistic => WriteMode::Optimistic,
            WriteModeArg::Sync => WriteMode::Pessimistic(LockMode::Sync),
            WriteModeArg::Pipelined => WriteMode::Pessimistic(LockMode::Pipelined),
            WriteModeArg::InMemory => WriteMode::Pessimistic(LockMode::InMemory),
        }
    }
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// TiKV 6.0's in-memory pessimistic locks: sysbench oltp_write_only as key-value
    /// transactions, optimistic and pessimistic with sync, pipelined and in-memory locks,
    /// against an embedded 3-node cluster (default) or a running one.
    Locks {
        /// Node addresses of a running cluster (HOST:PORT,...); default: an embedded one.
        #[arg(long, value_delimiter = ',', conflicts_with = "cluster_dir")]
        cluster: Vec<String>,
        /// A directory made by `surgedb cluster start`; default: an embedded cluster.
        #[arg(long)]
        cluster_dir: Option<PathBuf>,
        /// Client counts.
        #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
        clients: Vec<usize>,
        /// Modes compared.
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "optimistic,sync,pipelined,in-memory"
        )]
        modes: Vec<WriteModeArg>,
        /// Measured seconds per (mode, clients) point.
        #[arg(long, default_value_t = 4.0)]
        seconds: f64,
        /// Seconds per slice; the slices of a client count rotate through the modes.
        #[arg(long, default_value_t = 2.0)]
        slice: f64,
        /// Unmeasured seconds at the start of each slice.
        #[arg(long, default_value_t = 0.3)]
        warmup: f64,
        /// Rows in the table.
        #[arg(long, default_value_t = 10_000)]
        rows: u64,
        #[command(flatten)]
        output: BenchOutputArgs,
    },
    /// AliSQL hot-row group commit: one hot row incremented by many clients, grouping on
    /// (surge-txn's hot_update) vs off (ordinary pessimistic transactions), against an
    /// embedded 3-node cluster (default) or a running one; --crate-only runs surge-hotspot
    /// alone.
    Hotspot {
        /// Node addresses of a running cluster (HOST:PORT,...); default: an embedded one.
        #[arg(long, value_delimiter = ',', conflicts_with = "cluster_dir")]
        cluster: Vec<String>,
        /// A directory made by `surgedb cluster start`; default: an embedded cluster.
        #[arg(long)]
        cluster_dir: Option<PathBuf>,
        /// Run on surge-hotspot alone (a durable counter file), without the cluster.
        #[arg(long, conflicts_with_all = ["cluster", "cluster_dir"])]
        crate_only: bool,
        /// Client counts.
        #[arg(long, value_delimiter = ',', default_value = "1,16,64,256")]
        clients: Vec<usize>,
        /// Measured seconds per client count and mode.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// Directory for --crate-only's scratch files (default: the system's temporary
        /// directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        #[command(flatten)]
        output: BenchOutputArgs,
    },
    /// AliSQL / MariaDB 11.7 large-transaction binlog commit by rename: small commits beside
    /// a big transaction's commit step, none vs copy vs rename, through surge-txn (a
    /// coordinator with a binlog) on a fresh embedded 3-node cluster per run (default) or a
    /// running one.
    Bigtxn {
        /// Node addresses of a running cluster (HOST:PORT,...); default: embedded clusters.
        #[arg(long, value_delimiter = ',', conflicts_with = "cluster_dir")]
        cluster: Vec<String>,
        /// A directory made by `surgedb cluster start`; default: embedded clusters.
        #[arg(long)]
        cluster_dir: Option<PathBuf>,
        /// The big transaction's size in MiB.
        #[arg(long, default_value_t = 256)]
        mib: u64,
        /// Runs of each method, interleaved.
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// Threads committing small transactions.
        #[arg(long, default_value_t = 4)]
        clients: usize,
        /// The measured window from the start of the commit step, in milliseconds.
        #[arg(long, default_value_t = 2000)]
        window_ms: u64,
        /// Directory for the coordinator's binlog files and the embedded clusters (default:
        /// the system's temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
        #[command(flatten)]
        output: BenchOutputArgs,
    },
    /// The write-ups' experiments as their authors ran them: stock sysbench through the
    /// MySQL protocol against a fresh 3-node cluster (node 1's MySQL port) and a private
    /// durable MariaDB 10.11 started here, variants interleaved: 000 oltp_write_only by
    /// lock mode, 003 oltp_write_only beside big UPDATEs, 004 the hinted hot-row UPDATE
    /// with hotspot ON and OFF; with `--only oltp`, oltp_point_select and oltp_write_only
    /// beside MariaDB. Needs sysbench, mariadb, mariadbd, mariadb-install-db and
    /// mariadb-binlog on PATH.
    Sysbench {
        /// Experiments to run, in order.
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "locks,bigtxn,hot-row"
        )]
        only: Vec<ExperimentArg>,
        /// Scratch directory (must not hold a `cluster/` yet); default: a new one under
        /// the system's temporary directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Leave MariaDB out.
        #[arg(long)]
        no_mariadb: bool,
        /// 000's sysbench thread counts.
        #[arg(long, value_delimiter = ',', default_value = "1,8,32,64")]
        lock_threads: Vec<usize>,
        /// 004's sysbench thread counts.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1,4,8,16,32,64,128,256,512"
        )]
        hot_threads: Vec<usize>,
        /// `oltp`'s oltp_point_select threads.
        #[arg(long, default_value_t = 16)]
        point_threads: usize,
        /// `oltp`'s oltp_write_only threads.
        #[arg(long, default_value_t = 32)]
        write_threads: usize,
        /// Seconds per sysbench run of one variant (000, 004 and `oltp`).
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Rotations through every variant.
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// sysbench's --tables (oltp_write_only and oltp_point_select).
        #[arg(long, default_value_t = 4)]
        tables: usize,
        /// sysbench's --table-size (oltp_write_only and oltp_point_select).
        #[arg(long, default_value_t = 10_000)]
        table_size: usize,
        /// 003's big-transaction sizes (MiB of binlog events).
        #[arg(long, value_delimiter = ',', default_value = "64,256,512,1024")]
        big_mib: Vec<u64>,
        /// 003's seconds per sysbench run.
        #[arg(long, default_value_t = 30)]
        big_seconds: u64,
        /// 003's seconds between big transactions.
        #[arg(long, default_value_t = 5)]
        big_every: u64,
        /// 003 also on a second cluster whose nodes copy large transactions into the
        /// binlog (`node --binlog-copy`), beside commit by rename.
        #[arg(long)]
        big_copy: bool,
        /// `oltp`: before each SurgeDB slice, hand every region's leadership to this node
        /// (`cluster move-leaders`): 1 (sysbench's node) measures reads and locks served
        /// where the statement runs, 2 every one a network hop away. Default: where the
        /// cluster put them (each slice reports it).
        #[arg(long)]
        oltp_leaders_on: Option<u64>,
        /// An argument for every node (repeatable), e.g.
        /// `--node-arg=--binlog-large-commit-threshold=8388608`.
        #[arg(long = "node-arg", value_name = "ARG", allow_hyphen_values = true)]
        node_args: Vec<String>,
        /// Print one JSON document instead of the tables.
        #[arg(long)]
        json: bool,
        /// Write one SVG plot per experiment into this directory.
        #[arg(long)]
        plot_dir: Option<PathBuf>,
    },
    /// The replica stream's cost and a MariaDB replica's lag: sysbench oltp_write_only, each
    /// run on a fresh 3-node cluster: without the stream, with its records but no follower,
    /// with it, with `mariadb-binlog` reading it, and with a private MariaDB 10.11 replica
    /// attached (lag probed through node 2). Needs sysbench, mariadb, mariadb-binlog,
    /// mariadbd and mariadb-install-db on PATH.
    Replica {
        /// Scratch directory; default: a new one under the system's temporary directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// sysbench threads.
        #[arg(long, default_value_t = 32)]
        threads: usize,
        /// Seconds per run.
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// oltp_write_only's --tables.
        #[arg(long, default_value_t = 4)]
        tables: usize,
        /// oltp_write_only's --table-size.
        #[arg(long, default_value_t = 10_000)]
        table_size: usize,
        /// Repeat the five runs this many times (each round starts one variant later) and
        /// report the medians: runs on this shared machine vary by tens of percent.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=20))]
        rounds: u64,
        /// An argument for every node of every cluster (repeat for several), after the
        /// run's own: `--node-arg=--stream-round-ms=50`. (`--no-stream` here would leave the
        /// reader and replica runs nothing to read.)
        #[arg(long = "node-arg", value_name = "ARG", allow_hyphen_values = true)]
        node_args: Vec<String>,
        /// Hand every region's leadership to this node after the prepare (sysbench talks
        /// to node 1, so the default keeps its requests local); 0 leaves the leaders where
        /// the bootstrap put them (node 1 or 2, at random).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=3))]
        leaders_on: u64,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
    },
}

/// `bench sysbench --only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExperimentArg {
    /// 000, in-memory pessimistic locks.
    Locks,
    /// 003, large transactions.
    Bigtxn,
    /// 004, hot row.
    HotRow,
    /// SurgeDB beside MariaDB on oltp_point_select and oltp_write_only (not in the
    /// default list).
    Oltp,
}

#[derive(Debug, Subcommand)]
enum BinlogCommand {
    /// Print a binlog file's events, one per line, verifying every checksum.
    Dump {
        /// The binlog file, or `-` to read standard input.
        file: OsString,
    },
    /// Read every binlog file under DIR back with surge-binlog's reader, verifying every
    /// event's checksum, and with `mariadb-binlog --verify-binlog-checksum` when it is
    /// installed. DIR: a cluster directory (every node's `binlog/`), a node's data
    /// directory, or a binlog directory.
    Verify {
        /// The directory (searched recursively).
        dir: PathBuf,
        /// Also read each file with mariadb-binlog: auto (when installed), require, off.
        #[arg(long, value_enum, default_value = "auto")]
        mariadb: cli::MariadbCheck,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The unlocked handle, for every command: `node`, `demo` and `bench` run threads that
    // print too (a crash point's `reached` line), which would block forever behind a lock
    // held for the whole run.
    let mut stdout = std::io::stdout();
    let (context, failure) = match cli.command {
        Command::Demo => match surgedb::demo::run(&mut stdout) {
            Err(e) if !e.is_broken_pipe() => ("surgedb demo", e.to_string()),
            _ => return ExitCode::SUCCESS,
        },
        Command::Binlog {
            command: BinlogCommand::Dump { file },
        } => match dump::dump(&Input::from_arg(&file), &mut stdout) {
            Err(e) if !e.is_broken_pipe() => ("surgedb binlog dump", e.to_string()),
            _ => return ExitCode::SUCCESS,
        },
        Command::Binlog {
            command: BinlogCommand::Verify { dir, mariadb },
        } => (
            "surgedb binlog verify",
            or_ok(binlog_verify(&dir, mariadb, &mut stdout)),
        ),
        Command::Node(args) => ("surgedb node", or_ok(node(args, &mut stdout))),
        Command::Cluster { command } => ("surgedb cluster", or_ok(cluster(command, &mut stdout))),
        Command::Kv { command } => ("surgedb kv", or_ok(kv(command, &mut stdout))),
        Command::Txn { target, file } => ("surgedb txn", or_ok(txn(&target, &file, &mut stdout))),
        Command::Bench { command } => ("surgedb bench", or_ok(bench(command, &mut stdout))),
        Command::Gc { command } => ("surgedb gc", or_ok(gc(command, &mut stdout))),
        Command::Stream { command } => ("surgedb stream", or_ok(stream(command, &mut stdout))),
    };
    exit_with(context, failure)
}

/// Sends the crates' `tracing` events, and the disk engine's `log` records, to standard
/// error: warnings and up, or what `SURGE_LOG` says. Without it a node dropped them all,
/// and a failure logged only there (a Raft driver's storage error) left no trace in the
/// node's log.
fn init_node_log() -> Result<(), String> {
    let filter = match std::env::var("SURGE_LOG") {
        Ok(spec) if !spec.trim().is_empty() => tracing_subscriber::EnvFilter::try_new(&spec)
            .map_err(|e| format!("SURGE_LOG={spec:?}: {e}"))?,
        Ok(_) | Err(std::env::VarError::NotPresent) => tracing_subscriber::EnvFilter::new("warn"),
        Err(e) => return Err(format!("SURGE_LOG: {e}")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_thread_names(true)
        .try_init()
        .map_err(|e| format!("node log: {e}"))
}

/// Success for an empty failure; else prints `context: failure` to standard error.
fn exit_with(context: &str, failure: String) -> ExitCode {
    if failure.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!("{context}: {failure}");
    ExitCode::FAILURE
}

/// The error's text, or empty for success.
fn or_ok(r: Result<(), String>) -> String {
    r.err().unwrap_or_default()
}

fn node(args: NodeArgs, out: &mut impl Write) -> Result<(), String> {
    init_node_log()?;
    let peers = parse_peers(&args.peers).map_err(|e| e.to_string())?;
    let mut config = NodeConfig::new(args.id, peers, args.data);
    config.cluster_id = args.cluster_id;
    config.lock_mode = args.lock_mode.into();
    config.mysql_listen = args.mysql_listen;
    if args.engine == EngineArg::Memory {
        config.engine = surge_txn::EngineKind::Memory;
    } else {
        let options = surge_txn::FjallOptions::default()
            .with_cache_bytes(args.engine_cache_mib << 20)
            .with_memtable_bytes(args.engine_memtable_mib << 20)
            .with_newest_write_keys(args.engine_newest_write_keys)
            .with_max_journal_bytes(args.engine_journal_mib << 20)
            .with_max_write_buffer_bytes(args.engine_write_buffer_mib << 20)
            .with_worker_threads(args.engine_workers);
        options.validate().map_err(|e| e.to_string())?;
        config.engine = surge_txn::EngineKind::Disk(options);
    }
    if args.no_stream {
        let off = config.coordinator.stream.clone().with_enabled(false);
        config.coordinator = config.coordinator.clone().with_stream(off);
    }
    let binlog = config
        .coordinator
        .binlog
        .clone()
        .unwrap_or_else(|| surge_txn::BinlogOptions::new(std::path::PathBuf::new()))
        .with_large_commit_threshold(args.binlog_large_commit_threshold)
        .with_commit_by_rename(!args.binlog_copy);
    config.coordinator = config.coordinator.clone().with_binlog(Some(binlog));
    config.stream = (!args.no_stream && !args.no_stream_follower).then(|| {
        surgedb::stream::StreamConfig::new(std::path::PathBuf::new())
            .with_max_file_size(args.stream_file_size)
            .with_large_group(args.stream_large_group)
            .with_expire_logs(
                (args.stream_expire_logs_secs > 0)
                    .then(|| Duration::from_secs(args.stream_expire_logs_secs)),
            )
            .with_round_every(Duration::from_millis(args.stream_round_ms))
            .with_retention(
                surgedb::stream::Retention::default()
                    .with_keep(Duration::from_secs(args.stream_retention_secs))
                    .with_position_ttl(Duration::from_secs(args.stream_position_ttl_secs))
                    .with_collect_every(Duration::from_secs(
                        args.stream_collect_interval_secs.max(1),
                    )),
            )
    });
    config.split_size =
        (args.split_size_mib > 0).then(|| args.split_size_mib.saturating_mul(1 << 20));
    config.binlog_expire = (args.binlog_expire_logs_secs > 0)
        .then(|| Duration::from_secs(args.binlog_expire_logs_secs));
    config.evict_leaders_on_stop = (args.evict_leaders_on_stop_secs > 0)
        .then(|| Duration::from_secs(args.evict_leaders_on_stop_secs));
    config.gc = (args.gc_life_time_secs > 0).then(|| {
        surgedb::server::GcConfig::default()
            .with_life_time(Duration::from_secs(args.gc_life_time_secs))
            .with_interval(Duration::from_secs(args.gc_interval_secs))
            .with_margin(Duration::from_secs(args.gc_margin_secs))
            .with_hold_ttl(Duration::from_secs(args.gc_hold_ttl_secs))
    });
    let ticks = args.election_ms / config.tick.as_millis().max(1) as u64;
    config.election_tick = u32::try_from(ticks.max(5)).unwrap_or(u32::MAX);
    config.heartbeat_tick = (config.election_tick / 8).max(1);
    // SIGTERM: a clean stop that hands this node's leaders over first; SIGINT (what
    // `cluster stop` sends when it stops every node): a clean stop without the handover.
    let stop = Arc::new(AtomicUsize::new(0));
    for (sig, how) in [
        (
            signal_hook::consts::SIGTERM,
            surgedb::server::STOP_WITH_HANDOVER,
        ),
        (
            signal_hook::consts::SIGINT,
            surgedb::server::STOP_WITHOUT_HANDOVER,
        ),
    ] {
        signal_hook::flag::register_usize(sig, stop.clone(), how)
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    let process = NodeProcess::start(&config).map_err(|e| e.to_string())?;
    let _ = writeln!(
        out,
        "surgedb node {}: cluster {}, clients on {}, raft on {}, data in {}",
        config.id,
        process.cluster_id(),
        process.client_addr(),
        process.raft_addr(),
        config.data.display()
    );
    let _ = out.flush();
    if let Some(failure) = process.run_until(&stop) {
        return Err(format!(
            "surgedb node {}: stopped: its Raft driver stopped: {failure}",
            config.id
        ));
    }
    let _ = writeln!(out, "surgedb node {}: stopped", config.id);
    Ok(())
}

fn cluster(command: ClusterCommand, out: &mut impl Write) -> Result<(), String> {
    match command {
        ClusterCommand::Start {
            nodes,
            data,
            lock_mode,
            timeout,
            engine,
            replica,
            node_args,
        } => {
            let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
            let mode: LockMode = lock_mode.into();
            let mut args: Vec<String> = vec![
                "--lock-mode".into(),
                mode.as_str().into(),
                "--engine".into(),
                engine.as_str().into(),
            ];
            args.extend(node_args);
            let opts = StartOptions::new(exe)
                .with_node_args(args)
                .with_ready_timeout(Duration::from_secs(timeout));
            let (manifest, outcome) =
                surgedb::local::start(&data, nodes, &opts).map_err(|e| e.to_string())?;
            for (id, what) in outcome {
                let node = manifest.node(id).ok_or("node vanished from the manifest")?;
                let what = match what {
                    NodeStart::Started => "started",
                    NodeStart::AlreadyRunning => "already running",
                };
                let _ = writeln!(out, "node {id}: {what}, pid {}, {}", node.pid, node.addr);
                if let Some(line) = manifest.mariadb_command(id) {
                    let _ = writeln!(out, "  SQL: {line}");
                }
            }
            let _ = writeln!(
                out,
                "cluster {} ready: {}",
                manifest.cluster_id,
                manifest.addrs().join(",")
            );
            if replica {
                cli::start_replica(&data, &manifest, out).map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        ClusterCommand::Stop {
            data,
            node,
            timeout,
        } => {
            let timeout = Duration::from_secs(timeout);
            let stopped = match node {
                Some(id) => surgedb::local::stop_node(&data, id, timeout),
                None => surgedb::local::stop(&data, timeout),
            }
            .map_err(|e| e.to_string())?;
            let _ = writeln!(out, "stopped nodes {stopped:?}");
            if node.is_none() && surgedb::local::stop_replica(&data, timeout) {
                let _ = writeln!(out, "stopped the replica");
            }
            Ok(())
        }
        ClusterCommand::Status { data } => {
            cli::cluster_status(&data, out).map_err(|e| e.to_string())
        }
        ClusterCommand::MoveLeaders { data, to, region } => {
            let (_, client) =
                cli::connect_dir(&data, ClientOptions::default()).map_err(|e| e.to_string())?;
            let moves = client.move_leaders(to, region).map_err(|e| e.to_string())?;
            for m in &moves.moved {
                let _ = writeln!(
                    out,
                    "region {}: node {} -> node {to} ({} in-memory locks with it)",
                    m.region_id, m.from, m.locks
                );
            }
            for (r, why) in &moves.failed {
                let _ = writeln!(out, "region {r}: not moved: {why}");
            }
            for (n, why) in &moves.unasked {
                let _ = writeln!(out, "node {n}: not asked: {why}");
            }
            let _ = writeln!(
                out,
                "moved {} region(s) to node {to}; {} already there; {} not moved",
                moves.moved.len(),
                moves.already,
                moves.failed.len()
            );
            if moves.complete() {
                Ok(())
            } else {
                Err(format!(
                    "{} region(s) not moved, {} node(s) not asked",
                    moves.failed.len(),
                    moves.unasked.len()
                ))
            }
        }
    }
}

fn connect(target: &Target) -> Result<Client, String> {
    let addrs = match (&target.cluster_dir, target.cluster.is_empty()) {
        (Some(dir), _) => {
            return cli::connect_dir(dir, ClientOptions::default())
                .map(|(_, client)| client)
                .map_err(|e| e.to_string());
        }
        (None, false) => target.cluster.clone(),
        (None, true) => {
            return Err("name the cluster with --cluster ADDR,... or --cluster-dir DIR".into());
        }
    };
    Client::connect(&addrs, ClientOptions::default()).map_err(|e| e.to_string())
}

fn kv(command: KvCommand, out: &mut impl Write) -> Result<(), String> {
    let text = |e: cli::KvError| e.to_string();
    match command {
        KvCommand::Get { target, key } => {
            cli::get(connect(&target)?.txn(), &key, out).map_err(text)
        }
        KvCommand::Put { target, key, value } => {
            cli::write(&connect(&target)?, &key, Some(&value), out).map_err(text)
        }
        KvCommand::Delete { target, key } => {
            cli::write(&connect(&target)?, &key, None, out).map_err(text)
        }
        KvCommand::Scan {
            target,
            start,
            end,
            limit,
        } => cli::scan(connect(&target)?.txn(), &start, end.as_deref(), limit, out)
            .map(|_| ())
            .map_err(text),
    }
}

fn gc(command: GcCommand, out: &mut impl Write) -> Result<(), String> {
    let text = |e: cli::KvError| e.to_string();
    match command {
        GcCommand::Holds { target } => cli::print_gc_holds(connect(&target)?.txn(), out)
            .map(|_| ())
            .map_err(text),
        GcCommand::RemoveHold { target, owner } => {
            cli::remove_gc_hold(connect(&target)?.txn(), owner, out).map_err(text)
        }
    }
}

fn stream(command: StreamCommand, out: &mut impl Write) -> Result<(), String> {
    let text = |e: cli::KvError| e.to_string();
    match command {
        StreamCommand::Positions { target } => {
            cli::print_stream_positions(connect(&target)?.txn(), out)
                .map(|_| ())
                .map_err(text)
        }
        StreamCommand::RemovePosition { target, owner } => {
            cli::remove_stream_position(connect(&target)?.txn(), owner, out).map_err(text)
        }
    }
}

fn txn(target: &Target, file: &OsString, out: &mut impl Write) -> Result<(), String> {
    let text = if file == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("standard input: {e}"))?
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", Path::new(file).display()))?
    };
    let ops = cli::parse_script(&text).map_err(|e| e.to_string())?;
    let client = connect(target)?;
    cli::run_script(&client, &ops, out).map_err(|e| e.to_string())
}

fn bench(command: BenchCommand, out: &mut impl Write) -> Result<(), String> {
    match command {
        BenchCommand::Locks {
            cluster,
            cluster_dir,
            clients,
            modes,
            seconds,
            slice,
            warmup,
            rows,
            output,
        } => {
            let target = bench_target(&cluster, cluster_dir.as_deref())?;
            let opts = LocksOptions::default()
                .with_clients(clients)
                .with_modes(modes.into_iter().map(WriteMode::from).collect())
                .with_seconds(seconds)
                .with_slice(slice)
                .with_warmup(warmup)
                .with_rows(rows);
            cli::bench_locks(&target, &opts, &(&output).into(), out)
        }
        BenchCommand::Hotspot {
            cluster,
            cluster_dir,
            crate_only,
            clients,
            seconds,
            dir,
            output,
        } => cli::bench_hotspot(
            (!crate_only)
                .then(|| bench_target(&cluster, cluster_dir.as_deref()))
                .transpose()?
                .as_ref(),
            dir.as_deref(),
            &HotspotOptions::default()
                .with_clients(clients)
                .with_seconds(seconds),
            &(&output).into(),
            out,
        ),
        BenchCommand::Bigtxn {
            cluster,
            cluster_dir,
            mib,
            rounds,
            clients,
            window_ms,
            dir,
            output,
        } => cli::bench_bigtxn(
            (!cluster.is_empty() || cluster_dir.is_some())
                .then(|| bench_target(&cluster, cluster_dir.as_deref()))
                .transpose()?
                .as_ref(),
            dir.as_deref(),
            &BigTxnOptions::default()
                .with_mib(mib)
                .with_rounds(rounds)
                .with_clients(clients)
                .with_window_ms(window_ms),
            &(&output).into(),
            out,
        ),
        BenchCommand::Sysbench {
            only,
            dir,
            no_mariadb,
            lock_threads,
            hot_threads,
            point_threads,
            write_threads,
            seconds,
            rounds,
            tables,
            table_size,
            big_mib,
            big_seconds,
            big_every,
            big_copy,
            oltp_leaders_on,
            node_args,
            json,
            plot_dir,
        } => {
            use surgedb::bench::sysbench::{Experiment, SysbenchOptions};
            let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
            let dir = match dir {
                Some(d) => d,
                None => tempfile::Builder::new()
                    .prefix("surgedb-sysbench.")
                    .tempdir()
                    .map_err(|e| format!("scratch directory: {e}"))?
                    .keep(),
            };
            let mut opts = SysbenchOptions::new(exe, &dir);
            opts.experiments = only
                .into_iter()
                .map(|e| match e {
                    ExperimentArg::Locks => Experiment::Locks,
                    ExperimentArg::Bigtxn => Experiment::BigTxn,
                    ExperimentArg::HotRow => Experiment::HotRow,
                    ExperimentArg::Oltp => Experiment::Oltp,
                })
                .collect();
            opts.mariadb = !no_mariadb;
            opts.lock_threads = lock_threads;
            opts.hot_threads = hot_threads;
            opts.point_threads = point_threads;
            opts.write_threads = write_threads;
            opts.seconds = seconds;
            opts.rounds = rounds;
            opts.tables = tables;
            opts.table_size = table_size;
            opts.big_mib = big_mib;
            opts.big_seconds = big_seconds;
            opts.big_every = Duration::from_secs(big_every);
            opts.big_copy = big_copy;
            opts.oltp_leaders_on = oltp_leaders_on;
            opts.node_args = node_args;
            if !json {
                let _ = writeln!(out, "bench sysbench: scratch directory {}", dir.display());
            }
            cli::bench_sysbench(&opts, json, plot_dir.as_deref(), out)
        }
        BenchCommand::Replica {
            dir,
            threads,
            seconds,
            tables,
            table_size,
            rounds,
            node_args,
            leaders_on,
            json,
        } => {
            use surgedb::bench::replica::ReplicaBenchOptions;
            let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
            let dir = match dir {
                Some(d) => d,
                None => tempfile::Builder::new()
                    .prefix("surgedb-replica.")
                    .tempdir()
                    .map_err(|e| format!("scratch directory: {e}"))?
                    .keep(),
            };
            let mut opts = ReplicaBenchOptions::new(exe, &dir);
            opts.threads = threads;
            opts.seconds = seconds;
            opts.tables = tables;
            opts.table_size = table_size;
            opts.rounds = usize::try_from(rounds).unwrap_or(1);
            opts.node_args = node_args;
            opts.leaders_on = (leaders_on > 0).then_some(leaders_on);
            cli::bench_replica(&opts, json, out)
        }
    }
}

/// The cluster named by `--cluster` or `--cluster-dir`, or an embedded one.
fn bench_target(cluster: &[String], cluster_dir: Option<&Path>) -> Result<BenchTarget, String> {
    match (cluster_dir, cluster.is_empty()) {
        (Some(dir), _) => BenchTarget::remote(
            &ClusterManifest::load(dir)
                .map_err(|e| e.to_string())?
                .addrs(),
        ),
        (None, false) => BenchTarget::remote(cluster),
        (None, true) => BenchTarget::embedded(),
    }
    .map_err(|e| e.to_string())
}

fn binlog_verify(
    dir: &Path,
    mariadb: cli::MariadbCheck,
    out: &mut impl Write,
) -> Result<(), String> {
    let report = cli::verify(dir, mariadb).map_err(|e| e.to_string())?;
    for f in &report.files {
        let _ = writeln!(
            out,
            "{}: {} events, {} transactions, {} bytes: every checksum verified{}",
            f.path.display(),
            f.events,
            f.transactions,
            f.bytes,
            if f.mariadb_checked {
                ", mariadb-binlog ok"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "{} binlog files ({} transactions) under {} ({}) read back with surge-binlog's reader{}",
        report.files.len(),
        report.files.iter().map(|f| f.transactions).sum::<u64>(),
        dir.display(),
        report.kind.describe(),
        match (report.mariadb, mariadb) {
            (true, _) => " and mariadb-binlog --verify-binlog-checksum",
            (false, cli::MariadbCheck::Off) => " (mariadb-binlog not run: --mariadb off)",
            (false, _) => " (mariadb-binlog not installed: not run)",
        }
    );
    Ok(())
}
