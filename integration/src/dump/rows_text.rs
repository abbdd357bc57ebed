//! A rows event of `surgedb`.`kv` (or any two-column table of that layout) as one line of
//! text, each row with its values as `mariadb-binlog -v` shows them: `SET` for the row
//! written, `WHERE` for the row as it was, `@1` and `@2` for the table's two columns (`k` and
//! `v` in `surgedb`.`kv`), values quoted and escaped, `NULL` for a NULL.
//!
//! Which columns an image holds comes from the event's columns-present bitmaps: MariaDB's
//! default full images hold both columns, the minimal images `surge-binlog` writes for an
//! update or delete hold the key alone before and the value alone after.

use std::fmt::Write as _;

use surge_binlog::{KvRow, RowsEvent, RowsKind};

use super::escaped;

/// Rows printed per event; the rest are counted.
const ROWS_SHOWN: usize = 4;

/// Bytes of a value printed; a longer one is cut and its size given.
const VALUE_SHOWN: usize = 32;

/// Bit of column `@1` (`k`) in a columns-present bitmap.
const COLUMN_1: u8 = 0x01;
/// Bit of column `@2` (`v`).
const COLUMN_2: u8 = 0x02;

/// `Write table id 1, 2 rows: SET @1='a' @2='1'; SET @1='b' @2='2'`, or the size of the
/// row images when they are not of the two-column layout.
pub(crate) fn rows_text(r: &RowsEvent) -> String {
    let mut s = format!("{:?} table id {}", r.kind, r.table_id);
    let rows = match r.kv_rows() {
        Ok(rows) => rows,
        Err(_) => {
            let _ = write!(s, ", {} bytes of row images", r.rows.len());
            return s;
        }
    };
    let before = r.columns_present.first().copied().unwrap_or(0);
    let after = r
        .columns_after
        .as_ref()
        .and_then(|a| a.first().copied())
        .unwrap_or(before);
    let texts: Vec<String> = match r.kind {
        RowsKind::Write => rows
            .iter()
            .map(|w| format!("SET {}", image(w, before)))
            .collect(),
        RowsKind::Delete => rows
            .iter()
            .map(|w| format!("WHERE {}", image(w, before)))
            .collect(),
        // Update rows come in (before, after) pairs.
        RowsKind::Update => rows
            .chunks(2)
            .map(|pair| match pair {
                [old, new] => format!("WHERE {} SET {}", image(old, before), image(new, after)),
                [old] => format!("WHERE {}", image(old, before)),
                _ => String::new(),
            })
            .collect(),
    };
    let n = texts.len();
    let _ = write!(s, ", {n} row{}: ", if n == 1 { "" } else { "s" });
    s.push_str(&texts[..n.min(ROWS_SHOWN)].join("; "));
    if n > ROWS_SHOWN {
        let _ = write!(s, "; ... ({} more)", n - ROWS_SHOWN);
    }
    s
}

/// The columns of one image that `present` says it holds.
fn image(row: &KvRow, present: u8) -> String {
    let mut cols = Vec::new();
    if present & COLUMN_1 != 0 {
        cols.push(format!("@1={}", value(Some(&row.key))));
    }
    if present & COLUMN_2 != 0 {
        cols.push(format!("@2={}", value(row.value.as_deref())));
    }
    cols.join(" ")
}

/// A value quoted and escaped, cut after [`VALUE_SHOWN`] bytes with its size; `NULL`.
fn value(v: Option<&[u8]>) -> String {
    match v {
        None => "NULL".into(),
        Some(v) if v.len() <= VALUE_SHOWN => format!("'{}'", escaped(v)),
        Some(v) => format!("'{}...' ({} bytes)", escaped(&v[..VALUE_SHOWN]), v.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use surge_binlog::{BinlogConfig, EventBody};

    /// The rows events a binlog cache holds after `f` wrote statements into it.
    fn rows_of(f: impl FnOnce(&mut surge_binlog::TxnCache)) -> Vec<RowsEvent> {
        let dir = tempfile::tempdir().unwrap();
        let log = surge_binlog::Binlog::open(BinlogConfig::new(dir.path())).unwrap();
        let mut cache = log.new_cache();
        f(&mut cache);
        log.commit(cache, 7).unwrap();
        let mut out = Vec::new();
        for item in log.reader().unwrap() {
            if let EventBody::Rows(r) = item.unwrap().1.body {
                out.push(r);
            }
        }
        log.shutdown().unwrap();
        out
    }

    #[test]
    fn rows_show_their_values_before_and_after() {
        let long = vec![b'x'; 300];
        let rows = rows_of(|c| {
            c.put(b"greeting", b"hello").unwrap();
            c.update(b"alice", b"90").unwrap();
            c.delete(b"alice").unwrap();
            c.put(&[0x00, 0xff], &long).unwrap();
        });
        let texts: Vec<String> = rows.iter().map(rows_text).collect();
        assert_eq!(
            texts,
            [
                "Write table id 1, 1 row: SET @1='greeting' @2='hello'",
                // The minimal images: the key before, the changed value after.
                "Update table id 1, 1 row: WHERE @1='alice' SET @2='90'",
                "Delete table id 1, 1 row: WHERE @1='alice'",
                "Write table id 1, 1 row: SET @1='\\x00\\xff' \
                 @2='xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (300 bytes)",
            ]
        );
    }

    #[test]
    fn many_rows_show_the_first_four_and_count_the_rest() {
        let rows = rows_of(|c| {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..6)
                .map(|i| (format!("k{i}").into_bytes(), format!("{i}").into_bytes()))
                .collect();
            c.put_many(pairs.iter().map(|(k, v)| (&k[..], &v[..])))
                .unwrap();
        });
        let text = rows_text(&rows[0]);
        assert!(
            text.starts_with("Write table id 1, 6 rows: SET @1='k0' @2='0'; SET @1='k1' @2='1';")
                && text.ends_with("SET @1='k3' @2='3'; ... (2 more)"),
            "{text}"
        );
    }
}
