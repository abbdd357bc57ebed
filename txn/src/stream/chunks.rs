//! A record cut into chunks (one key each) and put back together.
//!
//! # Layout
//!
//! ```text
//! chunk value    := chunk_count:u32 part                  (chunk_count >= 1)
//! external value := 0:u32 payload_chunks:u32 payload_len:u64
//! ```
//!
//! (all big-endian). Every chunk says how many the record has, so a reader knows when it
//! holds them all and refuses a record whose chunks disagree; the record is the
//! concatenation of the parts in `chunk_no` order.
//!
//! A record larger than [`crate::StreamOptions::inline_max_bytes`] is stored *external*:
//! its chunks (the same chunk values) go under the payload keys of its transaction
//! (`keys.rs`), prewritten with the transaction's other keys, and its record key holds one
//! external value saying how many payload chunks and bytes there are. Only that small
//! value is prewritten last, so the skew bound does not have to cover writing a large
//! record.

use std::collections::BTreeMap;

use super::error::StreamDecodeError;

/// Bytes of the chunk count that opens every chunk value.
const COUNT_LEN: usize = 4;

/// `record` cut into values of at most `chunk_bytes` bytes of the record each (at least
/// one chunk; `chunk_bytes` 0 counts as 1).
pub(crate) fn split_chunks(record: &[u8], chunk_bytes: usize) -> Vec<Vec<u8>> {
    let size = chunk_bytes.max(1);
    let parts: Vec<&[u8]> = if record.is_empty() {
        vec![&[][..]]
    } else {
        record.chunks(size).collect()
    };
    let count = parts.len() as u32;
    parts
        .into_iter()
        .map(|p| {
            let mut v = Vec::with_capacity(4 + p.len());
            v.extend_from_slice(&count.to_be_bytes());
            v.extend_from_slice(p);
            v
        })
        .collect()
}

/// The value of a record key whose record is stored external in `chunks` payload chunks
/// of `bytes` bytes in all.
pub(crate) fn external_value(chunks: u32, bytes: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(16);
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(&chunks.to_be_bytes());
    v.extend_from_slice(&bytes.to_be_bytes());
    v
}

/// How many payload chunks the record behind a record key's stored `value` has, when that
/// value is an external one (`None` for an inline chunk or a value of another shape).
pub(crate) fn external_chunks(value: &[u8]) -> Option<u32> {
    let count = value.get(..COUNT_LEN)?;
    (value.len() == 16 && count == [0; COUNT_LEN])
        .then(|| u32::from_be_bytes([value[4], value[5], value[6], value[7]]))
}

/// What a complete set of chunks holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Assembled {
    /// The encoded record.
    Record(Vec<u8>),
    /// The record is external: this many payload chunks of this many bytes in all.
    External {
        /// Payload chunks.
        chunks: u32,
        /// Bytes of the encoded record.
        bytes: u64,
    },
}

/// The chunks of one record as they are found, in any order.
#[derive(Debug, Default)]
pub(crate) struct ChunkAssembler {
    count: Option<u32>,
    /// The chunk values as stored, count prefix included (every one is at least
    /// [`COUNT_LEN`] bytes long: `add` checks it): kept whole rather than copied without the
    /// prefix, so a chunk's bytes are copied once, by `finish`, and only while the
    /// record is built.
    parts: BTreeMap<u32, Vec<u8>>,
    external: Option<(u32, u64)>,
}

impl ChunkAssembler {
    /// Adds chunk `chunk_no` with its stored `value`.
    ///
    /// # Errors
    /// [`StreamDecodeError`] for a value too short to hold the count, a count that differs
    /// from another chunk's, a chunk number past the count, or an external value that is
    /// not alone at chunk 0 or has the wrong length.
    pub(crate) fn add(&mut self, chunk_no: u32, value: Vec<u8>) -> Result<(), StreamDecodeError> {
        if value.len() < COUNT_LEN {
            return Err(StreamDecodeError::new(
                "chunk",
                0,
                format!("chunk {chunk_no}: {} bytes, no chunk count", value.len()),
            ));
        }
        let count = u32::from_be_bytes([value[0], value[1], value[2], value[3]]);
        if *self.count.get_or_insert(count) != count {
            return Err(StreamDecodeError::new(
                "chunk",
                0,
                format!(
                    "chunk {chunk_no} says {count} chunks, another said {:?}",
                    self.count
                ),
            ));
        }
        if count == 0 {
            // An external record's one value.
            if chunk_no != 0 || value.len() != 16 {
                return Err(StreamDecodeError::new(
                    "chunk",
                    4,
                    format!(
                        "external value at chunk {chunk_no} of {} bytes (wants chunk 0, 16 bytes)",
                        value.len()
                    ),
                ));
            }
            let chunks = u32::from_be_bytes([value[4], value[5], value[6], value[7]]);
            let mut b = [0u8; 8];
            b.copy_from_slice(&value[8..16]);
            self.external = Some((chunks, u64::from_be_bytes(b)));
            return Ok(());
        }
        if chunk_no >= count {
            return Err(StreamDecodeError::new(
                "chunk",
                0,
                format!("chunk {chunk_no} of a record of {count} chunks"),
            ));
        }
        // Moved in whole: the prefix is skipped when the record is built.
        self.parts.insert(chunk_no, value);
        Ok(())
    }

    /// Whether every chunk is there.
    pub(crate) fn is_complete(&self) -> bool {
        match self.count {
            Some(0) => self.external.is_some(),
            Some(c) => self.parts.len() == c as usize,
            None => false,
        }
    }

    /// What the chunks hold.
    ///
    /// # Errors
    /// [`StreamDecodeError`] when chunks are missing.
    pub(crate) fn finish(self) -> Result<Assembled, StreamDecodeError> {
        if !self.is_complete() {
            return Err(StreamDecodeError::new(
                "chunk",
                0,
                format!("{} of {:?} chunks found", self.parts.len(), self.count),
            ));
        }
        if let Some((chunks, bytes)) = self.external {
            return Ok(Assembled::External { chunks, bytes });
        }
        Ok(Assembled::Record(concat_parts(self.parts)))
    }
}

/// The record: the parts of `parts` (chunk values, each at least [`COUNT_LEN`] bytes) after
/// their count prefix, in chunk order. A one-chunk record reuses its value's buffer; a
/// larger one is copied into one allocation of exactly its length, each chunk freed as soon
/// as it is copied, so building a record holds at most its size once more, not the
/// doubling growth of collecting byte by byte.
fn concat_parts(parts: BTreeMap<u32, Vec<u8>>) -> Vec<u8> {
    let total: usize = parts
        .values()
        .map(|p| p.len().saturating_sub(COUNT_LEN))
        .sum();
    let mut parts = parts.into_values();
    if parts.len() == 1
        && let Some(mut only) = parts.next()
    {
        only.drain(..COUNT_LEN.min(only.len()));
        return only;
    }
    let mut out = Vec::with_capacity(total);
    for part in parts {
        out.extend_from_slice(part.get(COUNT_LEN..).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_reassemble_from_chunks_in_any_order() -> Result<(), StreamDecodeError> {
        let record: Vec<u8> = (0..100u8).collect();
        for size in [1, 3, 7, record.len(), record.len() + 10] {
            let chunks = split_chunks(&record, size);
            assert_eq!(chunks.len(), record.len().div_ceil(size));
            let mut a = ChunkAssembler::default();
            for (i, c) in chunks.iter().enumerate().rev() {
                assert!(!a.is_complete());
                a.add(i as u32, c.clone())?;
            }
            assert_eq!(a.finish()?, Assembled::Record(record.clone()));
        }
        let mut a = ChunkAssembler::default();
        a.add(0, external_value(7, 12345))?;
        assert_eq!(
            a.finish()?,
            Assembled::External {
                chunks: 7,
                bytes: 12345
            }
        );
        Ok(())
    }

    #[test]
    fn only_an_external_value_names_payload_chunks() {
        assert_eq!(external_chunks(&external_value(7, 12345)), Some(7));
        for inline in split_chunks(&[0u8; 12], 4) {
            assert_eq!(external_chunks(&inline), None);
        }
        // Sixteen bytes of an inline record whose count happens to be 1.
        assert_eq!(external_chunks(&split_chunks(&[0u8; 12], 12)[0]), None);
        assert_eq!(external_chunks(&[0, 0]), None);
    }

    /// A record of many chunks is built in one allocation of exactly its length (collecting
    /// the parts byte by byte grew one by doubling, to twice a 66 MB record at worst).
    #[test]
    fn a_record_is_built_in_one_exact_allocation() -> Result<(), StreamDecodeError> {
        let record: Vec<u8> = (0..(3 << 20) + 17).map(|i| (i % 251) as u8).collect();
        let mut a = ChunkAssembler::default();
        for (i, c) in split_chunks(&record, 1 << 20).into_iter().enumerate() {
            a.add(i as u32, c)?;
        }
        match a.finish()? {
            Assembled::Record(got) => {
                assert_eq!(got.capacity(), record.len());
                assert_eq!(got, record);
            }
            other => panic!("{other:?}"),
        }
        // One chunk: its own buffer, the count dropped.
        let mut a = ChunkAssembler::default();
        a.add(0, split_chunks(b"abc", 10).remove(0))?;
        assert_eq!(a.finish()?, Assembled::Record(b"abc".to_vec()));
        Ok(())
    }

    #[test]
    fn inconsistent_chunks_are_refused() {
        let record = b"abcdefgh".to_vec();
        let chunks = split_chunks(&record, 4);
        let mut a = ChunkAssembler::default();
        assert!(a.add(0, vec![1]).is_err());
        assert!(a.add(9, chunks[0].clone()).is_err());
        let mut a = ChunkAssembler::default();
        assert!(a.add(0, chunks[0].clone()).is_ok());
        assert!(a.add(1, split_chunks(&record, 1)[1].clone()).is_err());
        assert!(a.add(1, external_value(1, 1)).is_err());
        let mut a = ChunkAssembler::default();
        assert!(a.add(0, chunks[0].clone()).is_ok());
        assert!(a.finish().is_err());
        let mut a = ChunkAssembler::default();
        assert!(a.add(1, external_value(1, 1)).is_err());
        assert!(a.add(0, external_value(1, 1)[..12].to_vec()).is_err());
    }
}
