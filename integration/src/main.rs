//! The `surgedb` command.
#![deny(unsafe_code)]

use clap::{Parser, Subcommand};

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
    /// Run the seed scenarios end to end and print what each shows.
    Demo,
}

fn main() {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => demo(),
    }
}

fn demo() {
    println!("SurgeDB demo");
    println!();
    println!(
        "The embedded three-node cluster is not built yet (the txn and integration layers are"
    );
    println!("future work). What is built so far, crate by crate:");
    for (name, what) in [
        (
            "surge-lock-table",
            "region in-memory pessimistic lock table",
        ),
        ("surge-raft-lite", "minimal crash-safe Raft"),
        (
            "surge-binlog",
            "MariaDB-compatible binlog with commit by rename",
        ),
        ("surge-hotspot", "hot-row group commit"),
        ("surge-txn", "not built yet"),
    ] {
        println!("  {name:<18} {what}");
    }
}
