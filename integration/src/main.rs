//! The `surgedb` command.
#![deny(unsafe_code)]

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use surgedb::dump::{self, Input};

/// SurgeDB's command-line tool: a demo of its crates and a binlog file reader.
#[derive(Debug, Parser)]
#[command(
    name = "surgedb",
    version,
    about = "SurgeDB's command-line tool: a demo of its crates and a binlog file reader.",
    long_about = "SurgeDB's command-line tool: a demo of its crates and a binlog file reader.\n\n\
        Today SurgeDB is four crates that work on their own: in-memory pessimistic locks \
        (surge-lock-table), Raft (surge-raft-lite), a MariaDB-compatible binlog with commit by \
        rename (surge-binlog) and hot-row group commit (surge-hotspot). The transactional store \
        that assembles them (surge-txn) is being built; `surgedb demo` runs each crate on its \
        own, not through that store."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run each technique on its own crate and print what it shows (about 10 s).
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
        /// The binlog file, or `-` to read standard input.
        file: OsString,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut stdout = std::io::stdout().lock();
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
    };
    eprintln!("{context}: {failure}");
    ExitCode::FAILURE
}
