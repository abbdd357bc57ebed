//! The benchmark's executor: one counter whose every group is appended to a file and
//! `fdatasync`ed. Shared by `examples/hot_row.rs` and `benches/hot_row.rs`.
//!
//! The `off` path runs the same executor one request at a time under a mutex (lock, update,
//! append + fdatasync, unlock), so both modes write the same 32-byte record per request to the
//! same kind of file; `on` writes a whole group's records in one `write` and one `fdatasync`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use parking_lot::Mutex;
use surge_hotspot::{Applied, GroupExecutor};

/// Bytes per record: key, delta, new value (i64 LE each), then a check word and a magic.
pub const RECORD_LEN: usize = 32;

struct State {
    file: File,
    value: i64,
}

/// A durable counter (a stock count that may not go below zero).
pub struct FileCounter {
    state: Mutex<State>,
    spare: Mutex<Vec<u8>>,
}

/// A group being built: the row image and the records to append.
pub struct CounterGroup {
    key: u64,
    value: i64,
    buf: Vec<u8>,
}

impl FileCounter {
    /// A counter at `initial`, logging to a new file at `path`.
    pub fn create(path: &Path, initial: i64) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)?;
        Ok(Self {
            state: Mutex::new(State {
                file,
                value: initial,
            }),
            spare: Mutex::new(Vec::new()),
        })
    }

    /// The committed value.
    #[allow(
        dead_code,
        reason = "the example checks it; the criterion bench does not"
    )]
    pub fn value(&self) -> i64 {
        self.state.lock().value
    }

    /// One request on the ordinary path; the caller holds the row lock.
    pub fn run_one(&self, key: u64, delta: i64) -> Result<i64, String> {
        let mut g = self.begin(&key).map_err(|e| e.to_string())?;
        let a = self.apply(&g, &delta).map_err(|e| e.to_string())?;
        self.accept(&mut g, a.change);
        self.commit(&key, g).map_err(|e| e.to_string())?;
        Ok(a.output)
    }
}

impl GroupExecutor for FileCounter {
    type Key = u64;
    type Op = i64;
    type Output = i64;
    type Change = (i64, i64);
    type Reject = &'static str;
    type Error = std::io::Error;
    type Group = CounterGroup;

    fn begin(&self, key: &u64) -> std::io::Result<CounterGroup> {
        let mut buf = std::mem::take(&mut *self.spare.lock());
        buf.clear();
        Ok(CounterGroup {
            key: *key,
            value: self.state.lock().value,
            buf,
        })
    }

    fn apply(
        &self,
        g: &CounterGroup,
        delta: &i64,
    ) -> Result<Applied<(i64, i64), i64>, &'static str> {
        let next = g.value.checked_add(*delta).ok_or("overflow")?;
        if next < 0 {
            return Err("stock would go below zero");
        }
        Ok(Applied::one_row((*delta, next), next))
    }

    fn accept(&self, g: &mut CounterGroup, (delta, next): (i64, i64)) {
        g.value = next;
        let start = g.buf.len();
        g.buf.extend_from_slice(&g.key.to_le_bytes());
        g.buf.extend_from_slice(&delta.to_le_bytes());
        g.buf.extend_from_slice(&next.to_le_bytes());
        let check = g.key ^ (delta as u64).rotate_left(21) ^ (next as u64).rotate_left(42);
        g.buf
            .extend_from_slice(&((check as u32) ^ ((check >> 32) as u32)).to_le_bytes());
        g.buf.extend_from_slice(&0x4854_5350u32.to_le_bytes());
        debug_assert_eq!(g.buf.len() - start, RECORD_LEN);
    }

    fn commit(&self, _key: &u64, g: CounterGroup) -> std::io::Result<()> {
        let mut st = self.state.lock();
        st.file.write_all(&g.buf)?;
        st.file.sync_data()?;
        st.value = g.value;
        drop(st);
        *self.spare.lock() = g.buf;
        Ok(())
    }
}
