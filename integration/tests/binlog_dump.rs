//! `surgedb binlog dump` on files written by a real MariaDB 10.11, and on a damaged one.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../binlog/testdata")
        .join(name)
}

fn dump(path: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_surgedb"))
        .args(["binlog", "dump"])
        .arg(path)
        .output()
        .expect("the surgedb binary runs")
}

#[test]
fn dump_lists_every_event_of_a_mariadb_file_at_its_offset() {
    let out = dump(&fixture("mdb-bin.000001"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), LEGEND_LINES + 31, "{text}");
    let events = &lines[LEGEND_LINES..];
    assert!(events[0].starts_with("#4 ") && events[0].contains("FormatDescription"));
    // Rows with their values, as `mariadb-binlog -v` shows them (MariaDB's full images).
    assert!(
        text.contains("#967        WriteRows")
            && text.contains("2 rows: SET @1='alpha' @2='1'; SET @1='beta' @2='2'"),
        "{text}"
    );
    assert!(
        text.contains("Update table id 60, 1 row: WHERE @1='beta' @2='2' SET @1='beta' @2='20'"),
        "{text}"
    );
    assert!(
        text.contains("Delete table id 60, 1 row: WHERE @1='alpha' @2='1'"),
        "{text}"
    );
    assert!(
        text.contains("1 row: SET @1='\\x00\\xff\\x10' @2='\\x01\\x02'"),
        "{text}"
    );
    assert!(events[30].contains("Rotate") && events[30].contains("to mdb-bin.000002 at 4"));
}

/// Lines of the legend the dump starts with.
const LEGEND_LINES: usize = 3;

#[test]
fn dump_explains_its_columns_and_the_end_position_0_of_cached_events() {
    // A file written by surge-binlog: the events of a transaction's cache carry end 0.
    let dir = tempfile::tempdir().unwrap();
    let log =
        surgedb::binlog::Binlog::open(surgedb::binlog::BinlogConfig::new(dir.path())).unwrap();
    let mut txn = log.new_cache();
    txn.put(b"alice", b"100").unwrap();
    log.commit(txn, 1).unwrap();
    let mut txn = log.new_cache();
    txn.update(b"alice", b"90").unwrap();
    log.commit(txn, 2).unwrap();
    let file = log.file_paths()[0].clone();
    log.shutdown().unwrap();
    let out = dump(&file);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[..LEGEND_LINES].iter().all(|l| l.starts_with("# ")),
        "{text}"
    );
    let legend = lines[..LEGEND_LINES].join("\n");
    assert!(
        legend.contains("end_log_pos") && legend.contains("end 0") && legend.contains("cache"),
        "{legend}"
    );
    assert!(
        legend.contains("WHERE") && legend.contains("@1"),
        "{legend}"
    );
    assert!(
        text.contains("end 0         Update table id 1, 1 row: WHERE @1='alice' SET @2='90'"),
        "{text}"
    );
}

#[test]
fn dump_shows_the_in_use_flag_of_a_file_left_open() {
    let out = dump(&fixture("mdb-bin.000003"));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("(in use)"));
}

#[test]
fn dump_of_a_truncated_file_names_file_and_offset_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("mdb-bin.000001")).unwrap();
    let cut = dir.path().join("cut.000001");
    std::fs::write(&cut, &bytes[..300]).unwrap();
    let out = dump(&cut);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.000001") && err.contains("offset 285"),
        "{err}"
    );
    // The events before the damage are still listed, after the legend.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        LEGEND_LINES + 2
    );
}

/// Runs `surgedb binlog dump -` with `input` on standard input.
fn dump_stdin(input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_surgedb"))
        .args(["binlog", "dump", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the surgedb binary runs");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin.write_all(input).expect("the child reads its input");
    drop(stdin);
    child.wait_with_output().expect("the child exits")
}

/// Dumps `bytes` written to a file named `name`, checks that it fails with one plain
/// sentence (no Debug output of a Rust value, no panic) holding every one of `wanted`, and
/// returns that sentence.
fn dump_fails_saying(name: &str, bytes: &[u8], wanted: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("the input file is written");
    let out = dump(&path);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(out.stdout.is_empty(), "no events printed");
    for want in wanted {
        assert!(err.contains(want), "{want:?} missing: {err}");
    }
    assert_plain_sentence(&err);
    err
}

/// An error is one plain sentence: no Debug output of a Rust value, no panic.
fn assert_plain_sentence(err: &str) {
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    for debug in ["[", "{", "Os ", "panicked", "Error"] {
        assert!(!err.contains(debug), "no Debug output ({debug:?}): {err}");
    }
}

#[test]
fn dump_of_an_empty_file_says_it_is_empty_and_fails() {
    dump_fails_saying("empty.000001", b"", &["empty.000001", "is empty"]);
}

#[test]
fn dump_of_a_file_cut_inside_the_magic_says_truncated_not_bad_magic() {
    let err = dump_fails_saying("cut.000001", &[0xfe, 0x62], &["truncated", "fe 62 69 6e"]);
    assert!(err.contains("only fe 62 ("), "{err}");
    assert!(!err.contains("bad magic"), "{err}");
}

#[test]
fn dump_of_a_file_cut_inside_the_format_description_says_truncated() {
    let bytes = std::fs::read(fixture("mdb-bin.000001")).unwrap();
    dump_fails_saying("cut.000001", &bytes[..40], &["truncated", "offset 4 "]);
}

#[test]
fn dump_of_a_foreign_file_prints_expected_and_found_bytes_in_one_hex_style() {
    dump_fails_saying(
        "notes.txt",
        b"\xde\xad\xbe\xefhello",
        &["not a binlog file", "de ad be ef", "fe 62 69 6e"],
    );
}

#[test]
fn dump_of_a_missing_file_is_a_plain_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let out = dump(&dir.path().join("absent.000001"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("absent.000001"), "{err}");
    assert_plain_sentence(&err);
}

#[test]
fn dump_dash_reads_standard_input() {
    let bytes = std::fs::read(fixture("mdb-bin.000001")).unwrap();
    let from_file = dump(&fixture("mdb-bin.000001"));
    let from_stdin = dump_stdin(&bytes);
    assert!(
        from_stdin.status.success(),
        "{}",
        String::from_utf8_lossy(&from_stdin.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&from_stdin.stdout),
        String::from_utf8_lossy(&from_file.stdout)
    );

    let empty = dump_stdin(b"");
    assert!(!empty.status.success());
    let err = String::from_utf8_lossy(&empty.stderr);
    assert!(
        err.contains("standard input") && err.contains("is empty"),
        "{err}"
    );
    assert_plain_sentence(&err);
}
