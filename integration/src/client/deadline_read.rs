//! [`DeadlineRead`]: one deadline for a whole answer read from a node's socket.
//!
//! A socket read timeout (`SO_RCVTIMEO`) bounds each `read` call, not the answer: a node
//! that sends a byte every few seconds (a stalled process, a half-dead link) would keep its
//! caller waiting for as long as it trickles. Before each read that must reach the socket,
//! this reader sets the socket's timeout to what is left of the deadline, so the answer as
//! a whole takes at most its budget and then fails as a timeout.

use std::io::{self, BufReader, Read};
use std::net::TcpStream;
use std::time::Instant;

/// A reader over a buffered socket that fails with [`io::ErrorKind::TimedOut`] once
/// `deadline` has passed (see the module docs).
#[derive(Debug)]
pub(crate) struct DeadlineRead<'a> {
    reader: &'a mut BufReader<TcpStream>,
    deadline: Instant,
}

impl<'a> DeadlineRead<'a> {
    /// Reads `reader` until `deadline`.
    pub(crate) fn new(reader: &'a mut BufReader<TcpStream>, deadline: Instant) -> Self {
        DeadlineRead { reader, deadline }
    }

    /// Sets the socket's timeout to what is left of the deadline (an error once it passed).
    fn arm(&self) -> io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the answer did not arrive within its deadline",
            ));
        }
        self.reader.get_ref().set_read_timeout(Some(left))
    }
}

impl Read for DeadlineRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Bytes already buffered cost no wait; only a read that reaches the socket is armed.
        if self.reader.buffer().is_empty() {
            self.arm()?;
        }
        self.reader.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::time::Duration;

    use super::*;

    /// A connected pair: the reading side buffered, the writing side raw.
    fn pair() -> io::Result<(BufReader<TcpStream>, TcpStream)> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let client = TcpStream::connect(listener.local_addr()?)?;
        let (server, _) = listener.accept()?;
        Ok((BufReader::new(client), server))
    }

    #[test]
    fn a_trickling_peer_cannot_outlast_the_deadline() -> io::Result<()> {
        let (mut reader, mut server) = pair()?;
        let writer = std::thread::spawn(move || {
            // One byte every 100 ms for 3 s: each read alone is well within 300 ms.
            for _ in 0..30 {
                if server.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let start = Instant::now();
        let mut buf = [0u8; 64];
        let mut r = DeadlineRead::new(&mut reader, start + Duration::from_millis(500));
        let err = r
            .read_exact(&mut buf)
            .expect_err("64 bytes never arrive in time");
        let took = start.elapsed();
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
            "{err}"
        );
        assert!(took < Duration::from_millis(1500), "took {took:?}");
        drop(reader);
        let _ = writer.join();
        Ok(())
    }

    #[test]
    fn an_answer_within_the_deadline_reads_whole() -> io::Result<()> {
        let (mut reader, mut server) = pair()?;
        server.write_all(b"hello world")?;
        let mut buf = [0u8; 11];
        DeadlineRead::new(&mut reader, Instant::now() + Duration::from_secs(5))
            .read_exact(&mut buf)?;
        assert_eq!(&buf, b"hello world");
        Ok(())
    }
}
