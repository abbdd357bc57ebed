//! [`HotOp`]: what one hot-row update does to an integer value, and [`HotOutcome`]: what the
//! member gets back. The value's encoding lives here too.

use std::fmt;

/// One hot-row update of an integer value: add `delta`, provided the result stays within
/// `[min, max]` (each bound optional), as `UPDATE t SET c = c + delta WHERE id = ? AND
/// c + delta BETWEEN min AND max` with the bound turned into a refusal of this member alone.
///
/// The value is stored as decimal ASCII (`-12`, `0`, `4096`, see [`HotOp::encode`]), so
/// ordinary reads and `surgedb kv get` show it as text. A missing key is a row that does not
/// exist: the update affects no row and writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HotOp {
    /// Added to the current value.
    pub delta: i64,
    /// The new value may not be below this.
    pub min: Option<i64>,
    /// The new value may not be above this.
    pub max: Option<i64>,
}

impl HotOp {
    /// Adds `delta` with no bounds.
    pub const fn add(delta: i64) -> HotOp {
        HotOp {
            delta,
            min: None,
            max: None,
        }
    }

    /// The same with a lower bound on the new value (a stock count that may not go below 0).
    pub const fn at_least(mut self, min: i64) -> HotOp {
        self.min = Some(min);
        self
    }

    /// The same with an upper bound on the new value.
    pub const fn at_most(mut self, max: i64) -> HotOp {
        self.max = Some(max);
        self
    }

    /// The new value this operation gives `current`, or why it refuses.
    ///
    /// # Errors
    /// [`HotReject::Overflow`] when the sum does not fit an `i64`; [`HotReject::BelowMin`] /
    /// [`HotReject::AboveMax`] when the sum breaks a bound.
    pub fn apply_to(&self, current: i64) -> Result<i64, HotReject> {
        let next = current.checked_add(self.delta).ok_or(HotReject::Overflow {
            current,
            delta: self.delta,
        })?;
        if let Some(min) = self.min
            && next < min
        {
            return Err(HotReject::BelowMin { value: next, min });
        }
        if let Some(max) = self.max
            && next > max
        {
            return Err(HotReject::AboveMax { value: next, max });
        }
        Ok(next)
    }

    /// The stored form of `value`: decimal ASCII.
    pub fn encode(value: i64) -> Vec<u8> {
        value.to_string().into_bytes()
    }

    /// The integer stored in `bytes`, if they are decimal ASCII of an `i64` (an optional `-`,
    /// then digits; no spaces, no `+`).
    pub fn decode(bytes: &[u8]) -> Option<i64> {
        if bytes.first() == Some(&b'+') {
            return None;
        }
        std::str::from_utf8(bytes).ok()?.parse().ok()
    }
}

/// Why one member's [`HotOp`] or [`crate::RowUpdate`] was refused. Only that member fails; the rest of its group
/// commits.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HotReject {
    /// The new value would be below the operation's `min`.
    BelowMin {
        /// The value the operation would have written.
        value: i64,
        /// The bound.
        min: i64,
    },
    /// The new value would be above the operation's `max`.
    AboveMax {
        /// The value the operation would have written.
        value: i64,
        /// The bound.
        max: i64,
    },
    /// `current + delta` does not fit an `i64`.
    Overflow {
        /// The value before the operation.
        current: i64,
        /// The operation's delta.
        delta: i64,
    },
    /// The key holds a value that is not decimal ASCII of an `i64`.
    NotAnInteger {
        /// The first bytes of the stored value (at most 32).
        prefix: Vec<u8>,
    },
    /// A [`crate::RowUpdate`] refused the row (a SQL error such as an out-of-range value,
    /// or a binlog row event whose values do not fit its table).
    Refused {
        /// The MySQL error number to report (0: none).
        code: u16,
        /// The error's text.
        message: String,
    },
}

impl fmt::Display for HotReject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HotReject::BelowMin { value, min } => {
                write!(f, "new value {value} is below the lower bound {min}")
            }
            HotReject::AboveMax { value, max } => {
                write!(f, "new value {value} is above the upper bound {max}")
            }
            HotReject::Overflow { current, delta } => {
                write!(f, "{current} + {delta} overflows a 64-bit integer")
            }
            HotReject::NotAnInteger { prefix } => write!(
                f,
                "the stored value {:?} is not a decimal integer",
                String::from_utf8_lossy(prefix)
            ),
            HotReject::Refused { code: 0, message } => write!(f, "{message}"),
            HotReject::Refused { code, message } => write!(f, "error {code}: {message}"),
        }
    }
}

/// What a successful [`crate::TxnClient::hot_update`] did for this member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct HotOutcome {
    /// The member's own new value (the value after its own delta, with every earlier member
    /// of its group applied: what AliSQL's `SELECT ... FROM UPDATE` returns). `None` when the
    /// key did not exist (no row affected).
    pub value: Option<i64>,
    /// Rows the update affected: 1, or 0 for a missing key.
    pub affected_rows: u64,
    /// The commit timestamp of the transaction holding this member's write; `None` when the
    /// group wrote nothing (every kept member affected no row).
    pub commit_ts: Option<u64>,
    /// How many members' changes that one write held (1 when the member ran alone).
    pub group_writes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_checks_each_bound_and_overflow() {
        let cases = [
            (HotOp::add(5), 10, Ok(15)),
            (
                HotOp::add(-11).at_least(0),
                10,
                Err(HotReject::BelowMin { value: -1, min: 0 }),
            ),
            (HotOp::add(-10).at_least(0), 10, Ok(0)),
            (
                HotOp::add(1).at_most(10),
                10,
                Err(HotReject::AboveMax { value: 11, max: 10 }),
            ),
            (HotOp::add(0).at_least(0).at_most(10), 10, Ok(10)),
            (
                HotOp::add(1),
                i64::MAX,
                Err(HotReject::Overflow {
                    current: i64::MAX,
                    delta: 1,
                }),
            ),
        ];
        for (op, current, want) in cases {
            assert_eq!(op.apply_to(current), want, "{op:?} on {current}");
        }
    }

    #[test]
    fn encoding_round_trips_and_refuses_other_text() {
        for v in [0, 1, -1, i64::MAX, i64::MIN, 4096] {
            assert_eq!(HotOp::decode(&HotOp::encode(v)), Some(v));
        }
        assert_eq!(HotOp::encode(-12), b"-12".to_vec());
        for bad in [
            &b""[..],
            b"+1",
            b" 1",
            b"1 ",
            b"x",
            b"99999999999999999999",
            &[0xff],
        ] {
            assert_eq!(HotOp::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rejections_read_as_sentences() {
        let r = HotReject::BelowMin { value: -1, min: 0 };
        assert_eq!(r.to_string(), "new value -1 is below the lower bound 0");
        let r = HotReject::NotAnInteger {
            prefix: b"abc".to_vec(),
        };
        assert!(r.to_string().contains("\"abc\" is not a decimal integer"));
        let r = HotReject::Refused {
            code: 1690,
            message: "BIGINT UNSIGNED value is out of range".to_string(),
        };
        assert_eq!(
            r.to_string(),
            "error 1690: BIGINT UNSIGNED value is out of range"
        );
    }
}
