//! MariaDB's own reader accepts what we write: `mariadb-binlog --verify-binlog-checksum`
//! exits 0, lists every event at our offsets, and decodes our rows.

use std::sync::Arc;

use surge_binlog::{Binlog, EventBody, QueryEvent};

use surge_testkit::mariadb_binlog;

use crate::common::{binlog_files, test_config, verify_with_mariadb};

#[test]
fn mariadb_binlog_reads_every_file_we_write() {
    let dir = tempfile::tempdir().unwrap();
    let log =
        Arc::new(Binlog::open(test_config(dir.path()).with_max_binlog_size(16 << 10)).unwrap());
    let mut ddl = log.new_cache();
    ddl.push(EventBody::Query(QueryEvent::new(
        "surgedb",
        "CREATE TABLE IF NOT EXISTS kv (k VARBINARY(3072) PRIMARY KEY, v LONGBLOB)",
    )))
    .unwrap();
    log.commit(ddl, 1).unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..25u64 {
                    let mut c = log.new_cache();
                    c.annotate("INSERT INTO surgedb.kv VALUES (...)").unwrap();
                    c.put(format!("key-{t}-{i}").as_bytes(), &vec![b'v'; 300])
                        .unwrap();
                    if i % 5 == 0 {
                        c.delete(format!("key-{t}-{}", i / 2).as_bytes()).unwrap();
                    }
                    log.commit(c, 100 + t * 100 + i).unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|h| h.join().unwrap());
    let mut big = log.new_cache();
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..40u32)
        .map(|i| (i.to_be_bytes().to_vec(), vec![0x42; 40_000]))
        .collect();
    big.put_many(rows.iter().map(|(k, v)| (k.as_slice(), v.as_slice())))
        .unwrap();
    log.commit(big, 9999).unwrap();
    assert!(log.stats().renames == 1);
    let log = Arc::into_inner(log).unwrap();
    log.close().unwrap();

    let files = binlog_files(dir.path());
    assert!(files.len() >= 4);
    let mut inserts = 0;
    let mut deletes = 0;
    for f in &files {
        let Some(text) = verify_with_mariadb(f) else {
            return;
        };
        assert!(
            !text.contains("Warning: this binlog is either in use"),
            "{}",
            f.display()
        );
        inserts += text.matches("### INSERT INTO `surgedb`.`kv`").count();
        deletes += text.matches("### DELETE FROM `surgedb`.`kv`").count();
    }
    assert_eq!(inserts, 100 + 40);
    assert_eq!(deletes, 20);
    let first = mariadb_binlog::verify(&files[..1], "-vv").unwrap();
    assert!(first.contains("CREATE TABLE IF NOT EXISTS kv"));
    assert!(first.contains("@1='key-"), "rows decoded by mariadb-binlog");
}

#[test]
fn mariadb_binlog_sees_the_in_use_flag_of_an_open_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    log.commit(log.new_cache(), 1).unwrap();
    let file = dir.path().join(log.current_position().file);
    if let Some(text) = verify_with_mariadb(&file) {
        assert!(text.contains("Warning: this binlog is either in use"));
    }
    log.close().unwrap();
    if let Some(text) = verify_with_mariadb(&file) {
        assert!(!text.contains("Warning: this binlog is either in use"));
    }
}

#[test]
fn mariadb_binlog_decodes_our_update_rows() {
    let dir = tempfile::tempdir().unwrap();
    let log = Binlog::open(test_config(dir.path())).unwrap();
    let mut c = log.new_cache();
    c.put(b"user:1", b"old").unwrap();
    log.commit(c, 1).unwrap();
    let mut c = log.new_cache();
    c.update(b"user:1", b"new-value").unwrap();
    log.commit(c, 2).unwrap();
    let file = dir.path().join(log.current_position().file);
    log.close().unwrap();
    let Some(text) = verify_with_mariadb(&file) else {
        return;
    };
    assert!(text.contains("Update_rows"), "{text}");
    let update = text
        .find("### UPDATE `surgedb`.`kv`")
        .unwrap_or_else(|| panic!("no UPDATE decoded:\n{text}"));
    // Minimal image: WHERE names the key only, SET the new value only.
    let block: Vec<&str> = text[update..].lines().take(5).collect();
    assert_eq!(block[1], "### WHERE", "{block:?}");
    assert!(block[2].starts_with("###   @1='user:1'"), "{block:?}");
    assert_eq!(block[3], "### SET", "{block:?}");
    assert!(block[4].starts_with("###   @2='new-value'"), "{block:?}");
}
