//! HTTP/2's requests: a [`Template`] is the `http::Request` h2 sends (method, scheme and
//! authority and path as pseudo-headers, the connection-specific headers left out), made from
//! a [`Request`] (a scenario's as its flow wrote it, or a plain run's, once with its plan),
//! never from HTTP/1.1 text. A response goes the other way as a
//! [`crate::message::Response`], never as HTTP/1.1 text either.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

use crate::message::Request;

/// Template is a request as HTTP/2 sends it: its method, target and authority become
/// pseudo-headers, the connection-specific headers (RFC 9113 8.2.2) are left out.
#[derive(Debug)]
pub(crate) struct Template {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    /// body: the request's body, sent after its head.
    pub(crate) body: Bytes,
}

/// carry adds header `name: value` to `headers` unless it is connection-specific (RFC 9113
/// 8.2.2), which HTTP/2 leaves out; a name or value h2 cannot carry is a bad request.
fn carry(headers: &mut HeaderMap, name: &[u8], value: &[u8]) -> Result<(), BadRequest> {
    let connection_specific = [
        &b"connection"[..],
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
    ]
    .iter()
    .any(|c| name.eq_ignore_ascii_case(c));
    if connection_specific
        || (name.eq_ignore_ascii_case(b"te") && !value.eq_ignore_ascii_case(b"trailers"))
    {
        return Ok(());
    }
    let name = HeaderName::from_bytes(name).map_err(|_| BadRequest)?;
    let value = HeaderValue::from_bytes(value).map_err(|_| BadRequest)?;
    headers.append(name, value);
    Ok(())
}

/// BadRequest: a request h2 cannot carry (a method, authority, target or header it refuses).
#[derive(Debug)]
pub struct BadRequest;

impl Template {
    /// of makes `m` the request HTTP/2 sends to an `https` (or http) origin.
    pub(crate) fn of(m: &Request, https: bool) -> Result<Template, BadRequest> {
        let method = Method::from_bytes(m.method()).map_err(|_| BadRequest)?;
        let mut headers = HeaderMap::new();
        for (name, value) in m.headers() {
            carry(&mut headers, name, value)?;
        }
        let uri = Uri::builder()
            .scheme(if https { "https" } else { "http" })
            .authority(m.authority())
            .path_and_query(m.target())
            .build()
            .map_err(|_| BadRequest)?;
        Ok(Template {
            method,
            uri,
            headers,
            body: Bytes::copy_from_slice(&m.body),
        })
    }

    /// request builds the request to send (the body goes separately).
    pub(crate) fn request(&self) -> http::Request<()> {
        let mut r = http::Request::new(());
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

    /// message is a request of `method` to `to` (authority, target) with `fields` and `body`.
    fn message(method: &str, to: (&str, &str), fields: &[(&str, &str)], body: &[u8]) -> Request {
        let mut m = Request::default();
        m.begin(method, to.1, to.0);
        for (name, value) in fields {
            m.header(name.as_bytes(), value.as_bytes());
        }
        m.body.extend_from_slice(body);
        m
    }

    #[test]
    fn templates_from_messages() {
        // (label, message, https, uri, header names)
        let cases = [
            (
                "plain get",
                message("GET", ("h:8080", "/a?x=1"), &[], b""),
                false,
                "http://h:8080/a?x=1",
                &[][..],
            ),
            (
                "post over tls, connection headers left out, te kept for trailers only",
                message(
                    "POST",
                    ("h", "p"),
                    &[("Connection", "keep-alive"), ("X-A", "1"), ("TE", "gzip")],
                    b"hi",
                ),
                true,
                "https://h/p",
                &["x-a"][..],
            ),
            (
                "grpc's te: trailers",
                message("POST", ("h", "/S/M"), &[("te", "trailers")], b""),
                false,
                "http://h/S/M",
                &["te"][..],
            ),
        ];
        for (label, m, https, uri, names) in cases {
            let t = Template::of(&m, https).expect(label);
            let r = t.request();
            assert_eq!(r.method().as_str().as_bytes(), m.method(), "{label}");
            assert_eq!(r.uri().to_string(), uri, "{label}");
            let got: Vec<&str> = r.headers().keys().map(|k| k.as_str()).collect();
            assert_eq!(got, names, "{label}");
            assert_eq!(t.body, m.body, "{label}");
        }
        let bad = [
            ("a method h2 refuses", message("G T", ("h", "/"), &[], b"")),
            (
                "an authority h2 refuses",
                message("GET", ("h h", "/"), &[], b""),
            ),
            (
                "a value h2 refuses",
                message("GET", ("h", "/"), &[("X-A", "a\u{1}b")], b""),
            ),
        ];
        for (label, m) in bad {
            assert!(Template::of(&m, false).is_err(), "{label}");
        }
    }
}
