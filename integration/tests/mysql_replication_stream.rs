//! The replication stream byte by byte, read with a raw protocol client (no MariaDB
//! needed, except for the last test, which runs the stock `mariadb-binlog`): the connect statements' answers, COM_REGISTER_SLAVE, and COM_BINLOG_DUMP's
//! stream — a fake Rotate and the Format_description (in-use flag cleared, `log_pos` 0)
//! before each file, then the file's own bytes, groups up to the start GTID skipped, an
//! event over 16 MiB split into chunks, EOF at the end with BINLOG_DUMP_NON_BLOCK; while
//! idle, heartbeats naming the file at its end offset, then new groups as they commit; a
//! replica that leaves or a server that shuts down ends the dump at once. Refusals: a GTID
//! the binlog lacks, a bad `@slave_connect_state` and a server without a source all get
//! ERR 1236.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;
#[path = "common/mysql_raw.rs"]
mod mysql_raw;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql_raw::{Raw, client_caps, err};
use surge_binlog::{
    Binlog, BinlogColumn, BinlogConfig, BinlogTable, BinlogType, BinlogValue, ChecksumAlg, Event,
    EventBody, FLAG_ARTIFICIAL, FLAG_BINLOG_IN_USE, Rotate, SqlRowChange,
};
use surgedb::mysql::{
    BINLOG_DUMP_NON_BLOCK, BinlogDump, COM_BINLOG_DUMP, COM_REGISTER_SLAVE, DirSource, MysqlConfig,
    MysqlServer, RegisterSlave,
};

fn serve(cfg: &BinlogConfig) -> MysqlServer {
    let source = Arc::new(DirSource::for_binlog(cfg));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = MysqlConfig::default().with_replication_source(source);
    MysqlServer::start(listener, config, mysql_backend::Backend::new().factory()).unwrap()
}

fn kv_txn(log: &Binlog, key: &[u8], value: &[u8]) -> surge_binlog::CommitInfo {
    let mut c = log.new_cache();
    c.put(key, value).unwrap();
    log.commit(c, 1).unwrap()
}

/// The text of a one-column, one-row answer.
fn single_value(answer: &[Vec<u8>]) -> Option<String> {
    // count, definition, EOF, row, EOF
    let row = &answer[3];
    if row[0] == 0xFB {
        return None;
    }
    Some(String::from_utf8_lossy(&row[1..]).into_owned())
}

/// Says which checksum this client handles, as a replica does, then asks for the stream.
fn dump(raw: &mut Raw, flags: u16) {
    raw.query("SET @master_binlog_checksum= @@global.binlog_checksum");
    let mut p = vec![COM_BINLOG_DUMP];
    p.extend_from_slice(
        &BinlogDump {
            position: 4,
            flags,
            server_id: 99,
            file: Vec::new(),
        }
        .encode(),
    );
    raw.command(&p);
}

/// The events a NON_BLOCK dump sends, up to its EOF.
fn read_until_eof(raw: &mut Raw) -> Vec<Vec<u8>> {
    let mut events = Vec::new();
    loop {
        let p = raw.read().unwrap();
        match p[0] {
            0x00 => events.push(p[1..].to_vec()),
            0xFE if p.len() < 8 => return events,
            _ => panic!("unexpected packet {:?}", &p[..p.len().min(64)]),
        }
    }
}

/// Checks `events[0..2]` are the fake Rotate naming `file` at `pos` (with a CRC-32 when
/// `crc`) and its Format_description as sent; returns the rest.
fn file_start<'a>(
    events: &'a [Vec<u8>],
    file: &str,
    pos: u64,
    on_disk: &[u8],
    crc: bool,
) -> &'a [Vec<u8>] {
    let alg = if crc {
        ChecksumAlg::Crc32
    } else {
        ChecksumAlg::Off
    };
    let rotate = Event::decode(&events[0], alg).unwrap();
    assert_eq!(rotate.header.flags, FLAG_ARTIFICIAL);
    assert_eq!((rotate.header.timestamp, rotate.header.log_pos), (0, 0));
    assert_eq!(
        rotate.body,
        EventBody::Rotate(Rotate {
            position: pos,
            next_file: file.to_string()
        })
    );
    let fd = Event::decode(&events[1], ChecksumAlg::Crc32).unwrap();
    assert!(matches!(fd.body, EventBody::FormatDescription(_)));
    assert_eq!(fd.header.flags & FLAG_BINLOG_IN_USE, 0);
    assert_eq!(fd.header.log_pos, 0);
    let size = fd.header.event_size as usize;
    // Apart from the flags, log_pos, created and the CRC, the file's own event.
    assert_eq!(events[1][19..19 + 52], on_disk[4 + 19..4 + 19 + 52]);
    assert_eq!(events[1][75..size - 4], on_disk[4 + 75..4 + size - 4]);
    &events[2..]
}

/// The events of `bytes` (a whole file) after its Format_description, with the groups
/// whose sequence number is at most `skip_to` left out.
fn file_events(bytes: &[u8], skip_to: u64) -> Vec<Vec<u8>> {
    let events = surge_binlog::decode_file_bytes(bytes).unwrap();
    let mut out = Vec::new();
    let mut skipping = false;
    for (i, (off, ev)) in events.iter().enumerate().skip(1) {
        let end = events.get(i + 1).map_or(bytes.len() as u64, |e| e.0);
        if let EventBody::Gtid(g) = &ev.body {
            skipping = g.seq_no <= skip_to;
        }
        let in_group = !matches!(
            ev.body,
            EventBody::GtidList(_) | EventBody::BinlogCheckpoint(_) | EventBody::Rotate(_)
        );
        if !(skipping && in_group) {
            out.push(bytes[*off as usize..end as usize].to_vec());
        }
    }
    out
}

#[test]
fn the_stream_is_the_files_after_a_fake_rotate_and_fd() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path()).with_large_commit_threshold(64 << 20);
    let log = Binlog::open(cfg.clone()).unwrap();
    for i in 0..5u8 {
        kv_txn(&log, &[b'k', i], b"v");
    }
    log.rotate().unwrap();
    // A row event over 16 MiB: its packet goes out in two chunks and an end.
    let table = BinlogTable::new(
        "db",
        "blobs",
        9,
        vec![
            BinlogColumn::new("id", BinlogType::Int),
            BinlogColumn::new("b", BinlogType::Blob { length_bytes: 4 }),
        ],
    )
    .unwrap();
    let mut c = log.new_cache();
    let blob: Vec<u8> = (0..17_000_000u32).map(|i| (i % 253) as u8).collect();
    c.table_rows(
        &table,
        &[SqlRowChange::Insert {
            after: vec![BinlogValue::Int(1), BinlogValue::Bytes(blob)],
        }],
    )
    .unwrap();
    log.commit(c, 2).unwrap();
    kv_txn(&log, b"last", b"v");
    let server = serve(&cfg);

    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    assert_eq!(
        raw.query("SET @master_binlog_checksum= @@global.binlog_checksum")[0][0],
        0
    );
    let checksum = raw.query("SELECT @master_binlog_checksum");
    assert_eq!(single_value(&checksum).as_deref(), Some("CRC32"));
    let id = raw.query("SHOW VARIABLES LIKE 'SERVER_ID'");
    assert_eq!(&id[4][..], b"\x09server_id\x011");
    assert_eq!(
        single_value(&raw.query("SELECT @@GLOBAL.gtid_binlog_pos")).as_deref(),
        Some("0-1-7")
    );
    assert_eq!(raw.query("SET @slave_connect_state='0-1-3'")[0][0], 0);
    assert_eq!(raw.query("SET NAMES latin1")[0][0], 0);
    let mut reg = vec![COM_REGISTER_SLAVE];
    reg.extend_from_slice(
        &RegisterSlave {
            server_id: 99,
            user: b"root".to_vec(),
            port: 3306,
            ..RegisterSlave::default()
        }
        .encode(),
    );
    raw.command(&reg);
    assert_eq!(raw.read().unwrap()[0], 0x00);

    dump(&mut raw, BINLOG_DUMP_NON_BLOCK);
    let events = read_until_eof(&mut raw);
    let f1 = std::fs::read(dir.path().join("surge-bin.000001")).unwrap();
    let f2 = std::fs::read(dir.path().join("surge-bin.000002")).unwrap();
    let rest = file_start(&events, "surge-bin.000001", 4, &f1, true);
    let want1 = file_events(&f1, 3);
    assert_eq!(rest[..want1.len()], want1[..], "file 1 from GTID 0-1-3 on");
    let rest = file_start(&rest[want1.len()..], "surge-bin.000002", 4, &f2, true);
    let want2 = file_events(&f2, 0);
    assert!(want2.iter().any(|e| e.len() > 0xFF_FFFF));
    assert_eq!(rest.len(), want2.len());
    assert!(rest == want2, "file 2 byte for byte");
    // The dump ends the connection.
    assert!(raw.closed());
    server.shutdown();
    log.close().unwrap();
}

#[test]
fn idle_heartbeats_then_new_groups_and_a_prompt_end() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path());
    let log = Binlog::open(cfg.clone()).unwrap();
    let first = kv_txn(&log, b"a", b"1");
    let server = serve(&cfg);
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("SET @master_heartbeat_period= 200000000");
    raw.query("SET @slave_connect_state=''");
    dump(&mut raw, 0);
    let mut seen = Vec::new();
    let heartbeat = loop {
        let p = raw.read().unwrap();
        assert_eq!(p[0], 0);
        if p[1 + 4] == 27 {
            break p[1..].to_vec();
        }
        seen.push(p[1..].to_vec());
    };
    // Fake Rotate, FD, Gtid_list, checkpoint, GTID, rows..., Xid: the whole first file.
    let xid = Event::decode(seen.last().unwrap(), ChecksumAlg::Crc32).unwrap();
    assert!(matches!(xid.body, EventBody::Xid(_)));
    assert_eq!(
        &heartbeat[13..17],
        &(first.end_position as u32).to_le_bytes()
    );
    assert_eq!(&heartbeat[19..heartbeat.len() - 4], first.file.as_bytes());
    let crc = crc32fast_hash(&heartbeat[..heartbeat.len() - 4]);
    assert_eq!(&heartbeat[heartbeat.len() - 4..], &crc.to_le_bytes());
    // A new group arrives while the dump waits.
    let second = kv_txn(&log, b"b", b"2");
    let mut got = Vec::new();
    while got
        .last()
        .is_none_or(|e: &Event| !matches!(e.body, EventBody::Xid(_)))
    {
        let p = raw.read().unwrap();
        if p[1 + 4] != 27 {
            got.push(Event::decode(&p[1..], ChecksumAlg::Crc32).unwrap());
        }
    }
    assert!(matches!(got[0].body, EventBody::Gtid(ref g) if g.seq_no == 2));
    assert_eq!(
        got.last().unwrap().header.log_pos as u64,
        second.end_position
    );
    // The replica leaves: the dump notices within its peer check, not at the next write.
    drop(raw);
    let t = Instant::now();
    while server.connections() > 0 {
        assert!(t.elapsed() < Duration::from_secs(3), "dump still running");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A server with a dump waiting shuts down promptly.
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("SET @slave_connect_state='0-1-2'");
    dump(&mut raw, 0);
    raw.read().unwrap();
    let t = Instant::now();
    server.shutdown();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "shutdown took {:?}",
        t.elapsed()
    );
    log.close().unwrap();
}

fn crc32fast_hash(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(b);
    h.finalize()
}

#[test]
fn refusals_are_error_1236() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path());
    let log = Binlog::open(cfg.clone()).unwrap();
    kv_txn(&log, b"a", b"1");
    let server = serve(&cfg);
    let cases = [
        (
            "SET @slave_connect_state='0-1-9'",
            "GTID 0-1-9, which is not in the master's binlog",
        ),
        (
            "SET @slave_connect_state='0-2-1'",
            "GTID 0-2-1, which is not in the master's binlog",
        ),
        (
            "SET @slave_connect_state='0-1'",
            "bad GTID position \"0-1\" at byte 3",
        ),
    ];
    for (set, want) in cases {
        let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
        assert_eq!(raw.query(set)[0][0], 0);
        dump(&mut raw, 0);
        let (code, msg) = err(&raw.read().unwrap());
        assert_eq!(code, 1236, "{set}");
        assert!(msg.contains(want), "{set}: {msg}");
        assert!(raw.closed());
    }
    server.shutdown();

    // No source: the dump is refused, the statements go to the SQL session.
    let (server, backend) = mysql_backend::start(MysqlConfig::default());
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    let answer = raw.query("SHOW MASTER STATUS");
    assert_eq!(answer[0][0], 0xFF, "the test session does not know it");
    dump(&mut raw, 0);
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!((code, msg.as_str()), (1236, "Binary log is not open"));
    drop(backend);
    server.shutdown();
    log.close().unwrap();
}

/// A source that shows the files of a finished binlog one at a time: the first alone
/// (complete, ending with its Rotate), then both.
#[derive(Debug)]
struct Staged {
    files: Vec<(String, std::path::PathBuf)>,
    visible: std::sync::Mutex<usize>,
}

impl surgedb::mysql::ReplicationSource for Staged {
    fn files(&self) -> Vec<(String, std::path::PathBuf)> {
        self.files[..*self.visible.lock().unwrap()].to_vec()
    }

    fn end(&self) -> (String, u64) {
        let (name, path) = &self.files[*self.visible.lock().unwrap() - 1];
        (name.clone(), std::fs::metadata(path).unwrap().len())
    }

    fn wait_past(&self, file: &str, offset: u64, timeout: Duration) -> (String, u64) {
        let deadline = Instant::now() + timeout;
        loop {
            let end = self.end();
            if end.0 != file || end.1 > offset || Instant::now() >= deadline {
                return end;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn server_id(&self) -> u32 {
        1
    }
}

#[test]
fn no_heartbeat_between_a_rotate_and_the_next_format_description() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(BinlogConfig::new(dir.path())).unwrap();
    kv_txn(&log, b"a", b"1");
    log.rotate().unwrap();
    kv_txn(&log, b"b", b"2");
    let files: Vec<_> = log.files().into_iter().zip(log.file_paths()).collect();
    log.close().unwrap();
    let source = Arc::new(Staged {
        files,
        visible: std::sync::Mutex::new(1),
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = MysqlConfig::default().with_replication_source(source.clone());
    let server =
        MysqlServer::start(listener, config, mysql_backend::Backend::new().factory()).unwrap();
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("SET @master_heartbeat_period= 50000000");
    raw.query("SET @slave_connect_state=''");
    dump(&mut raw, 0);
    // The first file, up to and including its real Rotate.
    loop {
        let p = raw.read().unwrap();
        assert_ne!(p[1 + 4], 27, "a heartbeat before the Rotate was reached");
        if p[1 + 4] == 4 && p[1 + 17] & 0x20 == 0 {
            break;
        }
    }
    // The next file is not there yet: silence, though the period passes many times.
    raw.stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut b = [0u8; 1];
    let quiet = std::io::Read::read(&mut raw.stream, &mut b);
    assert!(
        quiet.is_err(),
        "something was sent between Rotate and FD: {b:?}"
    );
    raw.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    *source.visible.lock().unwrap() = 2;
    let rotate = raw.read().unwrap();
    let ev = Event::decode(&rotate[1..], ChecksumAlg::Crc32).unwrap();
    assert_eq!(ev.header.flags, FLAG_ARTIFICIAL);
    let fd = raw.read().unwrap();
    assert_eq!(
        fd[1 + 4],
        15,
        "the Format_description follows the fake Rotate"
    );
    // The second file's events, then heartbeats again once idle.
    let mut heartbeat = false;
    for _ in 0..100 {
        let p = raw.read().unwrap();
        if p[1 + 4] == 27 {
            heartbeat = true;
            break;
        }
    }
    assert!(heartbeat);
    drop(raw);
    server.shutdown();
}

#[test]
fn a_replica_without_gtid_starts_at_its_file_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path());
    let log = Binlog::open(cfg.clone()).unwrap();
    let first = kv_txn(&log, b"a", b"1");
    kv_txn(&log, b"b", b"2");
    let server = serve(&cfg);
    // Checksum handling as `mariadb-binlog` says it (`NONE`: events still carry the
    // files' CRC-32, only the first fake Rotate goes without), or not said at all.
    let start_with = |file: &str, position: u32, checksum: Option<&str>| {
        let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
        if let Some(c) = checksum {
            raw.query(&format!("SET @master_binlog_checksum='{c}'"));
        }
        let mut p = vec![COM_BINLOG_DUMP];
        p.extend_from_slice(
            &BinlogDump {
                position,
                flags: BINLOG_DUMP_NON_BLOCK,
                server_id: 99,
                file: file.as_bytes().to_vec(),
            }
            .encode(),
        );
        raw.command(&p);
        raw
    };
    let start = |file: &str, position: u32| start_with(file, position, Some("NONE"));
    // From the end of the first group: fake Rotate (naming that position, without a
    // CRC-32), FD, then the second group only.
    let mut raw = start(&first.file, first.end_position as u32);
    let events = read_until_eof(&mut raw);
    let f1 = std::fs::read(dir.path().join(&first.file)).unwrap();
    let rest = file_start(&events, &first.file, first.end_position, &f1, false);
    let second: Vec<Vec<u8>> = file_events(&f1, 1)
        .into_iter()
        .filter(|e| e[4] != 163 && e[4] != 161)
        .collect();
    assert_eq!(rest, &second[..]);
    assert!(matches!(
        Event::decode(&rest[0], ChecksumAlg::Crc32).unwrap().body,
        EventBody::Gtid(ref g) if g.seq_no == 2
    ));
    // Not an event boundary, and a file the binlog does not have.
    for (file, pos, want) in [
        (
            first.file.as_str(),
            first.end_position as u32 - 1,
            "impossible position",
        ),
        ("surge-bin.000009", 4, "Could not find first log file name"),
    ] {
        let mut raw = start(file, pos);
        let (code, msg) = err(&raw.read().unwrap());
        assert_eq!(code, 1236);
        assert!(msg.contains(want), "{msg}");
    }
    // A client that never said which checksum it handles: the fake Rotate (without a
    // CRC-32), then MariaDB's refusal, as a MariaDB server answers it.
    let mut raw = start_with(&first.file, 4, None);
    let rotate = raw.read().unwrap();
    assert_eq!(rotate[0], 0);
    assert!(matches!(
        Event::decode(&rotate[1..], ChecksumAlg::Off).unwrap().body,
        EventBody::Rotate(_)
    ));
    let (code, msg) = err(&raw.read().unwrap());
    assert_eq!(code, 1236);
    assert!(
        msg.contains("Slave can not handle replication events with the checksum"),
        "{msg}"
    );
    server.shutdown();
    log.close().unwrap();
}

/// How fast a dump streams a backlog of small groups (run with `--ignored --nocapture`).
#[test]
#[ignore = "a measurement, not a check"]
fn stream_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path()).with_sync(surge_binlog::SyncPolicy::Never);
    let log = Binlog::open(cfg.clone()).unwrap();
    let groups = 200_000u32;
    for start in (0..groups).step_by(1000) {
        let batch = (start..start + 1000)
            .map(|i| {
                let mut c = log.new_cache();
                c.put(&i.to_be_bytes(), &[7u8; 100]).unwrap();
                (c, u64::from(i))
            })
            .collect();
        log.commit_many(batch).unwrap();
    }
    let server = serve(&cfg);
    for round in 0..3 {
        let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
        raw.query("SET @slave_connect_state=''");
        let t = Instant::now();
        dump(&mut raw, BINLOG_DUMP_NON_BLOCK);
        let events = read_until_eof(&mut raw);
        let secs = t.elapsed().as_secs_f64();
        let bytes: usize = events.iter().map(Vec::len).sum();
        println!(
            "round {round}: {groups} groups, {} events, {:.1} MB in {secs:.2} s: {:.0} groups/s, {:.1} MB/s ({} cores)",
            events.len(),
            bytes as f64 / 1e6,
            f64::from(groups) / secs,
            bytes as f64 / 1e6 / secs,
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
    server.shutdown();
    log.close().unwrap();
}

/// Every statement a MariaDB 10.11 replica sends before its dump, and the answer it needs.
#[test]
fn the_connect_statements_are_answered_per_connection() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path()).with_server_id(7);
    let log = Binlog::open(cfg.clone()).unwrap();
    kv_txn(&log, b"a", b"1");
    let server = serve(&cfg);
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    /// What an answer must be.
    enum Want {
        Ok,
        Value(Option<&'static str>),
        Empty,
    }
    let cases = [
        ("SET NAMES latin1", Want::Ok),
        ("SHOW VARIABLES LIKE 'SERVER_ID'", Want::Value(Some("7"))),
        ("SET @master_heartbeat_period= 30000000000", Want::Ok),
        (
            "SET @master_binlog_checksum= @@global.binlog_checksum",
            Want::Ok,
        ),
        ("SELECT @master_binlog_checksum", Want::Value(Some("CRC32"))),
        ("SET skip_replication=1", Want::Ok),
        ("SET @mariadb_slave_capability=4", Want::Ok),
        ("SELECT @@GLOBAL.gtid_domain_id", Want::Value(Some("0"))),
        ("SET @slave_connect_state='0-7-1'", Want::Ok),
        ("SELECT @slave_connect_state", Want::Value(Some("0-7-1"))),
        ("SET @slave_gtid_strict_mode=1", Want::Ok),
        ("SET @slave_gtid_ignore_duplicates=0", Want::Ok),
        ("SET @slave_until_gtid='0-7-1'", Want::Ok),
        (
            "SHOW VARIABLES LIKE 'rpl_semi_sync_master_enabled'",
            Want::Empty,
        ),
        ("SET @rpl_semi_sync_slave= 1", Want::Ok),
        (
            "SELECT @@GLOBAL.gtid_binlog_pos",
            Want::Value(Some("0-7-1")),
        ),
        (
            "SELECT @@GLOBAL.gtid_current_pos",
            Want::Value(Some("0-7-1")),
        ),
        ("SELECT @@GLOBAL.server_id", Want::Value(Some("7"))),
    ];
    for (sql, want) in cases {
        let answer = raw.query(sql);
        match want {
            Want::Ok => assert_eq!(answer[0][0], 0x00, "{sql}: {answer:?}"),
            Want::Value(v) => {
                let cols = usize::from(answer[0][0]);
                assert_eq!(answer.len(), cols + 4, "{sql}: one row: {answer:?}");
                let row = &answer[cols + 2];
                // The last column's value (SHOW VARIABLES has the name first).
                let got = if row.last() == Some(&0xFB) {
                    None
                } else {
                    let mut rest = &row[..];
                    let mut last = Vec::new();
                    while let Some((&len, tail)) = rest.split_first() {
                        last = tail[..usize::from(len)].to_vec();
                        rest = &tail[usize::from(len)..];
                    }
                    Some(String::from_utf8(last).unwrap())
                };
                assert_eq!(got.as_deref(), v, "{sql}");
            }
            Want::Empty => {
                let cols = usize::from(answer[0][0]);
                assert_eq!(answer.len(), cols + 3, "{sql}: no rows: {answer:?}");
            }
        }
    }
    // Another connection has its own variables; COM_RESET_CONNECTION clears them.
    let mut other = Raw::login(server.local_addr(), "root", "", client_caps());
    assert_eq!(
        single_value(&other.query("SELECT @slave_connect_state")),
        None
    );
    raw.command(&[0x1F]);
    assert_eq!(raw.read().unwrap()[0], 0x00);
    assert_eq!(
        single_value(&raw.query("SELECT @slave_connect_state")),
        None
    );
    server.shutdown();
    log.close().unwrap();
}

/// A source with a start grace lets a replica that is ahead of it wait for its GTID
/// instead of refusing it (a replica moving to a node whose copy lags).
#[test]
fn a_start_gtid_arriving_within_the_grace_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path());
    let log = Arc::new(Binlog::open(cfg.clone()).unwrap());
    kv_txn(&log, b"a", b"1");
    let source = Arc::new(DirSource::for_binlog(&cfg).with_start_grace(Duration::from_secs(5)));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = MysqlConfig::default().with_replication_source(source);
    let server =
        MysqlServer::start(listener, config, mysql_backend::Backend::new().factory()).unwrap();
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("SET @slave_connect_state='0-1-2'");
    raw.query("SET @master_binlog_checksum= @@global.binlog_checksum");
    let writer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            kv_txn(&log, b"b", b"2");
            kv_txn(&log, b"c", b"3");
        })
    };
    let t = Instant::now();
    dump(&mut raw, 0);
    // The stream starts once 0-1-2 is there, and its first group is 0-1-3.
    let first_gtid = loop {
        let p = raw.read().unwrap();
        assert_eq!(p[0], 0, "not an event: {p:?}");
        if let EventBody::Gtid(g) = Event::decode(&p[1..], ChecksumAlg::Crc32).unwrap().body {
            break g.seq_no;
        }
    };
    assert_eq!(first_gtid, 3);
    assert!(t.elapsed() >= Duration::from_millis(250));
    writer.join().unwrap();
    drop(raw);
    server.shutdown();
    Arc::into_inner(log).unwrap().close().unwrap();
}

/// A damaged binlog file stops the dump with ERR 1236 naming the file and the offset.
#[test]
fn a_damaged_file_is_reported_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path());
    let log = Binlog::open(cfg.clone()).unwrap();
    let first = kv_txn(&log, b"a", b"1");
    let second = kv_txn(&log, b"b", b"2");
    log.rotate().unwrap();
    kv_txn(&log, b"c", b"3");
    log.close().unwrap();
    // The second group's GTID event claims a size smaller than a header.
    let path = dir.path().join(&first.file);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = first.end_position as usize;
    bytes[at + 9..at + 13].copy_from_slice(&5u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert!(second.end_position > first.end_position);
    let server = serve(&cfg);
    let mut raw = Raw::login(server.local_addr(), "root", "", client_caps());
    raw.query("SET @slave_connect_state='0-1-1'");
    dump(&mut raw, BINLOG_DUMP_NON_BLOCK);
    let error = loop {
        let p = raw.read().unwrap();
        if p[0] == 0xFF {
            break err(&p);
        }
        assert_eq!(p[0], 0, "{p:?}");
    };
    assert_eq!(error.0, 1236);
    assert!(
        error.1.contains(&first.file)
            && error.1.contains(&format!("offset {}", first.end_position))
            && error.1.contains("smaller than its header"),
        "{}",
        error.1
    );
    server.shutdown();
}

/// The stock `mariadb-binlog --read-from-remote-server --raw` (which sets
/// `@master_binlog_checksum='NONE'`, so its first fake Rotate comes without a CRC-32) saves
/// every file under its own name, and each saved file decodes with `mariadb-binlog`.
/// Before the first Rotate followed the variable, the tool read the CRC as four more bytes
/// of the file name.
#[test]
fn mariadb_binlog_saves_the_files_under_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BinlogConfig::new(dir.path().join("log"));
    let log = Binlog::open(cfg.clone()).unwrap();
    for i in 0..3u8 {
        kv_txn(&log, &[b'a', i], b"1");
    }
    log.rotate().unwrap();
    for i in 0..2u8 {
        kv_txn(&log, &[b'b', i], b"2");
    }
    let server = serve(&cfg);
    let out_dir = dir.path().join("saved");
    std::fs::create_dir(&out_dir).unwrap();
    let addr = server.local_addr();
    let run = output_within(std::process::Command::new("mariadb-binlog").args([
        "--no-defaults",
        "--read-from-remote-server",
        "--host=127.0.0.1",
        &format!("--port={}", addr.port()),
        "--user=root",
        "--raw",
        "--to-last-log",
        &format!("--result-file={}/", out_dir.display()),
        "surge-bin.000001",
    ]));
    let out = match run {
        Ok(out) => out,
        Err(e) => {
            assert!(
                std::env::var_os("SURGE_REQUIRE_MARIADB_BINLOG").is_none(),
                "mariadb-binlog is required (SURGE_REQUIRE_MARIADB_BINLOG): {e}"
            );
            eprintln!("SKIPPED: mariadb-binlog is not installed (apt-get install mariadb-client)");
            return;
        }
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut saved: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    saved.sort();
    assert_eq!(saved, ["surge-bin.000001", "surge-bin.000002"]);
    for (name, gtids) in [("surge-bin.000001", 3), ("surge-bin.000002", 2)] {
        let decoded = output_within(
            std::process::Command::new("mariadb-binlog")
                .arg("--no-defaults")
                .arg(out_dir.join(name)),
        )
        .unwrap();
        let text = String::from_utf8_lossy(&decoded.stdout);
        assert!(
            decoded.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&decoded.stderr)
        );
        assert_eq!(text.matches("\tGTID ").count(), gtids, "{name}:\n{text}");
    }
    server.shutdown();
    log.close().unwrap();
}

/// `cmd`'s output, failing the test if it runs past a minute (a stuck tool must not hang
/// the suite).
fn output_within(cmd: &mut std::process::Command) -> std::io::Result<std::process::Output> {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} ran past a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output()
}
