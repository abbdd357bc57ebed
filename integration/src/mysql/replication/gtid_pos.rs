//! [`GtidPos`]: a GTID position, one `domain-server-seq` per domain, as a replica sends it in
//! `SET @slave_connect_state='0-1-42,2-7-9'` and as `@@gtid_binlog_pos` prints it
//! (<https://mariadb.com/kb/en/gtid/#gtid_slave_pos>).
//!
//! Invariant: at most one GTID per domain (MariaDB refuses a position naming a domain twice).

use std::collections::BTreeMap;
use std::fmt;

use surge_binlog::Gtid;

/// Why a GTID position did not parse: the text, the byte offset and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad GTID position {input:?} at byte {at}: {what}")]
pub struct GtidPosError {
    /// The whole input.
    pub input: String,
    /// Byte offset of the problem in `input`.
    pub at: usize,
    /// What was expected or wrong.
    pub what: String,
}

/// A GTID position: for each domain, the last GTID applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GtidPos {
    by_domain: BTreeMap<u32, Gtid>,
}

impl GtidPos {
    /// The empty position (a replica that has applied nothing).
    pub fn new() -> GtidPos {
        GtidPos::default()
    }

    /// Parses `d-s-n[,d-s-n]...`; spaces around entries are allowed, an empty or
    /// all-blank string is the empty position.
    ///
    /// # Errors
    /// [`GtidPosError`] naming the offset of a missing or out-of-range number, a missing
    /// `-`, trailing text, or a domain given twice.
    pub fn parse(input: &str) -> Result<GtidPos, GtidPosError> {
        let mut pos = GtidPos::new();
        if input.trim().is_empty() {
            return Ok(pos);
        }
        let err = |at: usize, what: String| GtidPosError {
            input: input.to_owned(),
            at,
            what,
        };
        let mut start = 0;
        for entry in input.split(',') {
            let lead = entry.len() - entry.trim_start().len();
            let at = start + lead;
            let gtid = parse_one(entry.trim()).map_err(|(off, what)| err(at + off, what))?;
            if pos.by_domain.insert(gtid.domain_id, gtid).is_some() {
                return Err(err(
                    at,
                    format!("domain {} is given more than once", gtid.domain_id),
                ));
            }
            start += entry.len() + 1;
        }
        Ok(pos)
    }

    /// The GTID of `domain`, if the position has one.
    pub fn get(&self, domain: u32) -> Option<Gtid> {
        self.by_domain.get(&domain).copied()
    }

    /// Sets `gtid` as its domain's entry.
    pub fn set(&mut self, gtid: Gtid) {
        self.by_domain.insert(gtid.domain_id, gtid);
    }

    /// Removes `domain`'s entry.
    pub fn remove(&mut self, domain: u32) -> Option<Gtid> {
        self.by_domain.remove(&domain)
    }

    /// The GTIDs, by domain.
    pub fn iter(&self) -> impl Iterator<Item = Gtid> + '_ {
        self.by_domain.values().copied()
    }

    /// Whether it names no domain.
    pub fn is_empty(&self) -> bool {
        self.by_domain.is_empty()
    }
}

impl fmt::Display for GtidPos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.by_domain.values().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}-{}-{}", g.domain_id, g.server_id, g.seq_no)?;
        }
        Ok(())
    }
}

/// One `d-s-n`; errors carry an offset within `s`.
fn parse_one(s: &str) -> Result<Gtid, (usize, String)> {
    let mut parts = s.splitn(3, '-');
    let mut off = 0;
    let mut next = |name: &str| -> Result<(usize, &str), (usize, String)> {
        match parts.next() {
            Some(p) => {
                let at = off;
                off += p.len() + 1;
                Ok((at, p))
            }
            None => Err((
                off.saturating_sub(1).min(s.len()),
                format!("missing '-' before the {name}"),
            )),
        }
    };
    let (d_at, d) = next("domain id")?;
    let (s_at, sv) = next("server id")?;
    let (n_at, n) = next("sequence number")?;
    Ok(Gtid {
        domain_id: number(d, d_at, "domain id")?,
        server_id: number(sv, s_at, "server id")?,
        seq_no: number(n, n_at, "sequence number")?,
    })
}

/// A decimal number that fits `T`.
fn number<T: std::str::FromStr>(s: &str, at: usize, name: &str) -> Result<T, (usize, String)> {
    if s.is_empty() {
        return Err((at, format!("missing {name}")));
    }
    if let Some(bad) = s.bytes().position(|b| !b.is_ascii_digit()) {
        return Err((at + bad, format!("{name} {s:?} is not a decimal number")));
    }
    s.parse()
        .map_err(|_| (at, format!("{name} {s} is out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(d: u32, s: u32, n: u64) -> Gtid {
        Gtid {
            domain_id: d,
            server_id: s,
            seq_no: n,
        }
    }

    #[test]
    fn parses_and_prints() {
        let cases: &[(&str, &[Gtid], &str)] = &[
            ("", &[], ""),
            ("  ", &[], ""),
            ("0-1-5", &[g(0, 1, 5)], "0-1-5"),
            ("2-7-9, 0-1-42", &[g(0, 1, 42), g(2, 7, 9)], "0-1-42,2-7-9"),
            (
                "4294967295-4294967295-18446744073709551615",
                &[g(u32::MAX, u32::MAX, u64::MAX)],
                "4294967295-4294967295-18446744073709551615",
            ),
        ];
        for (input, want, printed) in cases {
            let p = GtidPos::parse(input).unwrap();
            assert_eq!(p.iter().collect::<Vec<_>>(), *want, "{input}");
            assert_eq!(p.to_string(), *printed);
            assert_eq!(GtidPos::parse(&p.to_string()).unwrap(), p);
        }
    }

    #[test]
    fn bad_input_names_where() {
        let cases: &[(&str, usize, &str)] = &[
            ("0-1", 3, "missing '-' before the sequence number"),
            ("0-1-", 4, "missing sequence number"),
            ("x-1-2", 0, "not a decimal number"),
            ("0-1-2,0-3-4", 6, "domain 0 is given more than once"),
            ("0-1-2,", 6, "missing '-'"),
            ("0-1-2-3", 5, "not a decimal number"),
            ("0-4294967296-1", 2, "out of range"),
            ("0-1-+2", 4, "not a decimal number"),
        ];
        for (input, at, what) in cases {
            let e = GtidPos::parse(input).unwrap_err();
            assert_eq!(e.at, *at, "{input}: {e}");
            assert!(e.what.contains(what), "{input}: {e}");
            assert!(e.to_string().contains(input), "{e}");
        }
    }
}
