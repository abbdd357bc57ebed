//! Packet framing: `[payload length u24 LE][sequence id u8][payload]`, payloads of 16 MiB - 1
//! or more split into chunks (a chunk of exactly 0xFF_FFFF bytes says "more follows").
//!
//! `mysql_common`'s [`PacketCodec`] does the framing and checks the sequence ids; this file
//! drives it over a blocking socket. The sequence id restarts at 0 with every command
//! (<https://mariadb.com/kb/en/0-packet/>).

use std::io::{Read, Write};

use bytes::BytesMut;
use mysql_common::proto::codec::PacketCodec;
use mysql_common::proto::codec::error::PacketCodecError;

use super::error::PacketError;

/// Reads at most this much from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A connection's packet reader and writer.
///
/// Invariant: `out` holds whole encoded packets not yet written; [`PacketStream::flush`]
/// writes them all.
#[derive(Debug)]
pub(crate) struct PacketStream<S> {
    stream: S,
    codec: PacketCodec,
    /// The limit on incoming packets (the codec's own limit is raised while encoding).
    max_in: usize,
    inbuf: BytesMut,
    /// What one socket read lands in, allocated and zeroed once per connection: reading
    /// straight into `inbuf` zeroed 64 KiB per command (`resize`), and the allocator's
    /// churn around it took about a fifth of the server's CPU under a 256-thread sysbench
    /// of one-row statements (perf). Only the bytes read are copied on.
    scratch: Vec<u8>,
    out: BytesMut,
    /// The sequence id the next packet written must carry when the codec's does not know it:
    /// after a refused oversized packet, whose header the codec never consumed.
    reply_seq: Option<u8>,
}

impl<S: Read + Write> PacketStream<S> {
    /// A stream whose packets may hold at most `max_allowed_packet` bytes.
    pub(crate) fn new(stream: S, max_allowed_packet: usize) -> Self {
        PacketStream {
            stream,
            codec: PacketCodec::default(),
            max_in: max_allowed_packet.max(1),
            inbuf: BytesMut::new(),
            scratch: Vec::new(),
            out: BytesMut::new(),
            reply_seq: None,
        }
    }

    /// Changes the limit on incoming packets.
    pub(crate) fn set_max_packet(&mut self, max: usize) {
        self.max_in = max.max(1);
    }

    /// The limit on incoming packets (`max_allowed_packet` once the client is in).
    pub(crate) fn max_packet(&self) -> usize {
        self.max_in
    }

    /// The socket, taken back.
    pub(crate) fn into_inner(self) -> S {
        self.stream
    }

    /// The socket.
    pub(crate) fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The socket, to write to directly (the binlog dump frames its own packets). Flush
    /// first: queued packets would otherwise come after what is written here.
    pub(crate) fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Starts a new command: the next packet read must have sequence id 0.
    pub(crate) fn reset_seq(&mut self) {
        self.codec.reset_seq_id();
    }

    /// Reads one packet's payload. `Ok(None)`: the peer closed the connection between
    /// packets.
    ///
    /// # Errors
    /// [`PacketError::TooLarge`] as soon as a chunk header announces more than
    /// `max_allowed_packet`; [`PacketError::OutOfSync`], [`PacketError::Truncated`], I/O.
    pub(crate) fn read_packet(&mut self) -> Result<Option<Vec<u8>>, PacketError> {
        let mut payload = Vec::new();
        self.codec.max_allowed_packet = self.max_in;
        loop {
            match decode_one(&mut self.codec, &mut self.inbuf, &mut payload) {
                Ok(true) => return Ok(Some(payload)),
                Ok(false) => {}
                Err(e) => {
                    if let (PacketError::TooLarge { .. }, Some(&seq)) = (&e, self.inbuf.get(3)) {
                        // The refused chunk's header is still at the front of the buffer.
                        self.reply_seq = Some(seq.wrapping_add(1));
                    }
                    return Err(e);
                }
            }
            let old = self.inbuf.len();
            if self.scratch.len() < READ_CHUNK {
                self.scratch.resize(READ_CHUNK, 0);
            }
            let n = self.stream.read(&mut self.scratch)?;
            self.inbuf.extend_from_slice(&self.scratch[..n]);
            if n == 0 {
                return if old == 0 && payload.is_empty() {
                    Ok(None)
                } else {
                    Err(PacketError::Truncated {
                        buffered: old + payload.len(),
                    })
                };
            }
        }
    }

    /// Queues one packet (split into chunks if it is 16 MiB or longer).
    pub(crate) fn queue(&mut self, payload: &[u8]) {
        if let Some(seq) = self.reply_seq.take() {
            self.out.extend_from_slice(&encode_packets(&[payload], seq));
            return;
        }
        let mut src = payload;
        // Encoding into memory cannot fail: the codec's only encode error is for payloads
        // over its limit, and what the server sends is not limited by what it accepts.
        self.codec.max_allowed_packet = usize::MAX;
        let _ = self.codec.encode(&mut src, &mut self.out);
    }

    /// Queues one packet and writes everything queued.
    pub(crate) fn send(&mut self, payload: &[u8]) -> std::io::Result<()> {
        self.queue(payload);
        self.flush()
    }

    /// Writes everything queued.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out)?;
            self.out.clear();
        }
        self.stream.flush()
    }
}

/// One step of the codec: `true` when `payload` now holds a whole packet.
fn decode_one(
    codec: &mut PacketCodec,
    inbuf: &mut BytesMut,
    payload: &mut Vec<u8>,
) -> Result<bool, PacketError> {
    let max = codec.max_allowed_packet;
    codec.decode(inbuf, payload).map_err(|e| match e {
        PacketCodecError::PacketTooLarge => PacketError::TooLarge { max },
        PacketCodecError::PacketsOutOfSync => PacketError::OutOfSync,
        PacketCodecError::Io(e) => PacketError::Io(e),
        PacketCodecError::BadCompressedPacketHeader => {
            PacketError::malformed("compressed", "bad compressed packet header")
        }
    })
}

/// Splits `input`, a client's bytes for one command phase, into packet payloads, exactly as
/// a connection reads them (the first packet has sequence id `first_seq`). Bytes after the
/// last whole packet are returned apart.
///
/// # Errors
/// [`PacketError::TooLarge`], [`PacketError::OutOfSync`]: as a connection reading them
/// would fail.
pub fn decode_packets(
    input: &[u8],
    first_seq: u8,
    max_allowed_packet: usize,
) -> Result<(Vec<Vec<u8>>, usize), PacketError> {
    let mut codec = PacketCodec::default();
    codec.max_allowed_packet = max_allowed_packet.max(1);
    for _ in 0..first_seq {
        // Advance the expected sequence id by encoding empty packets into a scratch buffer.
        let mut scratch = BytesMut::new();
        let _ = codec.encode(&mut &[][..], &mut scratch);
    }
    let mut inbuf = BytesMut::from(input);
    let mut packets = Vec::new();
    loop {
        let mut payload = Vec::new();
        if decode_one(&mut codec, &mut inbuf, &mut payload)? {
            packets.push(payload);
        } else {
            return Ok((packets, inbuf.len() + payload.len()));
        }
    }
}

/// Frames `payloads` as consecutive packets starting at sequence id `first_seq` (what a
/// client sends for one command, or a server for one answer).
pub fn encode_packets(payloads: &[&[u8]], first_seq: u8) -> Vec<u8> {
    let mut codec = PacketCodec::default();
    codec.max_allowed_packet = usize::MAX;
    let mut scratch = BytesMut::new();
    for _ in 0..first_seq {
        let _ = codec.encode(&mut &[][..], &mut scratch);
    }
    let mut out = BytesMut::new();
    for p in payloads {
        let mut src = *p;
        let _ = codec.encode(&mut src, &mut out);
    }
    out.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_small_and_split() {
        let big = vec![7u8; 0xFF_FFFF + 10];
        let exact = vec![1u8; 0xFF_FFFF];
        let wire = encode_packets(&[b"abc", &[], &big, &exact], 0);
        let (packets, rest) = decode_packets(&wire, 0, 64 << 20).unwrap();
        assert_eq!(rest, 0);
        assert_eq!(packets.len(), 4);
        assert_eq!(packets[0], b"abc");
        assert!(packets[1].is_empty());
        assert_eq!(packets[2], big);
        assert_eq!(packets[3], exact);
    }

    #[test]
    fn too_large_is_reported_from_the_header() {
        // Only the header: the limit is checked before the payload arrives.
        let err = decode_packets(&[0x00, 0x10, 0x00, 0x00], 0, 1024).unwrap_err();
        assert!(matches!(err, PacketError::TooLarge { max: 1024 }), "{err}");
    }

    #[test]
    fn out_of_order_sequence_is_an_error() {
        let wire = encode_packets(&[b"x"], 3);
        let err = decode_packets(&wire, 0, 1024).unwrap_err();
        assert!(matches!(err, PacketError::OutOfSync), "{err}");
    }

    #[test]
    fn partial_packet_is_left_over() {
        let wire = encode_packets(&[b"hello"], 0);
        let (packets, rest) = decode_packets(&wire[..6], 0, 1024).unwrap();
        assert!(packets.is_empty());
        assert_eq!(rest, 6);
    }
}
