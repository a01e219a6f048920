//! A flow's request written out: a request (or the GET of a redirect it follows) to the
//! origin its URL names, as a protocol's [`Message`] (method, target, authority, header
//! fields, body), with the VU's variables, functions and cookies filled in, into the VU's
//! reused buffers (nothing allocated once they have grown). Each protocol renders it its own
//! way behind the wire.

use std::fmt::Write as _;

use super::cookies::CookieJar;
use super::template::Scratch;
use super::url::{self, Origin};
use super::{Body, Request, Script};
use crate::message::Request as Message;

/// same_origin says whether two requests' origins (None: the run's host) are one.
pub fn same_origin(a: Option<Origin<'_>>, b: Option<Origin<'_>>, script: &Script) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(&b),
        (Some(o), None) | (None, Some(o)) => url::split(&script.base)
            .ok()
            .and_then(|s| s.origin)
            .is_some_and(|run| run.same(&o)),
    }
}

/// render writes `req` to `split`'s URL into `out`; a redirect (`hop`) is a GET without a
/// body, and one that left the request's origin (`cross`) leaves out the Authorization and
/// Cookie headers the flow gave. A function of a template that cannot be computed is the
/// error.
#[allow(clippy::too_many_arguments)]
pub fn render(
    out: &mut Message,
    vars: &[String],
    scratch: &mut Scratch,
    jar: &CookieJar,
    script: &Script,
    req: &Request,
    (hop, cross): (bool, bool),
    split: &url::Split<'_>,
) -> Result<(), &'static str> {
    let mut done = Ok(());
    let (authority, host) = match split.origin {
        Some(o) => (o.authority, o.host),
        None => (script.authority.as_str(), script.host.as_str()),
    };
    let method = if hop { "GET" } else { req.method.as_str() };
    out.begin(method, split.target, authority);
    for (k, v) in &req.headers {
        if cross && (k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("cookie")) {
            continue;
        }
        done = done.and(out.header_with(k.as_bytes(), |b| v.render(vars, b, scratch)));
    }
    if !req
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"))
    {
        out.header(b"User-Agent", crate::http::USER_AGENT.as_bytes());
    }
    jar.write_header(out, host);
    if hop {
        return done;
    }
    let body = &mut out.body;
    match &req.body {
        Body::None => {}
        Body::Json(tpl) | Body::Text(tpl) => done = done.and(tpl.render(vars, body, scratch)),
        Body::Form(fields) => {
            for (i, (k, v)) in fields.iter().enumerate() {
                if i > 0 {
                    body.push(b'&');
                }
                body.extend_from_slice(k.as_bytes());
                body.push(b'=');
                done = done.and(v.render(vars, body, scratch));
            }
        }
    }
    if let Some(call) = &req.grpc {
        done = done.and(call.encode(body));
    }
    if let Some(ct) = req.content_type {
        out.header(b"Content-Type", ct.as_bytes());
    }
    let has_body = !matches!(req.body, Body::None);
    if has_body || matches!(req.method.as_str(), "POST" | "PUT" | "PATCH") {
        let len = out.body.len();
        out.header_with(b"Content-Length", |b| {
            let _ = write!(Buf(b), "{len}");
        });
    }
    done
}

/// write_url renders `req`'s URL, its query included, into `url`; a function in it that
/// cannot be computed is the error.
pub fn write_url(
    url: &mut String,
    req: &Request,
    vars: &[String],
    scratch: &mut Scratch,
) -> Result<(), &'static str> {
    url.clear();
    let mut out = std::mem::take(url).into_bytes();
    let mut done = Ok(());
    if let Some(lead) = &req.lead {
        done = lead.render(vars, &mut out, scratch);
    }
    done = done.and(req.path.render(vars, &mut out, scratch));
    for (i, (k, v)) in req.query.iter().enumerate() {
        out.push(if i == 0 && !out.contains(&b'?') {
            b'?'
        } else {
            b'&'
        });
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        done = done.and(v.render(vars, &mut out, scratch));
    }
    // Templates write text (their literals as given, their values escaped): valid UTF-8.
    *url = String::from_utf8(out).unwrap_or_default();
    done
}

/// Buf lets `write!` append to a byte vector.
struct Buf<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}
