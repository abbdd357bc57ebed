//! SHOW statements (and the statements a session answers without touching tables).

use sqlparser::ast::{
    ShowCreateObject, ShowStatementFilter, ShowStatementFilterPosition, ShowStatementOptions,
    Statement,
};

use super::session::Session;
use crate::sql::column::{ColumnKind, ColumnMeta};
use crate::sql::expr::like;
use crate::sql::output::{Output, SqlError};
use crate::sql::value::Value;

fn text(s: impl Into<String>) -> Value {
    Value::Bytes(s.into().into_bytes())
}

/// A result set of string columns named `names`.
pub(crate) fn string_rows(names: &[&str], rows: Vec<Vec<Value>>) -> Output {
    Output::Rows {
        columns: names
            .iter()
            .map(|n| {
                let mut m = ColumnMeta::expr(*n, ColumnKind::VarString);
                m.length = 1024;
                m
            })
            .collect(),
        rows,
    }
}

fn matches(filter: Option<&ShowStatementFilter>, name: &str) -> Result<bool, SqlError> {
    match filter {
        None => Ok(true),
        Some(
            ShowStatementFilter::Like(p)
            | ShowStatementFilter::ILike(p)
            | ShowStatementFilter::NoKeyword(p),
        ) => Ok(like(name.as_bytes(), p.as_bytes())),
        Some(ShowStatementFilter::Where(_)) => Err(SqlError::unsupported("SHOW ... WHERE")),
    }
}

fn option_filter(o: &ShowStatementOptions) -> Option<&ShowStatementFilter> {
    match &o.filter_position {
        Some(ShowStatementFilterPosition::Infix(f) | ShowStatementFilterPosition::Suffix(f)) => {
            Some(f)
        }
        None => None,
    }
}

fn option_parent(o: &ShowStatementOptions) -> Option<String> {
    o.show_in
        .as_ref()
        .and_then(|i| i.parent_name.as_ref())
        .map(|n| super::ddl::split_name(n).1)
}

/// The status counters: server ones and AliSQL's group-update counters, live from the
/// transaction client's hot-row executor.
pub(crate) fn status_rows(s: &Session) -> Vec<(String, Value)> {
    let sh = &s.shared;
    let hot = sh.client.hot_counters();
    let counters = sh.client.counters();
    let procs = sh.processes.lock().len();
    let u = |v: u64| Value::UInt(v);
    let mut rows = vec![
        ("Uptime".to_owned(), u(sh.started.elapsed().as_secs())),
        ("Threads_connected".into(), u(procs as u64)),
        ("Threads_running".into(), u(1)),
        (
            "Questions".into(),
            u(sh.questions.load(std::sync::atomic::Ordering::Relaxed)),
        ),
        ("Com_commit".into(), u(counters.commits)),
        ("Com_rollback".into(), u(counters.rollbacks)),
        // AliSQL's names where SurgeDB's grouping has the same quantity (its object-pool
        // counters, such as Group_update_free_count, have none and are not shown): groups
        // (one leader each), followers, updates through the group path, updates that ran
        // alone, failed updates, groups whose lock or commit failed.
        ("Group_update_leader_count".into(), u(hot.groups)),
        (
            "Group_update_follower_count".into(),
            u(hot.members.saturating_sub(hot.groups)),
        ),
        ("Group_update_total_count".into(), u(hot.members)),
        ("Group_update_ignore_count".into(), u(hot.ungrouped)),
        ("Group_update_fail_count".into(), u(hot.failed_members)),
        (
            "Group_update_gu_lock_fail_count".into(),
            u(hot.failed_groups),
        ),
        // SurgeDB's own: updates whose commit answer was lost, and the largest group.
        (
            "Group_update_undetermined_count".into(),
            u(hot.undetermined_members),
        ),
        ("Group_update_max_group_size".into(), u(hot.max_group_size)),
    ];
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// The names [`cluster_status_rows`] gives.
const CLUSTER_STATUS: [&str; 16] = [
    "Pessimistic_lock_nodes_answered",
    "Pessimistic_lock_in_memory",
    "Pessimistic_lock_fallback_full",
    "Pessimistic_lock_fallback_not_writable",
    "Pessimistic_lock_fallback_stale",
    "Pessimistic_lock_raft_bytes",
    "Pessimistic_lock_waits",
    "Pessimistic_lock_wait_timeouts",
    "Pessimistic_lock_deadlocks",
    "Pessimistic_lock_migrated_on_transfer",
    "Pessimistic_lock_migrated_on_split",
    "Pessimistic_lock_migrated_on_merge",
    "Pessimistic_lock_lost_with_leadership",
    "Raft_proposals",
    "Raft_bytes",
    "One_phase_commits",
];

/// The cluster's pessimistic-lock and Raft counters (every node's, summed; TiKV shows these
/// per store): where locks went (the leader's memory or Raft), why in-memory locking fell
/// back to pipelined, and the locks migrated or lost on region changes. Asking the nodes is
/// a round trip each, so a SHOW asks only when its pattern may match one of them; no node
/// answering leaves them out.
fn cluster_status_rows(s: &Session) -> Vec<(String, Value)> {
    let Ok((c, answered)) = s.shared.client.cluster_counters() else {
        return Vec::new();
    };
    let u = |v: u64| Value::UInt(v);
    vec![
        (
            "Pessimistic_lock_nodes_answered".to_owned(),
            u(answered as u64),
        ),
        ("Pessimistic_lock_in_memory".into(), u(c.in_memory_success)),
        ("Pessimistic_lock_fallback_full".into(), u(c.in_memory_full)),
        (
            "Pessimistic_lock_fallback_not_writable".into(),
            u(c.in_memory_not_writable),
        ),
        (
            "Pessimistic_lock_fallback_stale".into(),
            u(c.in_memory_stale),
        ),
        ("Pessimistic_lock_raft_bytes".into(), u(c.lock_raft_bytes)),
        ("Pessimistic_lock_waits".into(), u(c.lock_waits)),
        (
            "Pessimistic_lock_wait_timeouts".into(),
            u(c.lock_wait_timeouts),
        ),
        ("Pessimistic_lock_deadlocks".into(), u(c.deadlocks)),
        (
            "Pessimistic_lock_migrated_on_transfer".into(),
            u(c.locks_migrated_on_transfer),
        ),
        (
            "Pessimistic_lock_migrated_on_split".into(),
            u(c.locks_migrated_on_split),
        ),
        (
            "Pessimistic_lock_migrated_on_merge".into(),
            u(c.locks_migrated_on_merge),
        ),
        (
            "Pessimistic_lock_lost_with_leadership".into(),
            u(c.locks_lost_on_leader_loss),
        ),
        ("Raft_proposals".into(), u(c.proposals)),
        ("Raft_bytes".into(), u(c.raft_bytes)),
        ("One_phase_commits".into(), u(c.one_pc)),
    ]
}

/// Runs a SHOW (or another statement the session answers itself).
///
/// # Errors
/// 1235 for what is not supported.
pub(crate) fn run(s: &mut Session, stmt: &Statement) -> Result<Output, SqlError> {
    match stmt {
        Statement::ShowVariables { filter, global, .. } => {
            let mut all = s.shared.globals.lock().clone();
            if !*global {
                for name in all.clone().keys() {
                    if let Some(v) = crate::sql::expr::SessionView::variable(s, name) {
                        all.insert(name.clone(), v);
                    }
                }
            }
            let mut rows = Vec::new();
            for (k, v) in all {
                if matches(filter.as_ref(), &k)? {
                    let v = v.to_text().map_or(Value::Null, Value::Bytes);
                    rows.push(vec![text(k), v]);
                }
            }
            Ok(string_rows(&["Variable_name", "Value"], rows))
        }
        Statement::ShowStatus { filter, .. } => {
            let mut rows = Vec::new();
            let mut all = status_rows(s);
            let mut cluster = false;
            for name in CLUSTER_STATUS {
                cluster |= matches(filter.as_ref(), name)?;
            }
            if cluster {
                all.extend(cluster_status_rows(s));
                all.sort_by(|a, b| a.0.cmp(&b.0));
            }
            for (k, v) in all {
                if matches(filter.as_ref(), &k)? {
                    rows.push(vec![text(k), v.to_text().map_or(Value::Null, Value::Bytes)]);
                }
            }
            Ok(string_rows(&["Variable_name", "Value"], rows))
        }
        Statement::ShowDatabases { show_options, .. } => {
            let schema = s.schema()?;
            let mut rows = vec![vec![text("information_schema")]];
            for db in &schema.dbs {
                if matches(option_filter(show_options), db)? {
                    rows.push(vec![text(db.clone())]);
                }
            }
            Ok(string_rows(&["Database"], rows))
        }
        Statement::ShowTables {
            full, show_options, ..
        } => {
            let db = match option_parent(show_options) {
                Some(d) => d,
                None => s.current_db()?,
            };
            let schema = s.schema()?;
            if !schema.dbs.contains(&db) {
                return Err(SqlError::new(
                    1049,
                    "42000",
                    format!("Unknown database '{db}'"),
                ));
            }
            let mut names: Vec<&String> = schema
                .tables
                .keys()
                .filter(|(d, _)| *d == db)
                .map(|(_, t)| t)
                .collect();
            names.sort();
            let mut rows = Vec::new();
            for n in names {
                if matches(option_filter(show_options), n)? {
                    let mut r = vec![text(n.clone())];
                    if *full {
                        r.push(text("BASE TABLE"));
                    }
                    rows.push(r);
                }
            }
            let col = format!("Tables_in_{db}");
            if *full {
                Ok(string_rows(&[&col, "Table_type"], rows))
            } else {
                Ok(string_rows(&[&col], rows))
            }
        }
        Statement::ExplainTable { table_name, .. } => columns(s, table_name, None),
        Statement::ShowColumns { show_options, .. } => {
            let name = show_options
                .show_in
                .as_ref()
                .and_then(|i| i.parent_name.clone())
                .ok_or_else(|| SqlError::parse("SHOW COLUMNS needs FROM table"))?;
            columns(s, &name, option_filter(show_options))
        }
        Statement::ShowCreate { obj_type, obj_name } => match obj_type {
            ShowCreateObject::Table => {
                let schema = s.schema()?;
                let t = s.table(&schema, obj_name)?;
                Ok(string_rows(
                    &["Table", "Create Table"],
                    vec![vec![text(t.name.clone()), text(t.create_sql())]],
                ))
            }
            other => Err(SqlError::unsupported(format!("SHOW CREATE {other}"))),
        },
        Statement::ShowProcessList { .. } => {
            let procs = s.shared.processes.lock().clone();
            let rows = procs
                .into_iter()
                .map(|(id, p)| {
                    vec![
                        Value::UInt(u64::from(id)),
                        text(p.user),
                        text(p.host),
                        p.db.map_or(Value::Null, text),
                        text(if p.info.is_some() { "Query" } else { "Sleep" }),
                        Value::UInt(p.since.elapsed().as_secs()),
                        text(""),
                        p.info.map_or(Value::Null, text),
                    ]
                })
                .collect();
            Ok(string_rows(
                &[
                    "Id", "User", "Host", "db", "Command", "Time", "State", "Info",
                ],
                rows,
            ))
        }
        Statement::ShowVariable { variable } => {
            let words: Vec<String> = variable
                .iter()
                .map(|i| i.value.to_ascii_lowercase())
                .collect();
            match words.first().map(String::as_str) {
                Some(w @ ("warnings" | "errors")) => {
                    let rows = s
                        .warnings
                        .iter()
                        .filter(|(level, _, _)| w == "warnings" || level == "Error")
                        .map(|(level, code, msg)| {
                            vec![
                                text(level.clone()),
                                Value::UInt(u64::from(*code)),
                                text(msg.clone()),
                            ]
                        })
                        .collect();
                    Ok(string_rows(&["Level", "Code", "Message"], rows))
                }
                Some("index" | "indexes" | "keys") => {
                    let (table, db) = match words.as_slice() {
                        [_, f, t] if f == "from" || f == "in" => (t.clone(), None),
                        [_, f, t, g, d]
                            if (f == "from" || f == "in") && (g == "from" || g == "in") =>
                        {
                            (t.clone(), Some(d.clone()))
                        }
                        _ => return Err(SqlError::parse("SHOW INDEX FROM table [FROM db]")),
                    };
                    // The names as typed (the words above are lower-cased).
                    let typed = |w: &str| {
                        variable
                            .iter()
                            .find(|i| i.value.eq_ignore_ascii_case(w))
                            .map_or_else(|| w.to_owned(), |i| i.value.clone())
                    };
                    let mut parts = Vec::new();
                    if let Some(d) = &db {
                        parts.push(sqlparser::ast::Ident::new(typed(d)));
                    }
                    parts.push(sqlparser::ast::Ident::new(typed(&table)));
                    index_rows(s, &sqlparser::ast::ObjectName::from(parts))
                }
                Some("engines") => Ok(string_rows(
                    &[
                        "Engine",
                        "Support",
                        "Comment",
                        "Transactions",
                        "XA",
                        "Savepoints",
                    ],
                    vec![vec![
                        text("InnoDB"),
                        text("DEFAULT"),
                        text("SurgeDB: Percolator transactions over Raft regions"),
                        text("YES"),
                        text("NO"),
                        text("NO"),
                    ]],
                )),
                Some("charset" | "character") => Ok(string_rows(
                    &["Charset", "Description", "Default collation", "Maxlen"],
                    vec![vec![
                        text("utf8mb4"),
                        text("UTF-8 Unicode"),
                        text("utf8mb4_general_ci"),
                        Value::UInt(4),
                    ]],
                )),
                Some("collation") => Ok(string_rows(
                    &[
                        "Collation",
                        "Charset",
                        "Id",
                        "Default",
                        "Compiled",
                        "Sortlen",
                    ],
                    vec![vec![
                        text("utf8mb4_general_ci"),
                        text("utf8mb4"),
                        Value::UInt(45),
                        text("Yes"),
                        text("Yes"),
                        Value::UInt(1),
                    ]],
                )),
                _ => Err(SqlError::unsupported(format!("SHOW {}", words.join(" ")))),
            }
        }
        other => Err(SqlError::unsupported(statement_name(other))),
    }
}

/// SHOW INDEX of `name`: one row per index column, the integer primary key first.
fn index_rows(s: &Session, name: &sqlparser::ast::ObjectName) -> Result<Output, SqlError> {
    let schema = s.schema()?;
    let t = s.table(&schema, name)?;
    let mut rows = Vec::new();
    let mut row = |key: &str, unique: bool, seq: usize, col: usize| {
        rows.push(vec![
            text(t.name.clone()),
            Value::UInt(u64::from(!unique)),
            text(key),
            Value::UInt(seq as u64 + 1),
            text(t.columns[col].name.clone()),
            text("A"),
            Value::Null,
            Value::Null,
            Value::Null,
            text(if t.columns[col].nullable { "YES" } else { "" }),
            text("BTREE"),
            text(""),
            text(""),
        ]);
    };
    if let Some(h) = t.handle_column {
        row("PRIMARY", true, 0, h);
    }
    for ix in &t.indexes {
        for (seq, &col) in ix.columns.iter().enumerate() {
            row(&ix.name, ix.unique, seq, col);
        }
    }
    Ok(string_rows(
        &[
            "Table",
            "Non_unique",
            "Key_name",
            "Seq_in_index",
            "Column_name",
            "Collation",
            "Cardinality",
            "Sub_part",
            "Packed",
            "Null",
            "Index_type",
            "Comment",
            "Index_comment",
        ],
        rows,
    ))
}

/// SHOW COLUMNS / DESCRIBE of `name`, columns matching `filter`.
fn columns(
    s: &Session,
    name: &sqlparser::ast::ObjectName,
    filter: Option<&ShowStatementFilter>,
) -> Result<Output, SqlError> {
    let schema = s.schema()?;
    let t = s.table(&schema, name)?;
    let mut rows = Vec::new();
    for (i, c) in t.columns.iter().enumerate() {
        if !matches(filter, &c.name)? {
            continue;
        }
        let key = if t.is_primary(i) {
            "PRI"
        } else if t
            .indexes
            .iter()
            .any(|x| x.unique && x.columns.first() == Some(&i))
        {
            "UNI"
        } else if t.indexes.iter().any(|x| x.columns.first() == Some(&i)) {
            "MUL"
        } else {
            ""
        };
        rows.push(vec![
            text(c.name.clone()),
            text(c.ty.sql_name()),
            text(if c.nullable { "YES" } else { "NO" }),
            text(key),
            c.default.clone().map_or(Value::Null, text),
            text(if c.auto_increment {
                "auto_increment"
            } else {
                ""
            }),
        ]);
    }
    Ok(string_rows(
        &["Field", "Type", "Null", "Key", "Default", "Extra"],
        rows,
    ))
}

fn statement_name(stmt: &Statement) -> String {
    let text = stmt.to_string();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
