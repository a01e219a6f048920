//! A response as a scenario reads it, whatever protocol carried it: its status, its header
//! fields and its body with the framing taken off. HTTP/1.1's reader (`http.rs`) fills it as
//! it frames the bytes it reads, HTTP/2 (`http2.rs`) from the head and DATA frames h2 hands
//! over; neither writes the other's bytes, and the flow's checks, extractions and cookie jar
//! read only this.
//!
//! The buffers are the VU's, reused from response to response: a warmed-up VU copies a
//! response without allocating.

use std::ops::Range;

/// MAX_CAPTURE bounds the body bytes kept of one response: extractions and checks look at
/// most this far (a larger body is cut, so a `contains` past it fails).
pub const MAX_CAPTURE: usize = 1 << 20;

/// Response is one response kept for a scenario's reader.
#[derive(Debug, Default)]
pub struct Response {
    /// status: the status code (0 until a head came).
    pub status: u16,
    /// fields: the header names and values, one after the other.
    fields: Vec<u8>,
    /// headers: each header's name and value, as ranges into `fields`.
    headers: Vec<(Range<usize>, Range<usize>)>,
    /// body: the body's payload (no chunk framing, no DATA frame headers), up to
    /// [`MAX_CAPTURE`] bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// clear forgets the last response (a resend, or the next request), keeping the buffers.
    pub fn clear(&mut self) {
        self.status = 0;
        self.fields.clear();
        self.headers.clear();
        self.body.clear();
    }

    /// head starts the response's head: status `status`, no header yet (an interim 1xx head's
    /// fields are dropped by the final one's).
    pub fn head(&mut self, status: u16) {
        self.status = status;
        self.fields.clear();
        self.headers.clear();
    }

    /// header adds a header field (a repeated name is kept once a value).
    pub fn header(&mut self, name: &[u8], value: &[u8]) {
        let n0 = self.fields.len();
        self.fields.extend_from_slice(name);
        let v0 = self.fields.len();
        self.fields.extend_from_slice(value);
        self.headers.push((n0..v0, v0..self.fields.len()));
    }

    /// payload adds body bytes, as far as [`MAX_CAPTURE`] allows.
    pub fn payload(&mut self, bytes: &[u8]) {
        let room = MAX_CAPTURE.saturating_sub(self.body.len()).min(bytes.len());
        self.body.extend_from_slice(&bytes[..room]);
    }

    /// fields_held is the bytes its header fields' buffer holds (what [`Response::shed_fields`]
    /// gives back).
    #[cfg(test)]
    pub(crate) fn fields_held(&self) -> usize {
        self.fields.capacity()
    }

    /// first returns the first value of header `name` (case-insensitive).
    pub fn first<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        self.headers_named(name).next()
    }

    /// headers_named iterates over every value of header `name` (case-insensitive) that is
    /// text.
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers.iter().filter_map(move |(n, v)| {
            let n = self.fields.get(n.clone())?;
            if n.eq_ignore_ascii_case(name.as_bytes()) {
                std::str::from_utf8(self.fields.get(v.clone())?).ok()
            } else {
                None
            }
        })
    }

    /// shed gives back the header fields' buffers when they hold more than `keep` bytes (a
    /// large head's), so that a thinking VU does not hold them.
    pub fn shed_fields(&mut self, keep: usize) {
        if self.fields.capacity() > keep {
            self.fields = Vec::new();
            self.headers = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_by_name_and_a_bounded_body() {
        let mut r = Response::default();
        r.head(100);
        r.header(b"X-Interim", b"1");
        r.head(201);
        r.header(b"Set-Cookie", b"a=1");
        r.header(b"content-type", b"text/plain");
        r.header(b"set-cookie", b"b=2");
        r.header(b"X-Bin", b"\xff");
        r.payload(b"hello");
        assert_eq!(r.status, 201);
        assert_eq!(r.first("x-interim"), None, "an interim head's fields go");
        assert_eq!(r.first("Content-Type"), Some("text/plain"));
        let all: Vec<_> = r.headers_named("SET-COOKIE").collect();
        assert_eq!(all, ["a=1", "b=2"]);
        assert_eq!(
            r.first("x-bin"),
            None,
            "a value that is not text is not read"
        );
        assert_eq!(r.body, b"hello");
        let big = vec![b'x'; MAX_CAPTURE];
        r.payload(&big);
        assert_eq!(r.body.len(), MAX_CAPTURE, "cut at the bound");
        r.clear();
        assert_eq!(
            (r.status, r.body.len(), r.first("set-cookie")),
            (0, 0, None)
        );
    }
}
