//! One binlog event as one line of text.

use std::fmt::Write as _;

use surge_binlog::{Event, EventBody};

/// One event as a line of text.
pub fn describe(offset: u64, event: &Event) -> String {
    let h = &event.header;
    let mut line = format!(
        "#{offset:<10} {:<20} size {:<8} end {:<10}",
        format!("{:?}", h.event_type),
        h.event_size,
        h.log_pos
    );
    let summary = match &event.body {
        EventBody::FormatDescription(fd) => format!(
            "binlog v{} server {} checksum {:?}{}",
            fd.binlog_version,
            fd.server_version,
            fd.checksum_alg,
            if h.flags & surge_binlog::FLAG_BINLOG_IN_USE != 0 {
                " (in use)"
            } else {
                ""
            }
        ),
        EventBody::GtidList(list) => {
            let gtids: Vec<String> = list.gtids.iter().map(ToString::to_string).collect();
            format!("[{}]", gtids.join(","))
        }
        EventBody::BinlogCheckpoint(cp) => format!("file {}", cp.file),
        EventBody::Gtid(g) => format!("GTID {}-{}-{}", g.domain_id, h.server_id, g.seq_no),
        EventBody::Query(q) => format!(
            "db `{}` {}",
            String::from_utf8_lossy(&q.database),
            String::from_utf8_lossy(&q.query)
        ),
        EventBody::AnnotateRows(sql) => String::from_utf8_lossy(sql).into_owned(),
        EventBody::TableMap(t) => format!("table id {} `{}`.`{}`", t.table_id, t.database, t.table),
        EventBody::Rows(r) => {
            let mut s = format!("{:?} table id {}", r.kind, r.table_id);
            match r.kv_rows() {
                Ok(rows) => {
                    let _ = write!(s, ", {} rows:", rows.len());
                    for row in rows.iter().take(4) {
                        let _ = write!(s, " {}", printable(&row.key));
                    }
                    if rows.len() > 4 {
                        s.push_str(" ...");
                    }
                }
                Err(_) => {
                    let _ = write!(s, ", {} bytes of row images", r.rows.len());
                }
            }
            s
        }
        EventBody::Xid(xid) => format!("COMMIT xid {xid}"),
        EventBody::Rotate(r) => format!("to {} at {}", r.next_file, r.position),
        other => format!("{:?}", other.event_type()),
    };
    line.push_str(&summary);
    line
}

/// Bytes as text when printable, else as hex.
fn printable(bytes: &[u8]) -> String {
    if bytes.iter().all(|b| b.is_ascii_graphic()) {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        let mut s = String::from("0x");
        for b in bytes {
            let _ = write!(s, "{b:02X}");
        }
        s
    }
}
