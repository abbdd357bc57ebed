//! [`StreamDecodeError`]: why bytes read back from the stream are not a stream record.

/// Stream bytes that do not decode: a record ([`crate::decode_stream_record`]), a chunk or a
/// stream key. Names what was being read and where; decoding never panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stream {what} at byte {offset}: {reason}")]
pub struct StreamDecodeError {
    /// What was being decoded (`"record header"`, `"group"`, `"event"`, `"chunk"`, ...).
    pub what: &'static str,
    /// Byte offset in the input where decoding failed.
    pub offset: usize,
    /// Why.
    pub reason: String,
}

impl StreamDecodeError {
    pub(crate) fn new(what: &'static str, offset: usize, reason: impl Into<String>) -> Self {
        StreamDecodeError {
            what,
            offset,
            reason: reason.into(),
        }
    }
}
