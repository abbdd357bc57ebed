//! [`ParseCache`]: a session's recently parsed statements, by their exact text.
//!
//! Clients repeat the same text: sysbench's hot-row script, a connection pool's `SELECT 1`
//! probe, an application's unprepared point queries. Tokenizing and parsing each anew was
//! the largest single cost of a one-row statement on the server (under a 256-thread
//! sysbench of the write-up's hinted `UPDATE`, the tokenizer's vector growth alone drove
//! about 3% of all CPU into the allocator). Parsing depends only on the text, so a
//! statement parsed once stands for every later copy of the same text.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sqlparser::ast::Statement;

/// Statements kept per session.
const ENTRIES: usize = 32;
/// Longer texts are not kept (a bulk `INSERT` is rarely repeated and would pin its size).
const MAX_TEXT: usize = 4096;

/// The last [`ENTRIES`] distinct statement texts a session parsed, oldest evicted first.
#[derive(Debug, Default)]
pub(crate) struct ParseCache {
    parsed: HashMap<String, Arc<Statement>>,
    order: VecDeque<String>,
}

impl ParseCache {
    /// The statement parsed from `sql` earlier, if kept.
    pub(crate) fn get(&self, sql: &str) -> Option<Arc<Statement>> {
        self.parsed.get(sql).cloned()
    }

    /// Keeps `stmt` as the parse of `sql` (unless `sql` is too long to keep).
    pub(crate) fn put(&mut self, sql: &str, stmt: Arc<Statement>) {
        if sql.len() > MAX_TEXT || self.parsed.contains_key(sql) {
            return;
        }
        if self.order.len() >= ENTRIES
            && let Some(old) = self.order.pop_front()
        {
            self.parsed.remove(&old);
        }
        self.order.push_back(sql.to_string());
        self.parsed.insert(sql.to_string(), stmt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::exec::session::parse_one;

    #[test]
    fn a_kept_statement_is_the_parse_of_its_text_and_the_oldest_goes_first() {
        let mut cache = ParseCache::default();
        for i in 0..ENTRIES + 1 {
            let sql = format!("SELECT {i}");
            let stmt = parse_one(&sql).expect("parses");
            cache.put(&sql, Arc::new(stmt));
        }
        assert!(cache.get("SELECT 0").is_none(), "the oldest was evicted");
        let kept = cache.get("SELECT 5").expect("kept");
        assert_eq!(*kept, parse_one("SELECT 5").expect("parses"));
        assert_eq!(cache.parsed.len(), ENTRIES);
        assert_eq!(cache.order.len(), ENTRIES);
        let long = format!("SELECT '{}'", "x".repeat(MAX_TEXT));
        cache.put(&long, Arc::new(parse_one(&long).expect("parses")));
        assert!(cache.get(&long).is_none(), "long texts are not kept");
    }
}
