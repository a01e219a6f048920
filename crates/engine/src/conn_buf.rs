//! [`ReadBuf`]: a connection's read buffer, grown for large heads and kept between requests.

use super::{Trip, MAX_HEAD, READ_BUF};
use crate::failure::ErrorClass;

/// ReadBuf is a connection's read buffer: bytes `start..end` are received but unparsed.
#[derive(Debug)]
pub(super) struct ReadBuf {
    pub(super) data: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl ReadBuf {
    pub(super) fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// widen grows a buffer a read has just filled to [`READ_BUF`] (from
    /// [`READ_BUF_FIRST`]): a response larger than the first buffer is read in reads as
    /// large as before, and the connection keeps the larger buffer.
    pub(super) fn widen(&mut self) {
        if self.data.len() < READ_BUF {
            self.data.resize(READ_BUF, 0);
        }
    }

    /// shrink gives back a buffer a large answer widened past `base` once it holds no
    /// unparsed bytes: a mostly idle VU then keeps `base`, not [`READ_BUF`], between its
    /// requests. It reallocates only after an answer that outgrew `base`, never otherwise.
    pub(super) fn shrink(&mut self, base: usize) {
        if self.data.len() > base && self.start == self.end {
            self.data = vec![0; base];
            self.clear();
        }
    }

    /// make_room ensures free space after `end`: reset when empty, compact a partial head,
    /// grow for a large head (up to [`MAX_HEAD`]).
    pub(super) fn make_room(&mut self) -> Result<(), Trip> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.data.len() {
            if self.data.len() >= MAX_HEAD {
                return Err(Trip::Failed(ErrorClass::Protocol));
            }
            self.data.resize(self.data.len() * 2, 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrink_gives_back_only_an_emptied_widened_buffer() {
        let mut b = ReadBuf {
            data: vec![0; 1024],
            start: 0,
            end: 1024,
        };
        b.widen();
        assert_eq!(b.data.len(), READ_BUF);
        b.end = 1500;
        b.start = 1000;
        b.shrink(1024);
        assert_eq!(b.data.len(), READ_BUF, "unparsed bytes are kept");
        b.start = 1500;
        b.shrink(1024);
        assert_eq!((b.data.len(), b.start, b.end), (1024, 0, 0));
        let before = b.data.as_ptr();
        b.shrink(1024);
        assert_eq!(
            b.data.as_ptr(),
            before,
            "a buffer at its base is not reallocated"
        );
    }
}
