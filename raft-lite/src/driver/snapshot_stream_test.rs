use std::sync::Mutex;

use super::*;
use crate::ConfState;

/// Records what is sent; answers nothing by itself.
#[derive(Default)]
struct Recorder {
    sent: Mutex<Vec<Message>>,
}

impl Transport for Recorder {
    fn send(&self, _group: u64, msg: Message) {
        self.sent.lock().unwrap().push(msg);
    }
}

fn meta(index: u64) -> SnapshotMeta {
    SnapshotMeta {
        index,
        term: 2,
        conf: ConfState {
            voters: [1, 2, 3].into(),
            ..ConfState::default()
        },
    }
}

fn target() -> StreamTarget {
    StreamTarget {
        id: 99,
        group: 7,
        from: 1,
        to: 2,
        term: 3,
        meta: meta(40),
    }
}

fn chunks(sent: &[Message]) -> Vec<(u32, bool, usize)> {
    sent.iter()
        .filter_map(|m| match &m.kind {
            MessageKind::SnapshotChunk {
                seq, last, data, ..
            } => Some((*seq, *last, data.len())),
            _ => None,
        })
        .collect()
}

/// A state of `n` bytes, handed to the sink in pieces of 100 KiB.
fn producer(n: usize) -> SnapshotStream {
    Box::new(move |sink| {
        let piece = vec![0xabu8; 100 << 10];
        let mut left = n;
        while left > 0 {
            let take = left.min(piece.len());
            sink(&piece[..take]).map_err(|e| e.to_string())?;
            left -= take;
        }
        Ok(())
    })
}

#[test]
fn a_stream_is_cut_into_chunks_and_never_runs_ahead_of_the_window() {
    let transport = Arc::new(Recorder::default());
    let (acks_tx, acks) = crossbeam_channel::unbounded();
    let t = target();
    let sent_by = transport.clone();
    // The follower's part: acknowledge each chunk as it shows up, checking the window.
    let follower = std::thread::spawn(move || {
        let mut acked = 0usize;
        let mut worst = 0usize;
        loop {
            let seen = chunks(&sent_by.sent.lock().unwrap());
            let distinct = seen.iter().map(|c| c.0).max().map_or(0, |m| m as usize + 1);
            worst = worst.max(distinct - acked);
            if acked < distinct {
                acks_tx.send((99, acked as u32, true)).unwrap();
                acked += 1;
                if seen.iter().any(|c| c.1 && c.0 as usize + 1 == acked) {
                    return worst;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let total = 5 * SNAPSHOT_CHUNK_BYTES + 12345;
    let sent = stream(&t, producer(total), transport.clone(), acks).expect("streamed");
    assert_eq!(sent, total as u64);
    let worst = follower.join().unwrap();
    assert!(worst <= WINDOW, "{worst} chunks unacknowledged at once");
    let seen = chunks(&transport.sent.lock().unwrap());
    let sizes: Vec<usize> = seen.iter().map(|c| c.2).collect();
    assert_eq!(
        sizes,
        [vec![SNAPSHOT_CHUNK_BYTES; 5], vec![12345]].concat(),
        "every chunk full but the last"
    );
    assert!(seen.last().unwrap().1 && seen.iter().filter(|c| c.1).count() == 1);
}

#[test]
fn unanswered_chunks_are_sent_again_and_a_refusal_ends_the_stream() {
    let transport = Arc::new(Recorder::default());
    let (acks_tx, acks) = crossbeam_channel::unbounded();
    let t = target();
    let sent_by = transport.clone();
    let follower = std::thread::spawn(move || {
        // Let the first chunk go unanswered past one resend period, then refuse.
        while chunks(&sent_by.sent.lock().unwrap()).len() < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        acks_tx.send((5, 0, true)).unwrap();
        acks_tx.send((99, 0, false)).unwrap();
    });
    let r = stream(&t, producer(10), transport.clone(), acks);
    follower.join().unwrap();
    assert!(
        matches!(r, Err(StreamError::Transfer(ref m)) if m.contains("refused")),
        "{r:?}"
    );
    let seen = chunks(&transport.sent.lock().unwrap());
    assert!(
        seen.iter().all(|c| c.0 == 0),
        "only chunk 0, sent again: {seen:?}"
    );
}

#[test]
fn a_state_machine_error_is_a_produce_error_and_stops_the_stream() {
    let transport = Arc::new(Recorder::default());
    let (_acks_tx, acks) = crossbeam_channel::unbounded();
    let failing: SnapshotStream = Box::new(|_sink| Err("disk read failed".into()));
    let r = stream(&target(), failing, transport.clone(), acks);
    assert!(matches!(r, Err(StreamError::Produce(ref m)) if m == "disk read failed"));
    assert!(chunks(&transport.sent.lock().unwrap()).is_empty());
    let (_acks_tx, acks) = crossbeam_channel::unbounded();
    let panicking: SnapshotStream = Box::new(|_sink| panic!("bug"));
    let r = stream(&target(), panicking, transport, acks);
    assert!(matches!(r, Err(StreamError::Produce(_))));
}

/// Keeps what it restored.
#[derive(Default)]
struct Keeper {
    restored: Vec<(u64, Vec<u8>, bool)>,
}

impl StateMachine for Keeper {
    fn apply(&mut self, _index: u64, _data: &[u8]) -> Bytes {
        Bytes::new()
    }
    fn snapshot(&mut self) -> Bytes {
        Bytes::new()
    }
    fn restore(&mut self, index: u64, data: &[u8]) {
        self.restored.push((index, data.to_vec(), false));
    }
    fn restore_from(
        &mut self,
        index: u64,
        reader: &mut dyn Read,
    ) -> std::result::Result<(), String> {
        let mut data = Vec::new();
        reader.read_to_end(&mut data).map_err(|e| e.to_string())?;
        self.restored.push((index, data, true));
        Ok(())
    }
}

fn receive(spool: &Spool, group: u64, index: u64, pieces: &[&[u8]]) -> Snapshot {
    let mut i = spool.begin(group, 1, meta(index), 1, 3).expect("begin");
    for p in pieces {
        i.write(p).expect("write");
    }
    i.finish().expect("finish")
}

#[test]
fn a_spooled_snapshot_is_a_small_reference_restored_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(Some(dir.path().join("spool"))).unwrap();
    let snap = receive(&spool, 5, 40, &[b"hello ", b"world"]);
    assert!(
        snap.data.len() < 100,
        "only a reference: {} bytes",
        snap.data.len()
    );
    let mut sm = Keeper::default();
    restore(&mut sm, &snap, spool.dir()).expect("restored");
    assert_eq!(sm.restored, vec![(40, b"hello world".to_vec(), true)]);
    // Plain data still goes to `restore`.
    let plain = Snapshot {
        meta: meta(41),
        data: Bytes::from_static(b"plain"),
    };
    restore(&mut sm, &plain, spool.dir()).expect("restored");
    assert_eq!(sm.restored[1], (41, b"plain".to_vec(), false));
    // Without a spool directory the stream is kept inline, and still read back whole.
    let memory = Spool::open(None).unwrap();
    let inline = receive(&memory, 5, 42, &[b"in ", b"memory"]);
    restore(&mut sm, &inline, None).expect("restored");
    assert_eq!(sm.restored[2], (42, b"in memory".to_vec(), true));
}

#[test]
fn a_damaged_or_missing_spool_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(Some(dir.path().to_path_buf())).unwrap();
    let snap = receive(&spool, 5, 40, &[b"0123456789"]);
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "snap"))
        .unwrap()
        .path();
    std::fs::write(&file, b"0123456780").unwrap();
    let err = restore(&mut Keeper::default(), &snap, spool.dir()).unwrap_err();
    assert!(
        err.contains(&file.display().to_string()) && err.contains("checksum"),
        "{err}"
    );
    std::fs::remove_file(&file).unwrap();
    let err = restore(&mut Keeper::default(), &snap, spool.dir()).unwrap_err();
    assert!(err.contains(&file.display().to_string()), "{err}");
    // A reference with a path in it is refused, not followed.
    let mut evil = FILE_REF_MAGIC.to_vec();
    evil.extend_from_slice(&[0; 12]);
    evil.extend_from_slice(b"../etc/passwd");
    let evil = Snapshot {
        meta: meta(1),
        data: Bytes::from(evil),
    };
    assert!(restore(&mut Keeper::default(), &evil, spool.dir()).is_err());
    let short = Snapshot {
        meta: meta(1),
        data: Bytes::from(FILE_REF_MAGIC.to_vec()),
    };
    assert!(restore(&mut Keeper::default(), &short, spool.dir()).is_err());
}

#[test]
fn gc_keeps_only_the_referenced_file_and_open_drops_partial_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut spool = Spool::open(Some(dir.path().to_path_buf())).unwrap();
    let old = receive(&spool, 5, 40, &[b"old"]);
    let new = receive(&spool, 5, 50, &[b"new"]);
    let other = receive(&spool, 6, 40, &[b"other group"]);
    let partial = spool.begin(5, 1, meta(60), 1, 3).unwrap();
    drop(partial);
    let names = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names().len(), 4);
    spool.received(5);
    spool.gc(5, Some(&new.data));
    let left = names();
    assert_eq!(left.len(), 3, "{left:?}");
    let mut sm = Keeper::default();
    assert!(
        restore(&mut sm, &old, spool.dir()).is_err(),
        "the old file is gone"
    );
    restore(&mut sm, &new, spool.dir()).expect("the kept one");
    restore(&mut sm, &other, spool.dir()).expect("another group's");
    let mut reopened = Spool::open(Some(dir.path().to_path_buf())).unwrap();
    assert!(names().iter().all(|n| !n.ends_with(".part")));
    reopened.gc(5, None);
    reopened.gc(6, None);
    assert!(names().is_empty(), "{:?}", names());
}
