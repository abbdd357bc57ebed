//! A real crash: a child process appends to the WAL and reports each acknowledged write
//! on stdout; the parent kills it with SIGKILL mid-stream, reopens the log and checks that
//! no acknowledged entry (or hard state) was lost and nothing unwritten appeared.
#![allow(clippy::unwrap_used)] // Tests: a failure is a test failure.

use std::io::Write;
use std::time::Duration;

use bytes::Bytes;
use surge_raft_lite::*;
use surge_testkit::CrashChild;

const ROLE: &str = "RAFT_LITE_CRASH_CHILD_DIR";

fn data(group: u64, i: u64) -> Bytes {
    Bytes::from(format!(
        "group {group} entry {i} {}",
        "p".repeat((i % 97) as usize)
    ))
}

fn child(dir: &str) {
    let mut wal = Wal::open(dir, WalOptions::default().with_max_segment_bytes(64 << 10)).unwrap();
    let mut out = std::io::stdout();
    // A kill may tear a batch between groups' records: resume after the shortest log.
    let start = (1..=3u64)
        .map(|g| wal.load(g).unwrap().map_or(0, |s| s.last_index()))
        .min()
        .unwrap();
    for i in start + 1.. {
        let batch: Vec<GroupWrite> = (1..=3u64)
            .map(|g| GroupWrite {
                group: g,
                snapshot: None,
                entries: vec![Entry {
                    term: 1,
                    index: i,
                    kind: EntryKind::Normal,
                    data: data(g, i),
                }],
                hard_state: Some(HardState {
                    term: 1,
                    vote: 1,
                    commit: i,
                }),
            })
            .collect();
        wal.write(&batch).unwrap();
        writeln!(out, "ack {i}").unwrap();
        if i == start + 50 {
            writeln!(out, "reached").unwrap();
        }
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_while_writing_loses_no_acknowledged_entry() {
    if let Ok(dir) = std::env::var(ROLE) {
        child(&dir);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut acked_total = 0;
    for round in 0..3u64 {
        let mut c = CrashChild::spawn(
            "sigkill_while_writing_loses_no_acknowledged_entry",
            [(ROLE, dir.path().display().to_string())],
        );
        let mut acked = 0;
        let mut track = |line: &str| {
            if let Some(n) = line.strip_prefix("ack ") {
                acked = n.parse().unwrap();
            }
        };
        c.wait_reached(&mut track);
        // Let it keep writing for a moment, then kill it mid-write.
        c.kill_after(Duration::from_millis(5 + 7 * round), &mut track);
        assert!(acked >= acked_total + 50, "child made progress");
        acked_total = acked;
        let wal = Wal::open(
            dir.path(),
            WalOptions::default().with_max_segment_bytes(64 << 10),
        )
        .unwrap();
        for g in 1..=3u64 {
            let st = wal.load(g).unwrap().unwrap();
            assert!(
                st.last_index() >= acked,
                "group {g}: acked {acked}, recovered {}",
                st.last_index()
            );
            assert!(st.hard_state.commit >= acked);
            for e in &st.entries {
                assert_eq!(e.data, data(g, e.index), "entry {} of group {g}", e.index);
            }
            // Nothing beyond what the child could have written.
            assert!(st.last_index() <= acked + 1);
        }
    }
}
