//! [`Machine`]: the figures that bound every result on this machine: cores and the
//! latency of an fsync on the filesystem holding the data.

use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::error::SysbenchError;

/// The machine a run measured on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// Cores this process may use.
    pub cores: usize,
    /// The directory whose filesystem the fsyncs were measured on.
    pub data_dir: String,
    /// Median latency of a 4 KiB write + `fsync`, microseconds.
    pub fsync_p50_us: u64,
    /// 99th percentile of the same, microseconds.
    pub fsync_p99_us: u64,
    /// The 1-minute load average when measured (other work on the machine).
    pub load_avg: f64,
}

impl Machine {
    /// Measures `samples` 4 KiB append + fsync rounds on a scratch file in `dir`.
    ///
    /// # Errors
    /// [`SysbenchError::Io`] when the file cannot be written.
    pub fn measure(dir: &Path, samples: usize) -> Result<Machine, SysbenchError> {
        let path = dir.join("fsync-probe");
        let io = |source| SysbenchError::Io {
            path: path.clone(),
            source,
        };
        let mut f = std::fs::File::create(&path).map_err(io)?;
        let block = [0x5au8; 4096];
        let mut lat = Vec::with_capacity(samples.max(1));
        for _ in 0..samples.max(1) {
            let t = Instant::now();
            f.write_all(&block).map_err(io)?;
            f.sync_data().map_err(io)?;
            lat.push(t.elapsed().as_micros() as u64);
        }
        drop(f);
        let _ = std::fs::remove_file(&path);
        lat.sort_unstable();
        let at = |p: f64| lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1];
        Ok(Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            data_dir: dir.display().to_string(),
            fsync_p50_us: at(0.5),
            fsync_p99_us: at(0.99),
            load_avg: load_avg(),
        })
    }

    /// One line for the report.
    pub fn describe(&self) -> String {
        format!(
            "machine: {} cores, fsync (4 KiB write + fdatasync) p50 {:.2} ms p99 {:.2} ms on {}, load average {:.2}",
            self.cores,
            self.fsync_p50_us as f64 / 1e3,
            self.fsync_p99_us as f64 / 1e3,
            self.data_dir,
            self.load_avg
        )
    }
}

/// `/proc/loadavg`'s first figure; 0 where there is none.
fn load_avg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_fsyncs_in_a_directory_and_refuses_a_missing_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let m = Machine::measure(dir.path(), 5).expect("measures");
        assert!(m.cores >= 1);
        assert!(m.fsync_p50_us <= m.fsync_p99_us);
        assert!(m.describe().contains("cores"));
        let gone = dir.path().join("missing");
        assert!(Machine::measure(&gone, 1).is_err());
    }
}
