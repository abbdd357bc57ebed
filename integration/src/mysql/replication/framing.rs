//! [`PacketWriter`]: the dump's packets written straight to the socket, each event as one
//! packet `0x00` + event, streamed from its file without holding it in memory.
//!
//! A payload of 0xFF_FFFF bytes or more goes out as chunks of 0xFF_FFFF bytes, each with the
//! next sequence id, ended by a shorter chunk — an empty one when the length is an exact
//! multiple (<https://mariadb.com/kb/en/0-packet/>).

use std::io::{self, Read, Write};

/// The largest chunk a packet header can announce.
pub const MAX_CHUNK: usize = 0xFF_FFFF;

/// Writes packets with consecutive sequence ids.
///
/// Invariant: `seq` is the id of the next chunk written.
#[derive(Debug)]
pub struct PacketWriter<W> {
    out: W,
    seq: u8,
    /// The copy buffer, kept between packets (grown to [`COPY_BUFFER`] at most).
    buf: Vec<u8>,
}

/// The most a body is copied through at a time.
const COPY_BUFFER: usize = 64 * 1024;

impl<W: Write> PacketWriter<W> {
    /// A writer whose first packet carries sequence id `first_seq` (1 after the command).
    pub fn new(out: W, first_seq: u8) -> PacketWriter<W> {
        PacketWriter {
            out,
            seq: first_seq,
            buf: Vec::new(),
        }
    }

    /// Writes one packet whose payload is `head` followed by the next `body_len` bytes of
    /// `body`, splitting it into chunks as needed.
    ///
    /// # Errors
    /// I/O; [`io::ErrorKind::UnexpectedEof`] when `body` ends early.
    pub fn packet(&mut self, head: &[u8], body: &mut impl Read, body_len: u64) -> io::Result<()> {
        let total = head.len() as u64 + body_len;
        let mut head = head;
        let mut left = total;
        let want = usize::try_from(body_len).map_or(COPY_BUFFER, |n| n.min(COPY_BUFFER));
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        loop {
            let chunk = left.min(MAX_CHUNK as u64) as usize;
            let mut h = (chunk as u32).to_le_bytes();
            h[3] = self.seq;
            self.out.write_all(&h)?;
            self.seq = self.seq.wrapping_add(1);
            let mut need = chunk;
            let from_head = need.min(head.len());
            self.out.write_all(&head[..from_head])?;
            head = &head[from_head..];
            need -= from_head;
            while need > 0 {
                let n = need.min(self.buf.len());
                body.read_exact(&mut self.buf[..n])?;
                self.out.write_all(&self.buf[..n])?;
                need -= n;
            }
            left -= chunk as u64;
            if chunk < MAX_CHUNK {
                return Ok(());
            }
        }
    }

    /// Writes one packet holding `payload`.
    ///
    /// # Errors
    /// I/O.
    pub fn bytes(&mut self, payload: &[u8]) -> io::Result<()> {
        self.packet(payload, &mut io::empty(), 0)
    }

    /// Flushes what was written.
    ///
    /// # Errors
    /// I/O.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mysql::decode_packets;

    #[test]
    fn split_at_the_chunk_size() {
        let sizes = [
            0usize,
            1,
            MAX_CHUNK - 2,
            MAX_CHUNK - 1,
            MAX_CHUNK,
            MAX_CHUNK + 5,
            2 * MAX_CHUNK,
        ];
        for size in sizes {
            // Payload: 0x00 + body, as the dump sends an event.
            let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            let mut w = PacketWriter::new(Vec::new(), 1);
            w.packet(&[0], &mut body.as_slice(), size as u64).unwrap();
            w.bytes(b"next").unwrap();
            let wire = w.out;
            let chunks = (size + 1) / MAX_CHUNK + 1;
            assert_eq!(wire.len(), size + 1 + 4 * chunks + 8, "{size}");
            let (packets, rest) = decode_packets(&wire, 1, usize::MAX).unwrap();
            assert_eq!(rest, 0);
            assert_eq!(packets.len(), 2, "{size}");
            assert_eq!(packets[0][0], 0);
            assert_eq!(&packets[0][1..], body.as_slice(), "{size}");
            assert_eq!(packets[1], b"next");
            // The sequence id went on across the chunks.
            assert_eq!(wire[wire.len() - 5], (1 + chunks) as u8, "{size}");
        }
    }

    #[test]
    fn short_body_is_an_error() {
        let mut w = PacketWriter::new(Vec::new(), 0);
        let e = w.packet(&[0], &mut &b"abc"[..], 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
