//! [`Endpoint`]: a MySQL-protocol server the benchmark drives, through the stock `mariadb`
//! client (statements) and `sysbench` (load).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::error::{SysbenchError, tail};
use super::output::{SysbenchResult, parse_sysbench};

/// A server speaking the MySQL protocol on loopback, user `root` without a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its name in tables and errors (`surgedb`, `mariadb`).
    pub name: String,
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
}

impl Endpoint {
    /// `name` at `addr` (`HOST:PORT`).
    ///
    /// # Errors
    /// [`SysbenchError::Setup`] when `addr` is not `HOST:PORT`.
    pub fn parse(name: &str, addr: &str) -> Result<Endpoint, SysbenchError> {
        let bad = || SysbenchError::Setup {
            what: name.to_string(),
            detail: format!("address `{addr}` is not HOST:PORT"),
        };
        let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
        let port = port.parse().map_err(|_| bad())?;
        Ok(Endpoint {
            name: name.to_string(),
            host: host.to_string(),
            port,
        })
    }

    /// Runs `sql` (one or more `;`-separated statements) with `mariadb --comments` (the
    /// hints in `/*+ */` reach the server) and returns the result rows, tab-separated,
    /// without column names.
    ///
    /// # Errors
    /// [`SysbenchError::Spawn`] without the client; [`SysbenchError::Sql`] when the server
    /// refuses a statement.
    pub fn sql(&self, sql: &str) -> Result<String, SysbenchError> {
        let mut cmd = Command::new("mariadb");
        cmd.args(["--comments", "-N", "-B", "-uroot"])
            .arg(format!("-h{}", self.host))
            .arg(format!("-P{}", self.port))
            .arg("-e")
            .arg(sql);
        let out = output_within(&mut cmd, SQL_LIMIT, &format!("`{sql}` on {}", self.name))?;
        if !out.status.success() {
            return Err(SysbenchError::Sql {
                endpoint: self.name.clone(),
                statement: sql.to_string(),
                detail: tail(&String::from_utf8_lossy(&out.stderr), 400),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// [`Endpoint::sql`] with the statements on the client's standard input (scripts too
    /// long for one argument: bulk loads).
    ///
    /// # Errors
    /// As [`Endpoint::sql`].
    pub fn sql_script(&self, script: &str) -> Result<(), SysbenchError> {
        use std::io::Write as _;
        let mut child = Command::new("mariadb")
            .args(["--comments", "-N", "-B", "-uroot"])
            .arg(format!("-h{}", self.host))
            .arg(format!("-P{}", self.port))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| SysbenchError::Spawn {
                program: "mariadb".into(),
                detail: e.to_string(),
            })?;
        let written = child
            .stdin
            .take()
            .map(|mut i| i.write_all(script.as_bytes()));
        let out = child.wait_with_output().map_err(|e| SysbenchError::Spawn {
            program: "mariadb".into(),
            detail: e.to_string(),
        })?;
        if !out.status.success() || !matches!(written, Some(Ok(()))) {
            return Err(SysbenchError::Sql {
                endpoint: self.name.clone(),
                statement: format!("{}...", script.chars().take(120).collect::<String>()),
                detail: tail(&String::from_utf8_lossy(&out.stderr), 400),
            });
        }
        Ok(())
    }

    /// [`Endpoint::sql`] for a query answering one integer.
    ///
    /// # Errors
    /// As [`Endpoint::sql`]; [`SysbenchError::Sql`] when the answer is not one integer.
    pub fn query_u64(&self, sql: &str) -> Result<u64, SysbenchError> {
        let text = self.sql(sql)?;
        text.trim().parse().map_err(|_| SysbenchError::Sql {
            endpoint: self.name.clone(),
            statement: sql.to_string(),
            detail: format!("expected one integer, got `{}`", tail(&text, 100)),
        })
    }

    /// The values of global status variables `names`, in their order, from one `SHOW GLOBAL
    /// STATUS` (so they are read together; its batch-mode answer is a name and a value per
    /// line, tab-separated).
    ///
    /// # Errors
    /// As [`Endpoint::sql`]; [`SysbenchError::Sql`] naming the first variable the server
    /// does not have or whose value is not an integer.
    pub fn status_values(&self, names: &[&str]) -> Result<Vec<u64>, SysbenchError> {
        let sql = "SHOW GLOBAL STATUS";
        let text = self.sql(sql)?;
        let value = |name: &str| {
            text.lines().find_map(|l| {
                let (n, v) = l.split_once('\t')?;
                n.eq_ignore_ascii_case(name)
                    .then(|| v.trim().parse().ok())?
            })
        };
        names
            .iter()
            .map(|name| {
                value(name).ok_or_else(|| SysbenchError::Sql {
                    endpoint: self.name.clone(),
                    statement: sql.to_string(),
                    detail: format!("no integer value of {name}"),
                })
            })
            .collect()
    }

    /// Runs `sysbench --db-driver=mysql` against this server, database `db`, with `args`
    /// (test name or script, options, and the command last) and reads its report.
    ///
    /// # Errors
    /// [`SysbenchError::Spawn`], [`SysbenchError::Failed`] (non-zero exit),
    /// [`SysbenchError::Parse`].
    pub fn sysbench(&self, db: &str, args: &[String]) -> Result<SysbenchResult, SysbenchError> {
        let out = self.sysbench_raw(db, args)?;
        parse_sysbench(&String::from_utf8_lossy(&out.stdout))
    }

    /// `sysbench ... prepare` (or any command whose report is not read).
    ///
    /// # Errors
    /// As [`Endpoint::sysbench`].
    pub fn sysbench_quiet(&self, db: &str, args: &[String]) -> Result<(), SysbenchError> {
        self.sysbench_raw(db, args).map(|_| ())
    }

    fn sysbench_raw(&self, db: &str, args: &[String]) -> Result<Output, SysbenchError> {
        let mut cmd = Command::new("sysbench");
        cmd.arg("--db-driver=mysql")
            .arg(format!("--mysql-host={}", self.host))
            .arg(format!("--mysql-port={}", self.port))
            .arg("--mysql-user=root")
            .arg(format!("--mysql-db={db}"))
            .args(args);
        // sysbench stops its threads at --time but waits for a statement that hangs.
        let secs = args
            .iter()
            .find_map(|a| a.strip_prefix("--time="))
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(0);
        let limit = SQL_LIMIT + Duration::from_secs(secs);
        let what = format!("sysbench {} on {}", args.join(" "), self.name);
        let out = output_within(&mut cmd, limit, &what)?;
        if !out.status.success() {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            return Err(SysbenchError::Failed {
                what: format!("sysbench {} on {}", args.join(" "), self.name),
                status: out.status.to_string(),
                stderr: tail(&text, 600),
            });
        }
        Ok(out)
    }
}

/// The longest a statement (a bulk load, a big `UPDATE`) may take before the benchmark
/// gives up on it, and the grace beyond `--time` for a sysbench run.
pub(crate) const SQL_LIMIT: Duration = Duration::from_secs(600);

/// Runs `cmd` to completion, killing it after `limit`: a hung server must stop the
/// benchmark with an error naming the step, not hang it.
fn output_within(cmd: &mut Command, limit: Duration, what: &str) -> Result<Output, SysbenchError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| SysbenchError::Spawn {
            program: program.clone(),
            detail: e.to_string(),
        })?;
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SysbenchError::Failed {
                    what: what.to_string(),
                    status: format!("killed after {} s", limit.as_secs()),
                    stderr: "no answer in time (the server hung?)".into(),
                });
            }
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Writes the shipped hot-row script into `dir` and returns its path.
///
/// # Errors
/// [`SysbenchError::Io`].
pub(crate) fn write_hot_row_script(dir: &Path) -> Result<std::path::PathBuf, SysbenchError> {
    let path = dir.join("hot_row.lua");
    std::fs::write(&path, HOT_ROW_LUA).map_err(|source| SysbenchError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// `integration/sysbench/hot_row.lua`, built into the binary so that `surgedb bench
/// sysbench` runs from anywhere.
pub const HOT_ROW_LUA: &str = include_str!("../../../sysbench/hot_row.lua");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_or_are_refused_by_name() {
        let e = Endpoint::parse("surgedb", "127.0.0.1:3306").expect("parses");
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 3306));
        let err = Endpoint::parse("mariadb", "localhost").expect_err("no port");
        assert!(err.to_string().contains("mariadb"), "{err}");
        assert!(Endpoint::parse("x", "h:99999").is_err());
    }

    #[test]
    fn the_shipped_script_sends_the_write_ups_statement() {
        assert!(HOT_ROW_LUA.contains(
            "UPDATE /*+ commit_on_success rollback_on_fail target_affect_row(1) */ t1 SET data=data+1 WHERE id=1"
        ));
    }
}
