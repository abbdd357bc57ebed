//! MariaDB's own binlog reader run over files a test wrote.

use std::path::Path;
use std::process::Command;

/// The environment variable that turns a missing `mariadb-binlog` into a failure.
pub const REQUIRE_ENV: &str = "SURGE_REQUIRE_MARIADB_BINLOG";

/// Runs `mariadb-binlog --verify-binlog-checksum VERBOSITY FILES...` (`verbosity`: `-v` to
/// decode row events, `-vv` to add column types) and returns its standard output.
///
/// `None` when the tool is not installed, after printing `SKIPPED: ...`; unless
/// `SURGE_REQUIRE_MARIADB_BINLOG=1` (as in CI), when the test fails instead. The test also
/// fails, naming the files and quoting the tool's error and the end of its output, when
/// `mariadb-binlog` refuses a file.
pub fn verify<P: AsRef<Path>>(files: &[P], verbosity: &str) -> Option<String> {
    let out = match Command::new("mariadb-binlog")
        .arg("--verify-binlog-checksum")
        .arg(verbosity)
        .args(files.iter().map(AsRef::as_ref))
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var(REQUIRE_ENV).as_deref() != Ok("1"),
                "mariadb-binlog is required ({REQUIRE_ENV}=1) but not installed"
            );
            eprintln!("SKIPPED: mariadb-binlog is not installed (apt-get install mariadb-client)");
            return None;
        }
        Err(e) => panic!("running mariadb-binlog: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mariadb-binlog refused {:?}: {}\nstderr: {}\nstdout tail: {}",
        files
            .iter()
            .map(|f| f.as_ref().display().to_string())
            .collect::<Vec<_>>(),
        out.status,
        String::from_utf8_lossy(&out.stderr),
        stdout
            .char_indices()
            .rev()
            .nth(2000)
            .map_or(stdout.as_str(), |(i, _)| &stdout[i..])
    );
    Some(stdout)
}
