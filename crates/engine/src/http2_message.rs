//! HTTP/2 requests from the HTTP/1.1 bytes the plan renders: a [`Template`] turns them into an
//! `http::Request` (the request line and `Host` as pseudo-headers, the connection-specific
//! headers left out). A response goes the other way as a [`crate::message::Response`],
//! never as HTTP/1.1 text.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};

/// head_size is a response head's size as HPACK would carry it uncompressed (name, value and
/// 32 bytes each, RFC 7541 4.1): h2 does not say how many bytes the frames took.
pub(crate) fn head_size(headers: &HeaderMap) -> u64 {
    headers
        .iter()
        .map(|(n, v)| (n.as_str().len() + v.len() + 32) as u64)
        .sum::<u64>()
        + 32
}

/// Template is an HTTP/1.1 request as HTTP/2 sends it: the request line and `Host` become
/// pseudo-headers, the connection-specific headers (RFC 9113 8.2.2) are left out.
#[derive(Debug)]
pub(crate) struct Template {
    /// src: the bytes it was made from (reused while the lane sends the same ones).
    pub(crate) src: Vec<u8>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    /// body: the request's body, sent after its head.
    pub(crate) body: Bytes,
}

/// BadRequest: request bytes that do not parse (the plan renders them, so this is a bug).
#[derive(Debug)]
pub struct BadRequest;

impl Template {
    pub(crate) fn parse(src: &[u8], https: bool) -> Result<Template, BadRequest> {
        let mut inline = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut inline);
        let httparse::Status::Complete(head_len) = req.parse(src).map_err(|_| BadRequest)? else {
            return Err(BadRequest);
        };
        let method =
            Method::from_bytes(req.method.ok_or(BadRequest)?.as_bytes()).map_err(|_| BadRequest)?;
        let path = req.path.ok_or(BadRequest)?;
        let mut authority = None;
        let mut headers = HeaderMap::new();
        for h in req.headers.iter() {
            if h.name.eq_ignore_ascii_case("host") {
                authority = Some(std::str::from_utf8(h.value).map_err(|_| BadRequest)?);
                continue;
            }
            let connection_specific = [
                "connection",
                "keep-alive",
                "proxy-connection",
                "transfer-encoding",
                "upgrade",
            ]
            .iter()
            .any(|c| h.name.eq_ignore_ascii_case(c));
            if connection_specific
                || (h.name.eq_ignore_ascii_case("te") && !h.value.eq_ignore_ascii_case(b"trailers"))
            {
                continue;
            }
            let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| BadRequest)?;
            let value = HeaderValue::from_bytes(h.value).map_err(|_| BadRequest)?;
            headers.append(name, value);
        }
        let scheme = if https { "https" } else { "http" };
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority.ok_or(BadRequest)?)
            .path_and_query(path)
            .build()
            .map_err(|_| BadRequest)?;
        Ok(Template {
            src: src.to_vec(),
            method,
            uri,
            headers,
            body: Bytes::copy_from_slice(&src[head_len..]),
        })
    }

    /// request builds the request to send (the body goes separately).
    pub(crate) fn request(&self) -> Request<()> {
        let mut r = Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        if !self.headers.is_empty() {
            *r.headers_mut() = self.headers.clone();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_from_http1_bytes() {
        // (label, request bytes, https, method, uri, header names, body)
        type Case<'a> = (
            &'a str,
            &'a [u8],
            bool,
            &'a str,
            &'a str,
            &'a [&'a str],
            &'a [u8],
        );
        let cases: &[Case] = &[
            (
                "plain get",
                b"GET /a?x=1 HTTP/1.1\r\nHost: h:8080\r\n\r\n",
                false,
                "GET",
                "http://h:8080/a?x=1",
                &[],
                b"",
            ),
            (
                "post over tls, connection headers left out",
                b"POST /p HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi",
                true,
                "POST",
                "https://h/p",
                &["x-a", "content-length"],
                b"hi",
            ),
        ];
        for (label, src, https, method, uri, names, body) in cases {
            let t = Template::parse(src, *https).expect(label);
            let r = t.request();
            assert_eq!(r.method().as_str(), *method, "{label}");
            assert_eq!(r.uri().to_string(), *uri, "{label}");
            let got: Vec<&str> = r.headers().keys().map(|k| k.as_str()).collect();
            assert_eq!(got, *names, "{label}");
            assert_eq!(&t.body[..], *body, "{label}");
        }
        for bad in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            b"nonsense",
            b"GET / HTTP/1.1\r\nHost: h\r\n",
        ] {
            assert!(Template::parse(bad, false).is_err(), "{bad:?}");
        }
    }
}
