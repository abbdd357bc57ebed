//! [`scan_writes`]: the committed puts of a key range within a window of commit timestamps
//! (the stream reader's scan of stream records, `client/stream_reader.rs`).
//!
//! Unlike a snapshot [`scan`](crate::actions::scan), it returns every committed version in
//! the window, not the one visible at a timestamp, and ignores locks: whoever calls it
//! knows from a lock scan (the stream watermark) that nothing in the window is still
//! locked.

use serde::{Deserialize, Serialize};

use crate::mvcc::{MvccError, MvccReader, Write, WriteType, WriteWalk};

/// One committed put found by [`scan_writes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedPut {
    /// The user key.
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// The commit timestamp of the put.
    pub commit_ts: u64,
    /// The start timestamp of the transaction that wrote it.
    pub start_ts: u64,
    /// The value written.
    #[serde(with = "serde_bytes")]
    pub value: Vec<u8>,
}

/// What [`scan_writes`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScannedWrites {
    /// The puts, in key order (a key's versions newest first).
    pub puts: Vec<CommittedPut>,
    /// Where to continue when the limit cut the scan short (`None`: the range is done).
    #[serde(with = "serde_bytes")]
    pub resume_key: Option<Vec<u8>>,
}

/// Every committed `Put` on keys in `[start, end)` (no end: to the last key) whose
/// `commit_ts` is in `(after_commit_ts, upto_commit_ts]`, in key order, a key's versions
/// newest first. Deletes, lock records and rollbacks are skipped; locks are not looked at.
///
/// `limit` (`0`: no limit) bounds the puts returned and `limit_bytes` (`0`: no limit) the
/// bytes of their values, cut only between keys: once at least `limit` puts or
/// `limit_bytes` bytes are found, the scan stops before the next key and returns it as
/// `resume_key` (a key's puts are never split between two answers, so an answer may pass
/// the limits by one key's puts).
///
/// # Errors
/// [`MvccError::Corrupt`] for a damaged key, record or missing long value.
pub fn scan_writes(
    reader: &MvccReader<'_>,
    start: &[u8],
    end: Option<&[u8]>,
    after_commit_ts: u64,
    upto_commit_ts: u64,
    limit: usize,
    limit_bytes: usize,
) -> Result<ScannedWrites, MvccError> {
    let mut out = ScannedWrites {
        puts: Vec::new(),
        resume_key: None,
    };
    if upto_commit_ts <= after_commit_ts {
        return Ok(out);
    }
    let mut bytes = 0usize;
    out.resume_key =
        reader.walk_writes(start, end, |step| match step {
            WriteWalk::NextKey => Ok(!((limit > 0 && out.puts.len() >= limit)
                || (limit_bytes > 0 && bytes >= limit_bytes))),
            WriteWalk::Record {
                key,
                commit_ts,
                value,
            } => {
                if commit_ts <= after_commit_ts || commit_ts > upto_commit_ts {
                    return Ok(true);
                }
                let write = Write::from_bytes(key, value)?;
                if write.write_type != WriteType::Put {
                    return Ok(true);
                }
                let start_ts = write.start_ts;
                let value = reader.put_value(key, write)?;
                bytes = bytes.saturating_add(value.len());
                out.puts.push(CommittedPut {
                    key: key.to_vec(),
                    commit_ts,
                    start_ts,
                    value,
                });
                Ok(true)
            }
        })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::{Cf, Engine, FjallEngine, FjallOptions, MemEngine, Modify, WriteBatch};
    use crate::engine::{EngineIdentity, encode_key_with_ts};

    /// A committed record of `key` at `commit_ts` by `start_ts`: a short value inline, a
    /// long one in the default column family.
    fn committed(
        key: &[u8],
        start_ts: u64,
        commit_ts: u64,
        kind: WriteType,
        value: &[u8],
    ) -> Vec<Modify> {
        let mut out = Vec::new();
        let short = value.len() <= crate::SHORT_VALUE_MAX_LEN;
        if kind == WriteType::Put && !short {
            out.push(Modify::Put {
                cf: Cf::Default,
                key: encode_key_with_ts(key, start_ts),
                value: value.to_vec(),
            });
        }
        let write = match kind {
            WriteType::Rollback => Write::rollback(start_ts, false),
            WriteType::Put if short => Write::new(kind, start_ts, Some(value.to_vec())),
            _ => Write::new(kind, start_ts, None),
        };
        out.push(Modify::Put {
            cf: Cf::Write,
            key: encode_key_with_ts(key, commit_ts),
            value: write.to_bytes(),
        });
        out
    }

    fn fill(engine: &dyn Engine) {
        let long = vec![7u8; 1000];
        let mut modifies = Vec::new();
        modifies.extend(committed(b"a", 10, 11, WriteType::Put, b"a11"));
        modifies.extend(committed(b"a", 20, 25, WriteType::Put, &long));
        modifies.extend(committed(b"a", 30, 31, WriteType::Delete, b""));
        modifies.extend(committed(b"b", 12, 13, WriteType::Lock, b""));
        modifies.extend(committed(b"b", 14, 14, WriteType::Rollback, b""));
        modifies.extend(committed(b"c", 15, 16, WriteType::Put, b"c16"));
        modifies.extend(committed(b"d", 40, 41, WriteType::Put, b"d41"));
        engine
            .write(&WriteBatch {
                modifies,
                applied_index: 1,
            })
            .expect("write");
    }

    fn summary(w: &ScannedWrites) -> Vec<(Vec<u8>, u64, u64, usize)> {
        w.puts
            .iter()
            .map(|p| (p.key.clone(), p.commit_ts, p.start_ts, p.value.len()))
            .collect()
    }

    fn check(engine: &dyn Engine) -> Result<(), MvccError> {
        fill(engine);
        let snap = engine.snapshot();
        let reader = MvccReader::new(&*snap, None);
        let k = |s: &[u8]| s.to_vec();
        // Table: (start, end, after, upto, limit, limit_bytes) -> puts, resume key.
        type Case<'a> = (&'a [u8], Option<&'a [u8]>, u64, u64, usize, usize);
        type Want = Vec<(Vec<u8>, u64, u64, usize)>;
        let cases: Vec<(Case<'_>, Want, Option<Vec<u8>>)> = vec![
            // Every put of every key, newest first per key; deletes, locks, rollbacks out.
            (
                (b"", None, 0, 100, 0, 0),
                vec![
                    (k(b"a"), 25, 20, 1000),
                    (k(b"a"), 11, 10, 3),
                    (k(b"c"), 16, 15, 3),
                    (k(b"d"), 41, 40, 3),
                ],
                None,
            ),
            // The window is (after, upto]: 11 excluded, 25 included.
            (
                (b"", None, 11, 25, 0, 0),
                vec![(k(b"a"), 25, 20, 1000), (k(b"c"), 16, 15, 3)],
                None,
            ),
            // The range is [start, end).
            (
                (b"b", Some(b"d"), 0, 100, 0, 0),
                vec![(k(b"c"), 16, 15, 3)],
                None,
            ),
            // The limit cuts between keys: both of a's puts, then resume at the next key.
            (
                (b"", None, 0, 100, 1, 0),
                vec![(k(b"a"), 25, 20, 1000), (k(b"a"), 11, 10, 3)],
                Some(k(b"b")),
            ),
            (
                (b"b", None, 0, 100, 1, 0),
                vec![(k(b"c"), 16, 15, 3)],
                Some(k(b"d")),
            ),
            // The byte limit too.
            (
                (b"", None, 0, 100, 0, 500),
                vec![(k(b"a"), 25, 20, 1000), (k(b"a"), 11, 10, 3)],
                Some(k(b"b")),
            ),
            // Empty windows and ranges.
            ((b"", None, 50, 50, 0, 0), vec![], None),
            ((b"c", Some(b"c"), 0, 100, 0, 0), vec![], None),
        ];
        for ((start, end, after, upto, limit, bytes), want, resume) in cases {
            let got = scan_writes(&reader, start, end, after, upto, limit, bytes)?;
            assert_eq!(
                summary(&got),
                want,
                "{start:?}..{end:?} ({after}, {upto}] limit {limit}/{bytes}"
            );
            assert_eq!(got.resume_key, resume, "{start:?} limit {limit}/{bytes}");
        }
        // Values come back whole.
        let got = scan_writes(&reader, b"c", None, 0, 100, 0, 0)?;
        assert_eq!(got.puts[0].value, b"c16");
        Ok(())
    }

    #[test]
    fn scan_writes_on_the_memory_engine() -> Result<(), MvccError> {
        check(&MemEngine::new())
    }

    #[test]
    fn scan_writes_on_the_disk_engine() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let options = FjallOptions::default()
            .with_cache_bytes(8 << 20)
            .with_memtable_bytes(1 << 20)
            .with_worker_threads(1);
        let engine: Arc<FjallEngine> =
            FjallEngine::open(dir.path(), &EngineIdentity::new("c1", 1), options)?;
        let region = engine.region(1, b"", b"")?;
        check(&*region)?;
        Ok(())
    }

    #[test]
    fn a_damaged_write_record_is_an_error() {
        let engine = MemEngine::new();
        engine
            .write(&WriteBatch {
                modifies: vec![Modify::Put {
                    cf: Cf::Write,
                    key: encode_key_with_ts(b"k", 5),
                    value: vec![0xff; 3],
                }],
                applied_index: 1,
            })
            .expect("write");
        let snap = engine.snapshot();
        let reader = MvccReader::new(&*snap, None);
        assert!(matches!(
            scan_writes(&reader, b"", None, 0, 10, 0, 0),
            Err(MvccError::Corrupt { .. })
        ));
    }
}
