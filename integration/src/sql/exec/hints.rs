//! AliSQL's inventory hints on an UPDATE: `commit_on_success`, `rollback_on_fail` and
//! `target_affect_row(n)` (see
//! <https://www.alibabacloud.com/help/en/rds/apsaradb-rds-for-mysql/inventory-hint>).

use sqlparser::ast::OptimizerHint;

use crate::sql::output::SqlError;

/// The hints one statement carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// Commit the whole transaction when the statement succeeds.
    pub(crate) commit_on_success: bool,
    /// Roll the whole transaction back when the statement fails.
    pub(crate) rollback_on_fail: bool,
    /// Fail (7532) unless exactly this many rows changed.
    pub(crate) target_affect_row: Option<u64>,
}

impl Hints {
    /// Reads the hints out of `/*+ ... */` comments; other optimizer hints are ignored (as
    /// MySQL ignores hints it does not know). Returns the warnings to raise.
    pub(crate) fn parse(hints: &[OptimizerHint]) -> (Hints, Vec<String>) {
        let mut h = Hints::default();
        let mut warnings = Vec::new();
        for hint in hints {
            let text = hint.text.to_ascii_lowercase();
            let mut rest = text.as_str();
            while let Some(word) = next_word(&mut rest) {
                match word {
                    "commit_on_success" => h.commit_on_success = true,
                    "rollback_on_fail" => h.rollback_on_fail = true,
                    "target_affect_row" => {
                        let arg = rest
                            .trim_start()
                            .strip_prefix('(')
                            .and_then(|r| r.split_once(')'));
                        match arg {
                            Some((n, after)) => {
                                rest = after;
                                match n.trim().parse::<u64>() {
                                    Ok(n) => h.target_affect_row = Some(n),
                                    Err(_) => warnings.push(format!(
                                        "target_affect_row({}) ignored: not a row count",
                                        n.trim()
                                    )),
                                }
                            }
                            None => {
                                warnings.push("target_affect_row without a count ignored".into())
                            }
                        }
                    }
                    _ => {
                        // An unknown hint; skip a parenthesised argument list if any.
                        if let Some(r) = rest.trim_start().strip_prefix('(') {
                            rest = r.split_once(')').map_or("", |(_, a)| a);
                        }
                    }
                }
            }
        }
        (h, warnings)
    }

    /// 7532 when `target_affect_row` is not met by `affected`.
    ///
    /// # Errors
    /// As above.
    pub(crate) fn check(self, affected: u64) -> Result<(), SqlError> {
        match self.target_affect_row {
            Some(n) if n != affected => Err(SqlError::new(
                7532,
                "HY000",
                format!(
                    "Inventory conditional hints didn't match with result: target_affect_row({n}), {affected} rows affected"
                ),
            )),
            _ => Ok(()),
        }
    }
}

fn next_word<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let s = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    if end == 0 {
        *rest = "";
        return None;
    }
    *rest = &s[end..];
    Some(&s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::ast::OptimizerHintStyle;

    fn hint(text: &str) -> OptimizerHint {
        OptimizerHint {
            prefix: String::new(),
            text: text.into(),
            style: OptimizerHintStyle::MultiLine,
        }
    }

    #[test]
    fn reads_the_three_hints() {
        let (h, w) = Hints::parse(&[hint(
            " commit_on_success rollback_on_fail target_affect_row(1) ",
        )]);
        assert!(h.commit_on_success && h.rollback_on_fail);
        assert_eq!(h.target_affect_row, Some(1));
        assert!(w.is_empty());
        assert_eq!(h.check(0).unwrap_err().code, 7532);
        assert!(h.check(1).is_ok());
        let (h, w) = Hints::parse(&[hint("target_affect_row(-1) max_execution_time(5)")]);
        assert_eq!(h.target_affect_row, None);
        assert_eq!(w.len(), 1);
    }
}
