//! A hot counter that really persists, built the way an application would: each group's
//! updates are appended to a log file as text lines and made durable with one `fdatasync`
//! before any member of the group is told it committed. At start the log is replayed, so the
//! counters survive a restart (run it twice with the same `--dir`).
//!
//! ```text
//! cargo run --release -p surge-hotspot --example durable_counter -- [--threads 16]
//!     [--updates 200] [--dir DIR]
//! ```
//! Without `--dir` the log goes to a new temporary directory, deleted at the end.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use surge_hotspot::{Applied, Config, Coordinator, GroupExecutor, Hints};

mod support {
    pub mod cli;
}

const USAGE: &str = "
A hot counter made durable per group: one append and one fdatasync for many updates.

usage: durable_counter [--threads 16] [--updates 200] [--dir DIR]

  --threads N  client threads, all adding 1 to the counter \"page_views\" (default 16)
  --updates N  updates per thread (default 200)
  --dir DIR    keep the log in DIR (reused on the next run); default: a temporary directory
  --help       this text
";

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Named counters whose every committed group is a set of lines `name value` in `log`.
struct DurableCounters {
    /// The log, appended under this lock (one group at a time per key; keys share the file).
    log: Mutex<File>,
    /// The committed values: what the log says.
    values: Mutex<HashMap<String, i64>>,
}

/// One group in progress: the value it builds and the lines it will append.
struct Pending {
    value: i64,
    lines: String,
}

impl DurableCounters {
    /// Opens (or creates) the log at `path` and replays it.
    fn open(path: &Path) -> Result<Self, Error> {
        let mut values = HashMap::new();
        if path.exists() {
            for (n, line) in BufReader::new(File::open(path)?).lines().enumerate() {
                let line = line?;
                // A torn last line (a crash mid-append, never acknowledged) is ignored.
                let Some((name, value)) = line.split_once(' ') else {
                    continue;
                };
                let value: i64 = value.parse().map_err(|_| {
                    format!("{} line {}: bad value {value:?}", path.display(), n + 1)
                })?;
                values.insert(name.to_string(), value);
            }
        }
        let log = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(DurableCounters {
            log: Mutex::new(log),
            values: Mutex::new(values),
        })
    }

    fn value(&self, name: &str) -> i64 {
        let values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        values.get(name).copied().unwrap_or(0)
    }
}

impl GroupExecutor for DurableCounters {
    type Key = String;
    type Op = i64; // amount to add
    type Output = i64; // the value after this member's addition
    type Change = i64;
    type Reject = String;
    type Error = std::io::Error;
    type Group = (String, Pending);

    fn begin(&self, name: &String) -> std::io::Result<Self::Group> {
        let pending = Pending {
            value: self.value(name),
            lines: String::new(),
        };
        Ok((name.clone(), pending))
    }

    fn apply(&self, g: &Self::Group, add: &i64) -> Result<Applied<i64, i64>, String> {
        let next = g.1.value.checked_add(*add).ok_or("counter overflow")?;
        Ok(Applied::one_row(next, next))
    }

    fn accept(&self, (name, pending): &mut Self::Group, next: i64) {
        pending.value = next;
        pending.lines.push_str(&format!("{name} {next}\n"));
    }

    fn commit(&self, name: &String, (_, pending): Self::Group) -> std::io::Result<()> {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.write_all(pending.lines.as_bytes())?;
        log.sync_data()?;
        drop(log);
        // Published only once durable: a failed write leaves the old value in place.
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        values.insert(name.clone(), pending.value);
        Ok(())
    }
}

fn parse_args() -> Result<(usize, u64, Option<PathBuf>), Error> {
    let (mut threads, mut updates, mut dir) = (16usize, 200u64, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if !["--threads", "--updates", "--dir"].contains(&flag.as_str()) {
            return Err(format!("{flag} is not a flag of this example").into());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |_| format!("{flag} wants a whole number, not {value:?}");
        match flag.as_str() {
            "--threads" => threads = value.parse().map_err(bad)?,
            "--updates" => updates = value.parse().map_err(bad)?,
            "--dir" => dir = Some(PathBuf::from(&value)),
            other => return Err(format!("{other} is not a flag of this example").into()),
        }
    }
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok((threads, updates, dir))
}

fn real_main() -> Result<(), Error> {
    let (threads, updates, dir) = parse_args()?;
    let tmp;
    let dir = match dir {
        Some(d) => {
            std::fs::create_dir_all(&d)?;
            d
        }
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let path = dir.join("counters.log");
    let counters = DurableCounters::open(&path)?;
    let name = "page_views".to_string();
    let before = counters.value(&name);
    let hot = Arc::new(Coordinator::new(counters, Config::default())?);
    let t0 = Instant::now();
    let clients: Vec<_> = (0..threads)
        .map(|_| {
            let (hot, name) = (Arc::clone(&hot), name.clone());
            std::thread::spawn(move || -> Result<(), String> {
                for _ in 0..updates {
                    hot.execute(&name, 1, Hints::hot_update())
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for c in clients {
        c.join().map_err(|_| "a client thread panicked")??;
    }
    let secs = t0.elapsed().as_secs_f64();
    let after = hot.executor().value(&name);
    let want = before + (threads as u64 * updates) as i64;
    if after != want {
        return Err(format!("{name} is {after}, want {want}").into());
    }
    // What a restart would see: replay the log from disk.
    let replayed = DurableCounters::open(&path)?.value(&name);
    if replayed != after {
        return Err(format!("the log replays to {replayed}, memory says {after}").into());
    }
    let s = hot.stats();
    println!("{name}: {before} -> {after} (log {})", path.display());
    println!(
        "{} durable updates in {secs:.2} s ({:.0}/s): {} groups, so {} fdatasyncs; mean group {:.1}",
        threads as u64 * updates,
        (threads as u64 * updates) as f64 / secs,
        s.leader_count,
        s.leader_count,
        s.mean_group_size()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    support::cli::run(USAGE, real_main)
}
