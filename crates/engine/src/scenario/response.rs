//! Reading a captured response: the connection copies the raw bytes of a flow's response
//! (head, body and framing) into a buffer; [`Parsed`] finds its headers and its body,
//! de-chunked, for extractions, checks and the cookie jar. Only flow requests pay for this:
//! the single-URL path never captures.

use std::ops::Range;

/// MAX_CAPTURE bounds the bytes kept of one response: extractions and checks look at most
/// this far (a larger body is cut, so a `contains` past it fails).
pub const MAX_CAPTURE: usize = 1 << 20;

/// Parsed is a captured response's headers and body.
#[derive(Debug, Default)]
pub struct Parsed {
    /// headers: name and value ranges into the raw bytes.
    headers: Vec<(Range<usize>, Range<usize>)>,
    /// body: the body, de-chunked.
    pub body: Vec<u8>,
    /// status: the status code (0 when the head does not parse).
    pub status: u16,
}

impl Parsed {
    /// parse reads `raw` (a whole response as captured); a head that does not parse leaves
    /// no headers and an empty body (the exchange itself already judged the response).
    pub fn parse(&mut self, raw: &[u8]) {
        self.headers.clear();
        self.body.clear();
        self.status = 0;
        let mut inline = [httparse::EMPTY_HEADER; 64];
        let mut resp = httparse::Response::new(&mut inline);
        let Ok(httparse::Status::Complete(head_len)) = resp.parse(raw) else {
            return;
        };
        self.status = resp.code.unwrap_or(0);
        let base = raw.as_ptr() as usize;
        let mut chunked = false;
        for h in resp.headers.iter() {
            let n0 = h.name.as_ptr() as usize - base;
            let v0 = h.value.as_ptr() as usize - base;
            self.headers
                .push((n0..n0 + h.name.len(), v0..v0 + h.value.len()));
            if h.name.eq_ignore_ascii_case("transfer-encoding")
                && h.value.to_ascii_lowercase().ends_with(b"chunked")
            {
                chunked = true;
            }
        }
        let rest = &raw[head_len..];
        if chunked {
            dechunk(rest, &mut self.body);
        } else {
            self.body.extend_from_slice(rest);
        }
    }

    /// header returns the first value of header `name` (case-insensitive).
    pub fn header<'a>(&self, raw: &'a [u8], name: &str) -> Option<&'a str> {
        self.headers_named(raw, name).next()
    }

    /// headers_named iterates over every value of header `name`.
    pub fn headers_named<'a, 'b>(
        &'b self,
        raw: &'a [u8],
        name: &'b str,
    ) -> impl Iterator<Item = &'a str> + 'b
    where
        'a: 'b,
    {
        self.headers.iter().filter_map(move |(n, v)| {
            let n = raw.get(n.clone())?;
            if n.eq_ignore_ascii_case(name.as_bytes()) {
                std::str::from_utf8(raw.get(v.clone())?).ok()
            } else {
                None
            }
        })
    }
}

/// dechunk appends the payload of a chunked body to `out` (stopping at what is malformed or
/// missing: the exchange already failed such a response).
fn dechunk(mut rest: &[u8], out: &mut Vec<u8>) {
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return;
        };
        let line = &rest[..eol];
        let size_txt = line.split(|&b| b == b';').next().unwrap_or(b"");
        let Ok(size_str) = std::str::from_utf8(size_txt) else {
            return;
        };
        let Ok(size) = usize::from_str_radix(size_str.trim(), 16) else {
            return;
        };
        rest = &rest[eol + 2..];
        if size == 0 || rest.len() < size {
            out.extend_from_slice(&rest[..size.min(rest.len())]);
            return;
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or(b"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_headers_and_bodies() {
        let cases: &[(&str, &[u8], &str, Option<&str>)] = &[
            (
                "content-length",
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello",
                "hello",
                Some("1"),
            ),
            (
                "chunked with extension",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nx-a: 2\r\n\r\n3;e=1\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
                "hello",
                Some("2"),
            ),
            ("no headers", b"HTTP/1.1 204 No Content\r\n\r\n", "", None),
            ("garbage", b"nonsense", "", None),
        ];
        for (label, raw, body, xa) in cases {
            let mut p = Parsed::default();
            p.parse(raw);
            assert_eq!(std::str::from_utf8(&p.body).unwrap(), *body, "{label}");
            assert_eq!(p.header(raw, "X-A"), *xa, "{label}");
        }
    }

    #[test]
    fn every_value_of_a_repeated_header() {
        let raw = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n";
        let mut p = Parsed::default();
        p.parse(raw);
        let all: Vec<_> = p.headers_named(raw, "set-cookie").collect();
        assert_eq!(all, ["a=1", "b=2"]);
    }
}
