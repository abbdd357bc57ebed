//! 004, hot row: the write-up's hinted `UPDATE` of one row by 1..512 sysbench threads,
//! SurgeDB with hotspot ON and OFF and MariaDB (no hotspot) in one rotation.

use std::path::Path;

use super::endpoint::Endpoint;
use super::error::SysbenchError;
use super::output::SysbenchResult;
use super::tally::{SysbenchPoint, Tally};
use crate::bench::Progress;

/// SurgeDB with AliSQL's hot-row grouping on (`SET GLOBAL hotspot=ON`).
pub const HOTSPOT_ON: &str = "hotspot ON";
/// SurgeDB with it off: each update an ordinary pessimistic transaction.
pub const HOTSPOT_OFF: &str = "hotspot OFF";

const SETUP: &str = "DROP DATABASE IF EXISTS hot; CREATE DATABASE hot; \
    CREATE TABLE hot.t1 (id INT PRIMARY KEY AUTO_INCREMENT, data INT); \
    INSERT INTO hot.t1 (data) VALUES (1)";
const VALUE: &str = "SELECT data FROM hot.t1 WHERE id=1";

/// Runs the hot-row rotation: for each round, each thread count, each variant one slice of
/// `seconds`; after every slice the row's increase must equal the updates sysbench counted.
///
/// # Errors
/// The first [`SysbenchError`]; [`SysbenchError::Inconsistent`] when the row disagrees.
pub(crate) fn run_hot_row(
    surgedb: &Endpoint,
    mariadb: Option<&Endpoint>,
    script: &Path,
    threads: &[usize],
    seconds: u64,
    rounds: usize,
    progress: &mut dyn Progress,
) -> Result<Vec<SysbenchPoint>, SysbenchError> {
    surgedb.sql(SETUP)?;
    if let Some(m) = mariadb {
        m.sql(SETUP)?;
    }
    let mut tally = Tally::default();
    for _ in 0..rounds {
        for &t in threads {
            for on in [true, false] {
                let variant = if on { HOTSPOT_ON } else { HOTSPOT_OFF };
                progress.message(&format!("004 hot row: {variant}, {t} threads"));
                surgedb.sql(if on {
                    "SET GLOBAL hotspot=ON; SET GLOBAL hotspot_lock_type=ON"
                } else {
                    "SET GLOBAL hotspot=OFF"
                })?;
                tally.add(variant, t, &slice(surgedb, script, t, seconds)?);
                progress.step();
            }
            if let Some(m) = mariadb {
                progress.message(&format!("004 hot row: MariaDB, {t} threads"));
                tally.add("mariadb", t, &slice(m, script, t, seconds)?);
                progress.step();
            }
        }
    }
    surgedb.sql("SET GLOBAL hotspot=OFF")?;
    Ok(tally.into_points())
}

/// One sysbench run of the hot-row script, checked against the row.
fn slice(
    ep: &Endpoint,
    script: &Path,
    threads: usize,
    seconds: u64,
) -> Result<SysbenchResult, SysbenchError> {
    let before = ep.query_u64(VALUE)?;
    let r = ep.sysbench(
        "hot",
        &[
            format!("--threads={threads}"),
            format!("--time={seconds}"),
            "--percentile=95".into(),
            script.display().to_string(),
            "run".into(),
        ],
    )?;
    let after = ep.query_u64(VALUE)?;
    if after != before + r.transactions {
        return Err(SysbenchError::Inconsistent {
            endpoint: ep.name.clone(),
            what: format!("hot.t1 id=1 after {threads} threads"),
            expected: format!(
                "{before} + {} acknowledged = {}",
                r.transactions,
                before + r.transactions
            ),
            found: after.to_string(),
        });
    }
    Ok(r)
}
