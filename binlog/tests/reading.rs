//! Reading a log back: `Binlog::reader`, whole transactions, and readers opened at an offset
//! where no event starts.

use std::sync::Arc;

use surge_binlog::{Binlog, Error, EventBody, Gtid, LogReader, Position, RowsKind};

use crate::common::{fresh, test_config};

#[test]
fn binlog_reader_reads_its_own_files_up_to_the_current_end() {
    let (dir, log) = fresh();
    let mut c = log.new_cache();
    c.put(b"a", b"1").unwrap();
    log.commit(c, 1).unwrap();
    log.rotate().unwrap();
    let reader = log.reader().unwrap();
    // Committed after the reader was made: not seen by it.
    log.commit(log.new_cache(), 2).unwrap();
    let xids: Vec<u64> = reader
        .filter_map(|r| match r.unwrap().1.body {
            EventBody::Xid(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(xids, vec![1]);
    let paths = log.file_paths();
    assert_eq!(paths.len(), log.files().len());
    for (p, name) in paths.iter().zip(log.files()) {
        assert_eq!(p, &dir.path().join(&name));
        assert!(p.is_file(), "{}", p.display());
        assert!(!name.contains('/'), "files() gives bare names: {name}");
    }
}

#[test]
fn transactions_yield_gtid_xid_and_events_of_whole_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = test_config(dir.path()).with_server_id(7);
    let log = Binlog::open(cfg).unwrap();
    let mut infos = Vec::new();
    for i in 0..3u64 {
        let mut c = log.new_cache();
        c.put(format!("k{i}").as_bytes(), b"v").unwrap();
        if i == 1 {
            c.update(b"k0", b"w").unwrap();
            c.delete(b"k1").unwrap();
        }
        infos.push(log.commit(c, 100 + i).unwrap());
        if i == 0 {
            log.rotate().unwrap();
        }
    }
    // A large one, committed by rename into a file of its own.
    let mut big = log.new_cache();
    let value = vec![9u8; 4000];
    let keys: Vec<Vec<u8>> = (0..400u32).map(|i| i.to_be_bytes().to_vec()).collect();
    big.put_many(keys.iter().map(|k| (&k[..], &value[..])))
        .unwrap();
    infos.push(log.commit(big, 200).unwrap());
    assert_eq!(log.stats().renames, 1);

    let txns: Vec<_> = log
        .reader()
        .unwrap()
        .transactions()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(txns.len(), 4);
    for (t, info) in txns.iter().zip(&infos) {
        assert_eq!(t.gtid, info.gtid);
        assert_eq!(t.gtid.server_id, 7);
        assert_eq!(t.xid, Some(info.xid));
        assert_eq!(
            t.end,
            Position {
                file: info.file.clone(),
                offset: info.end_position
            }
        );
        assert!(matches!(t.events[0].1.body, EventBody::TableMap(_)));
        assert!(t.events.iter().all(|(_, e)| !matches!(
            e.body,
            EventBody::Gtid(_) | EventBody::Xid(_) | EventBody::FormatDescription(_)
        )));
    }
    let kinds: Vec<RowsKind> = txns[1]
        .events
        .iter()
        .filter_map(|(_, e)| match &e.body {
            EventBody::Rows(r) => Some(r.kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [RowsKind::Write, RowsKind::Update, RowsKind::Delete]);
    assert_eq!(
        txns[3]
            .events
            .iter()
            .filter_map(|(_, e)| match &e.body {
                EventBody::Rows(r) => Some(r.kv_rows().unwrap().len()),
                _ => None,
            })
            .sum::<usize>(),
        400
    );
    // Started at a transaction's end, the iterator gives the ones after it.
    let from = txns[1].end.clone();
    let rest: Vec<Gtid> = log
        .reader_from(Some(from))
        .unwrap()
        .transactions()
        .map(|t| t.unwrap().gtid)
        .collect();
    assert_eq!(rest, vec![infos[2].gtid, infos[3].gtid]);
}

#[test]
fn a_transaction_cut_short_by_a_crash_is_not_yielded() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let done = log.commit(log.new_cache(), 1).unwrap();
    log.commit(log.new_cache(), 2).unwrap();
    let file = dir.path().join(&done.file);
    log.__crash_for_tests();
    // Cut the second transaction's Xid event (the last 31 bytes of the file) off.
    let len = std::fs::metadata(&file).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(len - 31).unwrap();
    drop(f);
    let log = Binlog::open(test_config(dir.path())).unwrap();
    assert_eq!(log.recovery_report().incomplete.len(), 1);
    let xids: Vec<Option<u64>> = log
        .reader()
        .unwrap()
        .transactions()
        .map(|t| t.unwrap().xid)
        .collect();
    assert_eq!(xids, vec![Some(1)]);
}

/// Regression: a reader opened inside an event read its bytes as a header and failed with
/// "truncated event: need 1701278325 bytes" on a good file.
#[test]
fn an_offset_inside_an_event_is_not_an_event_boundary() {
    let (dir, log) = fresh();
    let mut c = log.new_cache();
    c.put(b"user:1", b"some value bytes").unwrap();
    let info = log.commit(c, 1).unwrap();
    let events: Vec<(Position, surge_binlog::Event)> =
        log.reader().unwrap().map(|r| r.unwrap()).collect();
    let starts: Vec<u64> = events.iter().map(|(p, _)| p.offset).collect();
    for offset in 0..info.end_position {
        let at = Position {
            file: info.file.clone(),
            offset,
        };
        let r = LogReader::open(dir.path(), "surge-bin", Some(at));
        if starts.contains(&offset) {
            assert!(r.is_ok(), "offset {offset}: {:?}", r.err());
            continue;
        }
        match r {
            Err(e @ Error::NotEventBoundary { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("offset {offset} in "))
                        && msg.contains(&info.file)
                        && msg.contains("is not an event boundary"),
                    "{msg}"
                );
            }
            other => panic!("offset {offset}: {other:?}"),
        }
    }
    // The end of the file is a boundary: nothing more to read.
    let at = Position {
        file: info.file.clone(),
        offset: info.end_position,
    };
    assert_eq!(
        LogReader::open(dir.path(), "surge-bin", Some(at))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn a_shared_log_reads_while_others_commit() {
    let (_dir, log) = fresh();
    let log = Arc::new(log);
    let writer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for i in 0..200u64 {
                let mut c = log.new_cache();
                c.put(&i.to_be_bytes(), &[1u8; 100]).unwrap();
                log.commit(c, i).unwrap();
            }
        })
    };
    // Every reader made meanwhile sees whole transactions only, in GTID order.
    for _ in 0..20 {
        let seqs: Vec<u64> = log
            .reader()
            .unwrap()
            .transactions()
            .map(|t| t.unwrap().gtid.seq_no)
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] + 1 == w[1]), "{seqs:?}");
    }
    writer.join().unwrap();
}
