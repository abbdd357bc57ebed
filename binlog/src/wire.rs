//! Little-endian field readers and writers shared by the event codecs.

use crate::error::DecodeError;

/// A cursor over an event body. Every read checks the length and reports which event was
/// being parsed, so malformed input is an error, never a panic.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    event: &'static str,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], event: &'static str) -> Self {
        Cursor { buf, pos: 0, event }
    }

    pub(crate) fn malformed(&self, what: &'static str) -> DecodeError {
        DecodeError::Malformed {
            event: self.event,
            what,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(self.malformed(what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn uint(&mut self, n: usize, what: &'static str) -> Result<u64, DecodeError> {
        let b = self.take(n, what)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(self.uint(2, what)? as u16)
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(self.uint(4, what)? as u32)
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        self.uint(8, what)
    }

    /// A MySQL length-encoded ("packed") integer.
    pub(crate) fn packed(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        match self.u8(what)? {
            b @ 0..=250 => Ok(u64::from(b)),
            0xfc => self.uint(2, what),
            0xfd => self.uint(3, what),
            0xfe => self.uint(8, what),
            _ => Err(self.malformed(what)),
        }
    }

    /// A string of `n` bytes that must be UTF-8.
    pub(crate) fn string(&mut self, n: usize, what: &'static str) -> Result<String, DecodeError> {
        let b = self.take(n, what)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.malformed(what))
    }
}

pub(crate) fn put_uint(out: &mut Vec<u8>, v: u64, n: usize) {
    out.extend_from_slice(&v.to_le_bytes()[..n]);
}

pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Writes a MySQL length-encoded integer.
pub(crate) fn put_packed(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v < 1 << 16 {
        out.push(0xfc);
        put_uint(out, v, 2);
    } else if v < 1 << 24 {
        out.push(0xfd);
        put_uint(out, v, 3);
    } else {
        out.push(0xfe);
        put_u64(out, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_round_trip_at_every_width() {
        for v in [
            0u64,
            250,
            251,
            65_535,
            65_536,
            (1 << 24) - 1,
            1 << 24,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_packed(&mut out, v);
            let mut c = Cursor::new(&out, "test");
            assert_eq!(c.packed("v").unwrap(), v);
            assert_eq!(c.remaining(), 0);
        }
    }

    #[test]
    fn short_input_is_an_error() {
        let mut c = Cursor::new(&[1, 2], "test");
        assert!(c.u32("x").is_err());
        let mut c = Cursor::new(&[0xff], "test");
        assert!(c.packed("x").is_err());
    }
}
