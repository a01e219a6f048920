//! A run's messages, whatever protocol carries them: a [`Request`] (method, target,
//! authority, header fields, body) as a scenario's flow writes it or a plain run's options
//! give it, which each protocol renders its own way (HTTP/1.1's text in `http.rs`, an h2
//! request in `http2_message.rs`), and a [`Response`] (status, header fields, body without its
//! framing) as the flow reads it, which HTTP/1.1's reader (`http.rs`) fills as it frames the
//! bytes it reads and HTTP/2 (`http2.rs`) from the head and DATA frames h2 hands over. Neither
//! protocol writes or parses the other's bytes.
//!
//! A scenario's buffers are the VU's, reused from message to message: a warmed-up VU writes a
//! request and copies a response without allocating.

use std::ops::Range;

/// MAX_CAPTURE bounds the body bytes kept of one response: extractions and checks look at
/// most this far (a larger body is cut, so a `contains` past it fails).
pub const MAX_CAPTURE: usize = 1 << 20;

/// Request is one request as a flow wrote it.
#[derive(Debug, Default)]
pub struct Request {
    /// text: the method, target, authority and header names and values, one after the other.
    text: Vec<u8>,
    method: Range<usize>,
    target: Range<usize>,
    authority: Range<usize>,
    /// headers: each header's name and value, as ranges into `text`.
    headers: Vec<(Range<usize>, Range<usize>)>,
    /// body: the body (empty for none).
    pub body: Vec<u8>,
}

impl Request {
    /// begin starts a request of `method` for `target` (a path and query; `/` is put in front
    /// of one without it) at `authority` (host and port, as `Host` and `:authority` carry
    /// it), without headers or body.
    pub fn begin(&mut self, method: &str, target: &str, authority: &str) {
        self.text.clear();
        self.headers.clear();
        self.body.clear();
        self.method = self.push(method.as_bytes());
        let t0 = self.text.len();
        if !target.starts_with('/') {
            self.text.push(b'/');
        }
        self.text.extend_from_slice(target.as_bytes());
        self.target = t0..self.text.len();
        self.authority = self.push(authority.as_bytes());
    }

    fn push(&mut self, bytes: &[u8]) -> Range<usize> {
        let at = self.text.len();
        self.text.extend_from_slice(bytes);
        at..self.text.len()
    }

    /// header adds header field `name: value`.
    pub fn header(&mut self, name: &[u8], value: &[u8]) {
        self.header_with(name, |out| out.extend_from_slice(value));
    }

    /// header_with adds a header named `name` whose value `value` appends to the buffer it is
    /// given (a template rendered in place), and returns what `value` returned.
    pub fn header_with<T>(&mut self, name: &[u8], value: impl FnOnce(&mut Vec<u8>) -> T) -> T {
        let n = self.push(name);
        let v0 = self.text.len();
        let r = value(&mut self.text);
        self.headers.push((n, v0..self.text.len()));
        r
    }

    /// method is the request's method.
    pub fn method(&self) -> &[u8] {
        &self.text[self.method.clone()]
    }

    /// target is its path and query.
    pub fn target(&self) -> &[u8] {
        &self.text[self.target.clone()]
    }

    /// authority is the host (and port) it goes to.
    pub fn authority(&self) -> &[u8] {
        &self.text[self.authority.clone()]
    }

    /// headers iterates over its header fields (name, value) in the order they were added.
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers
            .iter()
            .map(|(n, v)| (&self.text[n.clone()], &self.text[v.clone()]))
    }

    /// size is the request's size as HTTP/1.1 text would carry it (request line, `Host`, the
    /// fields, the blank line and the body): its bytes out over HTTP/1.1.
    pub fn size(&self) -> usize {
        let line = self.method.len() + 1 + self.target.len() + " HTTP/1.1\r\n".len();
        let host = "Host: \r\n".len() + self.authority.len();
        let fields: usize = (self.headers.iter())
            .map(|(n, v)| n.len() + v.len() + ": \r\n".len())
            .sum();
        line + host + fields + 2 + self.body.len()
    }
}

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
    fn a_request_as_written() {
        let mut r = Request::default();
        r.header(b"X-Stale", b"1");
        r.begin("POST", "a?b=1", "h:8080");
        r.header(b"X-A", b"1");
        let ok: Result<(), ()> = r.header_with(b"X-B", |out| {
            out.extend_from_slice(b"two");
            Ok(())
        });
        r.body.extend_from_slice(b"hi");
        assert_eq!(ok, Ok(()));
        let got = (r.method(), r.target(), r.authority());
        assert_eq!(got, (&b"POST"[..], &b"/a?b=1"[..], &b"h:8080"[..]));
        let fields: Vec<_> = r.headers().collect();
        assert_eq!(
            fields,
            [(&b"X-A"[..], &b"1"[..]), (&b"X-B"[..], &b"two"[..])]
        );
        let text = "POST /a?b=1 HTTP/1.1\r\nHost: h:8080\r\nX-A: 1\r\nX-B: two\r\n\r\nhi";
        assert_eq!(r.size(), text.len());
    }

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
