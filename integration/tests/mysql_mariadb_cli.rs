//! The stock `mariadb` command-line client (MariaDB Connector/C inside) against the MySQL
//! server over the test backend: `-e` with several statements, `--comments`, batch mode from
//! standard input, `use`, `status` (COM_STATISTICS), errors with codes, a wrong password.
//!
//! Without `/usr/bin/mariadb` (or `mariadb` on the PATH) each test prints
//! `SKIPPED: mariadb client not installed` and passes, unless `SURGE_REQUIRE_MARIADB_BINLOG`
//! or `SURGE_REQUIRE_MARIADB_CLIENT` is set: then it fails.
#![allow(clippy::unwrap_used)]

#[path = "common/mysql_backend.rs"]
mod mysql_backend;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

use mysql_backend::{eventually, required, start};
use surgedb::mysql::{MysqlConfig, MysqlServer};

/// The client, or `None` when the test is to be skipped.
fn client() -> Option<String> {
    let found = ["/usr/bin/mariadb", "mariadb"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    match found {
        Some(c) => Some(c.to_owned()),
        None if required(&[
            "SURGE_REQUIRE_MARIADB_BINLOG",
            "SURGE_REQUIRE_MARIADB_CLIENT",
        ]) =>
        {
            panic!("mariadb client not installed, and SURGE_REQUIRE_MARIADB_* is set")
        }
        None => {
            println!("SKIPPED: mariadb client not installed");
            None
        }
    }
}

/// Runs the client against `server` with `args`, feeding `stdin`; (success, stdout, stderr).
fn run(
    bin: &str,
    server: &MysqlServer,
    user: &str,
    password: &str,
    args: &[&str],
    stdin: &str,
) -> (bool, String, String) {
    let port = server.local_addr().port().to_string();
    let mut child = Command::new(bin)
        .args([
            "--no-defaults",
            "--protocol=TCP",
            "-h",
            "127.0.0.1",
            "-P",
            &port,
            "-u",
            user,
        ])
        .arg(format!("--password={password}"))
        .arg("--connect-timeout=10")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn dash_e_with_several_statements_and_comments() {
    let Some(bin) = client() else { return };
    let (server, backend) = start(MysqlConfig::default());
    let (ok, out, err) = run(
        &bin,
        &server,
        "root",
        "",
        &[
            "-D",
            "test",
            "--batch",
            "--comments",
            "-e",
            "insert into t values (1, 'one'); /* a comment the client keeps */ insert into t values (2, 'two'); select id, name from t -- trailing\n; select database()",
        ],
        "",
    );
    assert!(ok, "stdout: {out}\nstderr: {err}");
    assert_eq!(out, "id\tname\n1\tone\n2\ttwo\nDATABASE()\ntest\n");
    assert_eq!(backend.shared.table.lock().unwrap().len(), 2);
    server.shutdown();
}

#[test]
fn batch_mode_from_stdin_with_use_types_and_status() {
    let Some(bin) = client() else { return };
    let (server, _backend) = start(MysqlConfig::default().with_user("app", "pw"));
    let script = "use sbtest\nselect database();\nselect types;\nbegin;\ninsert into t values (5, 'five');\ncommit;\nselect id, name from t where id = 5;\n\\s\n";
    let (ok, out, err) = run(
        &bin,
        &server,
        "app",
        "pw",
        &["--batch", "--skip-column-names"],
        script,
    );
    assert!(ok, "stdout: {out}\nstderr: {err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "sbtest");
    let types: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(
        types,
        [
            "-5",
            "65535",
            "-70000",
            "123456",
            "18446744073709551615",
            "1.5",
            "2.25",
            "-123.45",
            "char",
            "h\u{e9}llo",
            "blob\u{1}",
            "2026-12-02",
            "2026-12-02 01:02:03.000456",
            "2026-12-02 23:59:58",
            "NULL",
        ]
    );
    assert_eq!(lines[2], "5\tfive");
    // `\s` prints the server version, USER() and COM_STATISTICS' line (whose uptime the
    // client takes apart and prints on its own line).
    assert!(
        out.contains("Server version:\t\t10.11.99-SurgeDB-"),
        "{out}\n{err}"
    );
    assert!(out.contains("Current user:\t\tapp@127.0.0.1"), "{out}");
    assert!(out.contains("Uptime:\t\t\t1 sec"), "{out}");
    assert!(out.contains("Threads: 1  Questions: "), "{out}");
    server.shutdown();
}

#[test]
fn errors_carry_their_codes() {
    let Some(bin) = client() else { return };
    let (server, _backend) = start(MysqlConfig::default());
    let (ok, _, err) = run(&bin, &server, "root", "", &["-e", "select boom"], "");
    assert!(!ok);
    assert!(
        err.contains("ERROR 1054 (42S22)") && err.contains("Unknown column 'boom'"),
        "{err}"
    );
    let (ok, _, err) = run(
        &bin,
        &server,
        "root",
        "",
        &[
            "-D",
            "test",
            "-e",
            "insert into t values (1, 'a'); insert into t values (1, 'b')",
        ],
        "",
    );
    assert!(!ok);
    assert!(err.contains("ERROR 1062 (23000)"), "{err}");
    let (ok, _, err) = run(
        &bin,
        &server,
        "root",
        "",
        &["-D", "nosuchdb", "-e", "select 1"],
        "",
    );
    assert!(!ok);
    assert!(
        err.contains("ERROR 1049 (42000): Unknown database 'nosuchdb'"),
        "{err}"
    );
    server.shutdown();
}

#[test]
fn wrong_password_is_refused() {
    let Some(bin) = client() else { return };
    let (server, backend) = start(MysqlConfig::default().with_user("app", "right"));
    let (ok, _, err) = run(&bin, &server, "app", "wrong", &["-e", "select 1"], "");
    assert!(!ok);
    assert!(
        err.contains(
            "ERROR 1045 (28000): Access denied for user 'app'@'127.0.0.1' (using password: YES)"
        ),
        "{err}"
    );
    assert_eq!(backend.shared.opened.load(Ordering::SeqCst), 0);
    let (ok, out, err) = run(&bin, &server, "app", "right", &["-N", "-e", "select 7"], "");
    assert!(ok, "{err}");
    assert_eq!(out, "7\n");
    eventually("the session dropped", || {
        backend.shared.dropped.load(Ordering::SeqCst) == 1
    });
    server.shutdown();
}

#[test]
fn oversized_query_gets_1153() {
    let Some(bin) = client() else { return };
    let (server, _backend) = start(MysqlConfig::default().with_max_allowed_packet(1024));
    let sql = format!("select 1 /* {} */", "x".repeat(2000));
    let (ok, _, err) = run(&bin, &server, "root", "", &["--comments", "-e", &sql], "");
    assert!(!ok);
    assert!(
        err.contains("ERROR 1153 (08S01)")
            && err.contains("Got a packet bigger than 'max_allowed_packet' bytes"),
        "{err}"
    );
    // The server goes on.
    let (ok, out, err) = run(&bin, &server, "root", "", &["-N", "-e", "select 8"], "");
    assert!(ok, "{err}");
    assert_eq!(out, "8\n");
    server.shutdown();
}

/// The interactive client (under `script`, which gives it a terminal) builds its completion
/// table at connect: `show databases`, `show tables`, then COM_FIELD_LIST for each table.
#[test]
fn interactive_client_lists_fields() {
    let Some(bin) = client() else { return };
    if Command::new("script").arg("--version").output().is_err() {
        println!("SKIPPED: no `script` to give the client a terminal");
        return;
    }
    let (server, backend) = start(MysqlConfig::default());
    let port = server.local_addr().port();
    let cmd = format!(
        "{bin} --no-defaults --protocol=TCP -h 127.0.0.1 -P {port} -u root --password= -D test"
    );
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"select id, name from t where id = 1;\n")
        .unwrap();
    eventually("COM_FIELD_LIST for t", || {
        !backend.shared.field_lists.lock().unwrap().is_empty()
    });
    stdin.write_all(b"quit\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("Server version: 10.11.99-SurgeDB-"),
        "{stdout}"
    );
    // The connection survived the field listing: the query after it was answered.
    assert!(stdout.contains("Empty set"), "{stdout}");
    assert_eq!(
        backend.shared.field_lists.lock().unwrap()[0],
        ("t".to_owned(), String::new())
    );
    server.shutdown();
}
