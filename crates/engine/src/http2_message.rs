//! HTTP/2's requests: a [`Template`] is the `http::Request` h2 sends (method, scheme and
//! authority and path as pseudo-headers, the connection-specific headers left out), made from
//! a scenario's [`Request`] as its flow wrote it, or from the HTTP/1.1 bytes a plain run's plan
//! rendered once (the request line and `Host` as pseudo-headers). A response goes the other
//! way as a [`crate::message::Response`], never as HTTP/1.1 text.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};

use crate::message::Request;

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

/// BadRequest: request bytes that do not parse (the plan renders them, so this is a bug).
#[derive(Debug)]
pub struct BadRequest;

impl Template {
    /// parse makes a plain run's request, rendered once as HTTP/1.1 bytes, the request HTTP/2
    /// sends.
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
            carry(&mut headers, h.name.as_bytes(), h.value)?;
        }
        let src = src.to_vec();
        let body = Bytes::copy_from_slice(&src[head_len..]);
        let path = path.as_bytes();
        Template::make(
            src,
            method,
            (authority.ok_or(BadRequest)?.as_bytes(), path),
            headers,
            body,
            https,
        )
    }

    /// of makes a scenario's request (as its flow wrote it) the request HTTP/2 sends.
    pub(crate) fn of(m: &Request, https: bool) -> Result<Template, BadRequest> {
        let method = Method::from_bytes(m.method()).map_err(|_| BadRequest)?;
        let mut headers = HeaderMap::new();
        for (name, value) in m.headers() {
            carry(&mut headers, name, value)?;
        }
        let body = Bytes::copy_from_slice(&m.body);
        let to = (m.authority(), m.target());
        Template::make(Vec::new(), method, to, headers, body, https)
    }

    /// make is a template of `method` to (`authority`, `path`) with `headers` and `body`, made
    /// from `src` (empty: from a message, which is made afresh each time).
    fn make(
        src: Vec<u8>,
        method: Method,
        (authority, path): (&[u8], &[u8]),
        headers: HeaderMap,
        body: Bytes,
        https: bool,
    ) -> Result<Template, BadRequest> {
        let scheme = if https { "https" } else { "http" };
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|_| BadRequest)?;
        Ok(Template {
            src,
            method,
            uri,
            headers,
            body,
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
