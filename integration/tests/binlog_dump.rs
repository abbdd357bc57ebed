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
    assert_eq!(lines.len(), 31, "{text}");
    assert!(lines[0].starts_with("#4 ") && lines[0].contains("FormatDescription"));
    assert!(text.contains("#967        WriteRows") && text.contains("2 rows: alpha beta"));
    assert!(text.contains("Delete table id 60, 1 rows: alpha"));
    assert!(text.contains("1 rows: 0x00FF10"));
    assert!(lines[30].contains("Rotate") && lines[30].contains("to mdb-bin.000002 at 4"));
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
    // The events before the damage are still listed.
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}
