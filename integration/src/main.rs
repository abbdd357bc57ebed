//! The `surgedb` command.
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use surgedb::scenarios;

/// SurgeDB: in-memory pessimistic locks, large-transaction binlog commit by rename, hot-row
/// group commit.
#[derive(Debug, Parser)]
#[command(name = "surgedb", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the seed scenarios and print what each shows.
    Demo,
    /// Binlog tools.
    Binlog {
        #[command(subcommand)]
        command: BinlogCommand,
    },
}

#[derive(Debug, Subcommand)]
enum BinlogCommand {
    /// Print a binlog file's events, one per line, verifying every checksum.
    Dump {
        /// The binlog file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => match demo() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("surgedb demo: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Binlog {
            command: BinlogCommand::Dump { file },
        } => match surgedb::dump::dump(&file, &mut std::io::stdout().lock()) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("surgedb binlog dump: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn demo() -> Result<(), scenarios::ScenarioError> {
    println!("SurgeDB demo: the seed techniques, each on its own crate.");
    println!("(The full transactional store over these crates, surge-txn, is not built yet.)");
    println!();
    println!("== seed 000: in-memory pessimistic locks (surge-lock-table) ==");
    println!("{}", scenarios::run_locks()?);
    println!();
    let dir = tempfile::tempdir()?;
    println!("== seed 000 on a three-node Raft group (surge-raft-lite + surge-lock-table) ==");
    println!("{}", scenarios::run_cluster(dir.path())?);
    println!();
    println!("== seed 003: a 64 MiB transaction commits by copy, then by rename (surge-binlog) ==");
    println!("{}", scenarios::run_big_txn(dir.path(), 64)?);
    println!();
    println!("== seed 004: hot-row group commit, every update fdatasynced (surge-hotspot) ==");
    let report = scenarios::run_hot_row(dir.path(), &[1, 64], Duration::from_secs(1))?;
    println!("{report}");
    Ok(())
}
