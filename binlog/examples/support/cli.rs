//! Command-line plumbing of the examples: `--help` (or `-h`) prints the usage and exits 0;
//! an error is printed as one sentence (`error: ...`, its `Display`, not `Debug`) and exits 2.

use std::process::ExitCode;

/// Runs `run` unless `--help` was asked for; turns its error into a message and exit code 2.
pub fn main_with_usage<E: std::fmt::Display>(
    usage: &str,
    run: impl FnOnce() -> Result<(), E>,
) -> ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{}", usage.trim());
        return ExitCode::SUCCESS;
    }
    run().map_or_else(
        |e| {
            eprintln!("error: {e}\n(run with --help for the usage)");
            ExitCode::from(2)
        },
        |()| ExitCode::SUCCESS,
    )
}
