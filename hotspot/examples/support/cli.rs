//! The examples' command line: `--help`/`-h` prints the usage and exits 0; a failure prints
//! `error: <message>` (the error's `Display`, never its `Debug`) and exits 2.

use std::fmt::Display;
use std::process::ExitCode;

/// Prints `usage` if asked for, else runs `body` and reports its error as a sentence.
pub fn run<E: Display>(usage: &str, body: impl FnOnce() -> Result<(), E>) -> ExitCode {
    let wants_help = std::env::args().any(|a| matches!(a.as_str(), "--help" | "-h"));
    if wants_help {
        println!("{}", usage.trim());
        return ExitCode::SUCCESS;
    }
    let Err(e) = body() else {
        return ExitCode::SUCCESS;
    };
    eprintln!("error: {e}\n(run with --help for the usage)");
    ExitCode::from(2)
}
