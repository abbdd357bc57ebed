//! Length-prefixed frames: `[len u32 LE][body]`, at most [`MAX_FRAME`] bytes of body.

use std::io::{self, Read, Write};

/// Largest frame body accepted or sent: 64 MiB.
pub const MAX_FRAME: usize = 64 << 20;

/// Why a frame could not be read or written.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection (possibly in the middle of a frame).
    #[error("connection closed")]
    Closed,
    /// The length prefix (or a body to send) exceeds [`MAX_FRAME`]; on reading, framing is
    /// lost and the connection must be closed.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The length claimed or asked for.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A read or write failed (a timeout shows as `WouldBlock` or `TimedOut`).
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// Whether the error is a read or write timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, FrameError::Io(e)
            if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

/// Reads one frame body into `buf` (replacing its content).
///
/// Memory grows with the bytes that actually arrive, never with what the length prefix
/// claims: a peer announcing 60 MiB and sending nothing costs nothing.
///
/// # Errors
/// [`FrameError::Closed`] at end of stream, [`FrameError::TooLarge`] for a length over the
/// limit, [`FrameError::Io`] otherwise.
pub fn read_frame(r: &mut impl Read, buf: &mut Vec<u8>) -> Result<(), FrameError> {
    let mut len = [0u8; 4];
    if let Err(e) = r.read_exact(&mut len) {
        return Err(closed_or_io(e));
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len: n,
            max: MAX_FRAME,
        });
    }
    buf.clear();
    if buf.capacity() > (1 << 20) && n < buf.capacity() / 4 {
        // Do not keep the buffer of one large frame for the connection's lifetime.
        buf.shrink_to(n.max(64 << 10));
    }
    match r.by_ref().take(n as u64).read_to_end(buf) {
        Ok(got) if got == n => Ok(()),
        Ok(_) => Err(FrameError::Closed),
        Err(e) => Err(closed_or_io(e)),
    }
}

/// Writes `body` as one frame and flushes.
///
/// # Errors
/// [`FrameError::TooLarge`] (nothing written) if `body` exceeds [`MAX_FRAME`];
/// [`FrameError::Io`] if the write fails.
pub fn write_frame(w: &mut impl Write, body: &[u8]) -> Result<(), FrameError> {
    if body.len() > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len: body.len(),
            max: MAX_FRAME,
        });
    }
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLarge {
        len: body.len(),
        max: MAX_FRAME,
    })?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(body);
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

fn closed_or_io(e: io::Error) -> FrameError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => FrameError::Closed,
        _ => FrameError::Io(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"hello").unwrap();
        write_frame(&mut wire, b"").unwrap();
        let mut r = wire.as_slice();
        let mut buf = Vec::new();
        read_frame(&mut r, &mut buf).unwrap();
        assert_eq!(buf, b"hello");
        read_frame(&mut r, &mut buf).unwrap();
        assert!(buf.is_empty());
        assert!(matches!(
            read_frame(&mut r, &mut buf),
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn a_huge_length_prefix_is_refused_and_allocates_only_what_arrives() {
        let mut input = ((MAX_FRAME - 1) as u32).to_le_bytes().to_vec();
        input.extend_from_slice(b"a few bytes");
        let mut buf = Vec::new();
        assert!(matches!(
            read_frame(&mut input.as_slice(), &mut buf),
            Err(FrameError::Closed)
        ));
        assert!(buf.capacity() < 1 << 20, "capacity {}", buf.capacity());
        let over = ((MAX_FRAME + 1) as u32).to_le_bytes();
        assert!(matches!(
            read_frame(&mut over.as_slice(), &mut buf),
            Err(FrameError::TooLarge { len, .. }) if len == MAX_FRAME + 1
        ));
    }

    #[test]
    fn an_oversized_body_is_not_written() {
        let mut wire = Vec::new();
        let big = vec![0u8; MAX_FRAME + 1];
        assert!(matches!(
            write_frame(&mut wire, &big),
            Err(FrameError::TooLarge { .. })
        ));
        assert!(wire.is_empty());
    }
}
