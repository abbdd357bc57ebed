//! A record cut into chunks (one key each) and put back together.
//!
//! # Layout
//!
//! ```text
//! chunk value := chunk_count:u32 (big-endian) part
//! ```
//!
//! Every chunk says how many the record has, so a reader knows when it holds them all and
//! refuses a record whose chunks disagree. The record is the concatenation of the parts in
//! `chunk_no` order.

use std::collections::BTreeMap;

use super::error::StreamDecodeError;
use super::record::{StreamGroup, decode_stream_record};

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

/// The chunks of one record as they are found, in any order.
#[derive(Debug, Default)]
pub(crate) struct ChunkAssembler {
    count: Option<u32>,
    parts: BTreeMap<u32, Vec<u8>>,
}

impl ChunkAssembler {
    /// Adds chunk `chunk_no` with its stored `value`.
    ///
    /// # Errors
    /// [`StreamDecodeError`] for a value too short to hold the count, a count that differs
    /// from another chunk's, or a chunk number past the count.
    pub(crate) fn add(&mut self, chunk_no: u32, value: Vec<u8>) -> Result<(), StreamDecodeError> {
        if value.len() < 4 {
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
        if chunk_no >= count {
            return Err(StreamDecodeError::new(
                "chunk",
                0,
                format!("chunk {chunk_no} of a record of {count} chunks"),
            ));
        }
        self.parts.insert(chunk_no, value[4..].to_vec());
        Ok(())
    }

    /// Whether every chunk is there.
    pub(crate) fn is_complete(&self) -> bool {
        self.count.is_some_and(|c| self.parts.len() == c as usize)
    }

    /// The record decoded.
    ///
    /// # Errors
    /// [`StreamDecodeError`] when chunks are missing or the record does not decode.
    pub(crate) fn finish(self) -> Result<Vec<StreamGroup>, StreamDecodeError> {
        if !self.is_complete() {
            return Err(StreamDecodeError::new(
                "chunk",
                0,
                format!("{} of {:?} chunks found", self.parts.len(), self.count),
            ));
        }
        let bytes: Vec<u8> = self.parts.into_values().flatten().collect();
        decode_stream_record(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{StreamGroupKind, encode_stream_record};

    #[test]
    fn records_reassemble_from_chunks_in_any_order() -> Result<(), StreamDecodeError> {
        let group = StreamGroup {
            kind: StreamGroupKind::Transactional,
            events: vec![
                surge_binlog::Event::new(
                    surge_binlog::EventBody::AnnotateRows(b"UPDATE t SET a = 2".to_vec()),
                    1,
                    1,
                )
                .encode(surge_binlog::ChecksumAlg::Off),
            ],
        };
        let record = encode_stream_record(&[group.clone(), group.clone()]);
        for size in [1, 3, 7, record.len(), record.len() + 10] {
            let chunks = split_chunks(&record, size);
            assert_eq!(chunks.len(), record.len().div_ceil(size));
            let mut a = ChunkAssembler::default();
            for (i, c) in chunks.iter().enumerate().rev() {
                assert!(!a.is_complete());
                a.add(i as u32, c.clone())?;
            }
            assert_eq!(a.finish()?, vec![group.clone(), group.clone()]);
        }
        Ok(())
    }

    #[test]
    fn inconsistent_chunks_are_refused() {
        let record = encode_stream_record(&[]);
        let chunks = split_chunks(&record, 4);
        let mut a = ChunkAssembler::default();
        assert!(a.add(0, vec![1]).is_err());
        assert!(a.add(9, chunks[0].clone()).is_err());
        let mut a = ChunkAssembler::default();
        assert!(a.add(0, chunks[0].clone()).is_ok());
        assert!(a.add(1, split_chunks(&record, 1)[1].clone()).is_err());
        let mut a = ChunkAssembler::default();
        assert!(a.add(0, chunks[0].clone()).is_ok());
        assert!(a.finish().is_err());
    }
}
