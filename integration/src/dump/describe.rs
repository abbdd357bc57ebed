//! One binlog event as one line of text.

use surge_binlog::{Event, EventBody};

use super::rows_text::rows_text;

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
        EventBody::Rows(r) => rows_text(r),
        EventBody::Xid(xid) => format!("COMMIT xid {xid}"),
        EventBody::Rotate(r) => format!("to {} at {}", r.next_file, r.position),
        other => format!("{:?}", other.event_type()),
    };
    line.push_str(&summary);
    line
}
