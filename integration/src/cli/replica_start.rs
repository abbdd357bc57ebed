//! `surgedb cluster start --replica`: start the cluster's private MariaDB replica and show
//! how it is doing.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::local::{ClusterManifest, ReplicaError, slave_status, start_replica as start};

/// The `SHOW SLAVE STATUS` columns printed.
const SHOWN: [&str; 10] = [
    "Master_Host",
    "Master_Port",
    "Slave_IO_Running",
    "Slave_SQL_Running",
    "Using_Gtid",
    "Gtid_IO_Pos",
    "Last_IO_Errno",
    "Last_IO_Error",
    "Last_SQL_Errno",
    "Last_SQL_Error",
];

/// Starts the replica of the cluster in `dir` (see [`crate::local::start_replica`]),
/// waits up to 10 s for its IO thread to connect, and prints its `SHOW SLAVE STATUS`.
///
/// # Errors
/// [`ReplicaError`] naming the step that failed.
pub fn start_replica(
    dir: &Path,
    manifest: &ClusterManifest,
    out: &mut impl Write,
) -> Result<(), ReplicaError> {
    let info = start(dir, manifest)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let s = slave_status(info.port)?;
        let io = s
            .iter()
            .find(|(k, _)| k == "Slave_IO_Running")
            .map(|(_, v)| v.as_str());
        if io == Some("Yes") || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = writeln!(
        out,
        "replica: mariadbd pid {}, 127.0.0.1:{}, following {} (mariadb -h127.0.0.1 -P{} -uroot)",
        info.pid, info.port, info.master, info.port
    );
    let _ = writeln!(out, "SHOW SLAVE STATUS:");
    for (k, v) in status.iter().filter(|(k, _)| SHOWN.contains(&k.as_str())) {
        let _ = writeln!(out, "  {k:>18}: {v}");
    }
    Ok(())
}
