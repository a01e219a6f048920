//! Request heads: what the connection needs from `httparse`'s view of the read buffer.

use http::StatusCode;

use crate::form::{self, Verb};
use crate::route::{Behaviour, Route};
use crate::task;

/// MAX_HEADERS is the most header lines parsed (431 beyond).
const MAX_HEADERS: usize = 64;

/// RequestBody is how a request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestBody {
    /// None: no body (or `Content-Length: 0`).
    None,
    /// Length: `Content-Length` bytes follow.
    Length(u64),
    /// Chunked: `Transfer-Encoding: chunked` (wins over a `Content-Length`, as RFC 9112 says).
    Chunked,
}

/// Request is what the connection keeps from a parsed head (owned: the read buffer moves on).
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) behaviour: Result<Behaviour, String>,
    pub(crate) keep_alive: bool,
    pub(crate) head_only: bool,
    pub(crate) body: RequestBody,
    /// verb is the method as the form app sees it.
    pub(crate) verb: Verb,
    /// session is the `session` cookie, kept only on the form app's routes.
    pub(crate) session: Option<String>,
    /// form_type: the body is `application/x-www-form-urlencoded`.
    pub(crate) form_type: bool,
    /// retry_of: a task submission's `X-Retry-Of` (None: no such header; Some(None): not
    /// an id's shape), kept only on the submission route.
    pub(crate) retry_of: Option<Option<task::RawId>>,
    /// location: the `to=` of a `/redirect` (None on the other routes).
    pub(crate) location: Option<String>,
    /// ws_accept: the `Sec-WebSocket-Accept` answering a `/ws` request's key (None on the
    /// other routes, or without a key).
    pub(crate) ws_accept: Option<[u8; 28]>,
}

/// Parsed is the outcome of looking at the read buffer.
// Parsed lives on the stack for one request; boxing the request would allocate per request.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Parsed {
    /// Request: a complete head, and how many bytes it took.
    Request(Request, usize),
    /// Partial: read more.
    Partial,
    /// Invalid: answer with this status and reason, then close (framing is lost).
    Invalid(StatusCode, &'static str),
}

/// parse looks for one complete request head at the front of `input`; on success it returns
/// the request and the length of its head.
pub(crate) fn parse(input: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let used = match req.parse(input) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => {
            return Parsed::Invalid(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "too many headers\n",
            )
        }
        Err(_) => return Parsed::Invalid(StatusCode::BAD_REQUEST, "malformed request\n"),
    };
    let behaviour = Behaviour::parse(req.path.unwrap_or("/"));
    let location = match &behaviour {
        Ok(b) if b.route == Route::Redirect => crate::route::redirect_to(req.path.unwrap_or("")),
        _ => None,
    };
    let route = behaviour.as_ref().map(|b| b.route).ok();
    let form_route = matches!(route, Some(Route::Form(_)));
    let submit_route = route == Some(Route::Task(task::Ask::Submit));
    let ws_route = matches!(route, Some(Route::Socket(_)));
    let (mut retry_of, mut ws_accept, mut session) = (None, None, None);
    let mut form_type = false;
    let http10 = req.version == Some(0);
    let mut keep_alive = !http10;
    let mut body = RequestBody::None;
    for header in req.headers.iter() {
        if header.name.eq_ignore_ascii_case("connection") {
            keep_alive = connection(header.value, keep_alive);
        } else if header.name.eq_ignore_ascii_case("content-length") {
            match std::str::from_utf8(header.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
            {
                Some(n) if body != RequestBody::Chunked => body = RequestBody::Length(n),
                Some(_) => {}
                None => return Parsed::Invalid(StatusCode::BAD_REQUEST, "bad content-length\n"),
            }
        } else if form_route && header.name.eq_ignore_ascii_case("cookie") {
            if let Some(id) = form::session_cookie(header.value) {
                session = Some(id.to_string());
            }
        } else if submit_route && header.name.eq_ignore_ascii_case("x-retry-of") {
            let id = std::str::from_utf8(header.value).unwrap_or_default().trim();
            retry_of = Some(task::raw_id(id));
        } else if form_route && header.name.eq_ignore_ascii_case("content-type") {
            form_type = is_form(header.value);
        } else if ws_route && header.name.eq_ignore_ascii_case("sec-websocket-key") {
            ws_accept = Some(crate::socket::accept(header.value));
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if header.value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                body = RequestBody::Chunked;
            } else {
                return Parsed::Invalid(
                    StatusCode::NOT_IMPLEMENTED,
                    "unsupported transfer-encoding\n",
                );
            }
        }
    }
    let request = Request {
        behaviour,
        keep_alive,
        head_only: req.method == Some("HEAD"),
        verb: verb(req.method),
        session,
        form_type,
        retry_of,
        location,
        ws_accept,
        body: if body == RequestBody::Length(0) {
            RequestBody::None
        } else {
            body
        },
    };
    Parsed::Request(request, used)
}

/// connection is whether to keep the connection open after a `Connection` header's tokens
/// (`close`, `keep-alive`; the last wins), `keep_alive` before it.
fn connection(value: &[u8], mut keep_alive: bool) -> bool {
    for token in value.split(|b| *b == b',') {
        let token = token.trim_ascii();
        if token.eq_ignore_ascii_case(b"close") {
            keep_alive = false;
        } else if token.eq_ignore_ascii_case(b"keep-alive") {
            keep_alive = true;
        }
    }
    keep_alive
}

/// is_form: a `Content-Type` value names a form body (parameters aside).
fn is_form(value: &[u8]) -> bool {
    let media = value.split(|b| *b == b';').next().unwrap_or(b"");
    media
        .trim_ascii()
        .eq_ignore_ascii_case(form::FORM_CONTENT_TYPE.as_bytes())
}

/// verb is the method as the form app sees it.
fn verb(method: Option<&str>) -> Verb {
    match method {
        Some("GET" | "HEAD") => Verb::Get,
        Some("POST") => Verb::Post,
        _ => Verb::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Body;

    fn request(bytes: &[u8]) -> (Request, usize) {
        match parse(bytes) {
            Parsed::Request(request, used) => (request, used),
            Parsed::Partial => panic!("partial: {bytes:?}"),
            Parsed::Invalid(status, reason) => panic!("invalid {status}: {reason}"),
        }
    }

    #[test]
    fn heads_parse() {
        let get = b"GET /x?size=5 HTTP/1.1\r\nHost: a\r\n\r\n";
        let (req, used) = request(get);
        assert_eq!(used, get.len());
        assert!(req.keep_alive && !req.head_only);
        assert_eq!(req.body, RequestBody::None);
        assert_eq!(req.behaviour.map(|b| b.body), Ok(Body::Filler(5)));

        let cases: &[(&str, &[u8], bool, bool, RequestBody)] = &[
            (
                "http/1.0 closes",
                b"GET / HTTP/1.0\r\n\r\n",
                false,
                false,
                RequestBody::None,
            ),
            (
                "http/1.0 keep-alive",
                b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
                true,
                false,
                RequestBody::None,
            ),
            (
                "connection close",
                b"GET / HTTP/1.1\r\nconnection: foo, close\r\n\r\n",
                false,
                false,
                RequestBody::None,
            ),
            (
                "head",
                b"HEAD / HTTP/1.1\r\n\r\n",
                true,
                true,
                RequestBody::None,
            ),
            (
                "content-length",
                b"POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n",
                true,
                false,
                RequestBody::Length(12),
            ),
            (
                "zero length",
                b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                true,
                false,
                RequestBody::None,
            ),
            (
                "chunked wins",
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                true,
                false,
                RequestBody::Chunked,
            ),
        ];
        for (label, bytes, keep_alive, head_only, body) in cases {
            let (req, _) = request(bytes);
            assert_eq!(req.keep_alive, *keep_alive, "{label}");
            assert_eq!(req.head_only, *head_only, "{label}");
            assert_eq!(req.body, *body, "{label}");
        }
    }

    #[test]
    fn form_routes_keep_cookie_and_content_type() {
        /// (label, request head, verb, session cookie kept, form content type).
        type Case<'a> = (&'a str, &'a [u8], Verb, Option<&'a str>, bool);
        let cases: &[Case<'_>] = &[
            (
                "post with both",
                b"POST /form HTTP/1.1\r\nCookie: a=1; session=abc\r\n\
                  Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n\r\n",
                Verb::Post,
                Some("abc"),
                true,
            ),
            (
                "json body",
                b"POST /form HTTP/1.1\r\nContent-Type: application/json\r\n\r\n",
                Verb::Post,
                None,
                false,
            ),
            (
                "head is a get",
                b"HEAD /thanks HTTP/1.1\r\ncookie: session=x\r\n\r\n",
                Verb::Get,
                Some("x"),
                false,
            ),
            (
                "other paths keep no cookie",
                b"PUT /x HTTP/1.1\r\nCookie: session=abc\r\n\r\n",
                Verb::Other,
                None,
                false,
            ),
        ];
        for (label, bytes, verb, session, form_type) in cases {
            let (req, _) = request(bytes);
            assert_eq!(req.verb, *verb, "{label}");
            assert_eq!(req.session.as_deref(), *session, "{label}");
            assert_eq!(req.form_type, *form_type, "{label}");
        }
    }

    #[test]
    fn pipelined_heads_parse_one_at_a_time() {
        let first = b"GET /a HTTP/1.1\r\n\r\n".as_slice();
        let both = [first, b"GET /b?size=1 HTTP/1.1\r\n\r\n"].concat();
        let (_, used) = request(&both);
        assert_eq!(used, first.len());
        let (second, _) = request(&both[used..]);
        assert_eq!(second.behaviour.map(|b| b.body), Ok(Body::Filler(1)));
    }

    #[test]
    fn split_heads_are_partial() {
        let get = b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
        for cut in 0..get.len() {
            assert!(
                matches!(parse(&get[..cut]), Parsed::Partial),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn bad_heads_are_rejected() {
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "a: b\r\n".repeat(MAX_HEADERS + 1)
        );
        let cases: &[(&str, &[u8], u16)] = &[
            ("garbage", b"\x00\x01\x02 nonsense\r\n\r\n", 400),
            ("bad version", b"GET / HTTP/9.9\r\n\r\n", 400),
            (
                "bad length",
                b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                400,
            ),
            (
                "gzip body",
                b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
                501,
            ),
            ("too many headers", many.as_bytes(), 431),
        ];
        for (label, bytes, want) in cases {
            match parse(bytes) {
                Parsed::Invalid(status, _) => assert_eq!(status.as_u16(), *want, "{label}"),
                _ => panic!("{label}: accepted"),
            }
        }
    }

    #[test]
    fn bad_queries_are_requests_with_a_reason() {
        let (req, _) = request(b"GET /x?size=oops HTTP/1.1\r\n\r\n");
        let reason = req.behaviour.expect_err("bad size");
        assert!(reason.contains("bad size"), "{reason}");
    }
}
