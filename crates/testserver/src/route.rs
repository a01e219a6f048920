//! What to answer: a request's path and query turned into a [`Behaviour`].
//!
//! Behaviour is chosen by query parameters on any path, so a benchmark can point at
//! `/anything?size=100&latency=20ms` without the server knowing the path in advance. Unknown
//! parameters are ignored (clients add cache-busters); known ones with bad values are a 400.

use http::StatusCode;

use crate::form::Page;
use crate::latency::{Latency, Stall};
use crate::socket::Probe;
use crate::stream::{Kind, Stream};
use crate::task::{self, Ask};

/// MAX_BODY caps `size=` so one request cannot make the server allocate without bound.
pub(crate) const MAX_BODY: u64 = 1 << 30;

/// MAX_INJECTIONS bounds the status injections one request may ask for (kept in a fixed array:
/// no allocation on the request path).
const MAX_INJECTIONS: usize = 4;

/// Route is the handler a path selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Any is every path not listed below: behaviour comes only from the query.
    Any,
    /// Work is `/api/work`, a flaky upstream (lognormal latency, random 500 and 429).
    Work,
    /// Stats is `/__stats`: the server's own counters, not counted as a request.
    Stats,
    /// Form is `/form` and Thanks `/thanks`: the survey form app (`form.rs`).
    Form(Page),
    /// Task is `/tasks/...`: the task app (`task.rs`).
    Task(Ask),
    /// Redirect is `/redirect?to=URL`: a 302 with `Location: URL` (another server, for the
    /// flows that cross hosts).
    Redirect,
    /// Socket is `/ws`: the WebSocket echo probe (`socket.rs`), its query its own.
    Socket(Probe),
}

/// Body is what the response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// Text is the tiny default body "ok\n".
    Text,
    /// Filler is N bytes of filler.
    Filler(u64),
    /// WorkJson is `{"time": MS}`, the simulated work time, like the upstream in seed 003.
    WorkJson,
    /// Stream is a streamed answer: `/sse`'s events or a completion's tokens (`stream.rs`).
    Stream(Stream),
}

/// Injection answers with `status` with probability `p`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Injection {
    /// status to answer with.
    pub(crate) status: StatusCode,
    /// p is the probability, in [0, 1].
    pub(crate) p: f64,
}

/// Injections is a small set of status injections whose probabilities add up to at most 1.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Injections {
    items: [Option<Injection>; MAX_INJECTIONS],
}

impl Injections {
    /// set adds an injection, replacing one for the same status.
    fn set(&mut self, status: StatusCode, p: f64) -> Result<(), String> {
        let slot = match self.items.iter().position(|i| match i {
            Some(i) => i.status == status,
            None => true,
        }) {
            Some(slot) => slot,
            None => return Err(format!("at most {MAX_INJECTIONS} injected statuses")),
        };
        self.items[slot] = Some(Injection { status, p });
        Ok(())
    }

    /// total is the probability that any injection fires.
    fn total(&self) -> f64 {
        self.items.iter().flatten().map(|i| i.p).sum()
    }

    /// pick maps one uniform draw in [0, 1) to an injected status, or `None` for the normal one.
    pub(crate) fn pick(&self, draw: f64) -> Option<StatusCode> {
        let mut edge = 0.0;
        for injection in self.items.iter().flatten() {
            edge += injection.p;
            if draw < edge {
                return Some(injection.status);
            }
        }
        None
    }

    /// is_empty is true when no status is injected (skips the random draw).
    pub(crate) fn is_empty(&self) -> bool {
        self.items.iter().all(Option::is_none)
    }
}

/// Behaviour is everything the server does for one request; parsed once, then executed by the
/// connection loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Behaviour {
    /// route is the handler the path selected.
    pub(crate) route: Route,
    /// body is what to send (`size=`).
    pub(crate) body: Body,
    /// chunked frames the body as chunks (`chunked=1`).
    pub(crate) chunked: bool,
    /// latency is drawn per request and waited before answering (`latency=`).
    pub(crate) latency: Latency,
    /// injections replace the 200 with other statuses at random (`status=&p=`, `pNNN=`).
    pub(crate) injections: Injections,
    /// stall holds answers during periodic windows (`stall=X/Y`).
    pub(crate) stall: Option<Stall>,
    /// close answers with `Connection: close`, then closes (`close=1`).
    pub(crate) close: bool,
    /// hang never answers; the connection stays open until the client leaves (`hang=1`).
    pub(crate) hang: bool,
    /// reset is the probability of aborting the connection with RST instead (`reset=P`).
    pub(crate) reset: f64,
}

impl Behaviour {
    /// plain is the default: answer "ok\n" at once.
    pub(crate) const fn plain(route: Route) -> Behaviour {
        Behaviour {
            route,
            body: Body::Text,
            chunked: false,
            latency: Latency::Zero,
            injections: Injections {
                items: [None; MAX_INJECTIONS],
            },
            stall: None,
            close: false,
            hang: false,
            reset: 0.0,
        }
    }

    /// work is `/api/work`'s default: lognormal latency (median 50 ms, sigma 0.5), 5% 500 and
    /// 5% 429, JSON body.
    fn work() -> Result<Behaviour, String> {
        let mut b = Behaviour::plain(Route::Work);
        b.body = Body::WorkJson;
        b.latency = Latency::parse("lognormal:50ms:0.5")?;
        b.injections.set(StatusCode::INTERNAL_SERVER_ERROR, 0.05)?;
        b.injections.set(StatusCode::TOO_MANY_REQUESTS, 0.05)?;
        Ok(b)
    }

    /// parse reads a request target ("/path?query", or absolute-form "http://host/path?query").
    /// The error is a one-line reason for a 400 response.
    pub(crate) fn parse(target: &str) -> Result<Behaviour, String> {
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        let path = strip_authority(path);
        let mut b = match path {
            "/__stats" => return Ok(Behaviour::plain(Route::Stats)),
            "/ws" => return Probe::parse(query).map(|p| Behaviour::plain(Route::Socket(p))),
            "/api/work" => Behaviour::work()?,
            "/form" => Behaviour::plain(Route::Form(Page::Form)),
            "/thanks" => Behaviour::plain(Route::Form(Page::Thanks)),
            "/sse" => Behaviour::streamed(Stream::sse()),
            "/v1/completions" => Behaviour::streamed(Stream::completion(Kind::Text)),
            "/v1/chat/completions" => Behaviour::streamed(Stream::completion(Kind::Chat)),
            "/redirect" => Behaviour::plain(Route::Redirect),
            other => Behaviour::plain(task::ask(other).map_or(Route::Any, Route::Task)),
        };
        if let Some(query) = query {
            b.apply_query(query)?;
        }
        Ok(b)
    }

    /// streamed is a stream probe's default behaviour.
    const fn streamed(stream: Stream) -> Behaviour {
        let mut b = Behaviour::plain(Route::Any);
        b.body = Body::Stream(stream);
        b
    }

    /// apply_query overrides the defaults with the query's parameters.
    fn apply_query(&mut self, query: &str) -> Result<(), String> {
        let mut status: Option<StatusCode> = None;
        let mut p: Option<f64> = None;
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let value = value.as_ref();
            match key.as_ref() {
                "size" => self.body = Body::Filler(parse_size(value)?),
                "chunked" => self.chunked = parse_flag("chunked", value)?,
                "latency" => self.latency = Latency::parse(value)?,
                "status" => status = Some(parse_status("status", value)?),
                "p" => p = Some(parse_probability("p", value)?),
                "stall" => self.stall = Some(Stall::parse(value)?),
                "close" => self.close = parse_flag("close", value)?,
                "hang" => self.hang = parse_flag("hang", value)?,
                "reset" => self.reset = parse_probability("reset", value)?,
                "first" | "every" | "events" | "tokens" => {
                    // A stream's pace; ignored (like any unknown key) on other routes.
                    if let Body::Stream(stream) = &mut self.body {
                        stream.set(key.as_ref(), value)?;
                    }
                }
                key => {
                    if let Some(code) = key.strip_prefix('p').filter(|c| is_status_digits(c)) {
                        let code = parse_status(key, code)?;
                        self.injections.set(code, parse_probability(key, value)?)?;
                    }
                }
            }
        }
        match (status, p) {
            (Some(status), p) => self.injections.set(status, p.unwrap_or(1.0))?,
            (None, Some(_)) => return Err("p needs status (status=500&p=0.1)".to_string()),
            (None, None) => {}
        }
        if self.injections.total() > 1.0 + 1e-9 {
            return Err("injected status probabilities add up to more than 1".to_string());
        }
        Ok(())
    }
}

/// redirect_to is the `to=` of a `/redirect` request target (percent-decoded), if any.
pub(crate) fn redirect_to(target: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "to")
        .map(|(_, v)| v.into_owned())
}

/// strip_authority turns an absolute-form target's "http://host/path" into "/path".
fn strip_authority(path: &str) -> &str {
    for scheme in ["http://", "https://"] {
        if let Some(rest) = path.strip_prefix(scheme) {
            return rest.find('/').map_or("/", |at| &rest[at..]);
        }
    }
    path
}

fn is_status_digits(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit())
}

fn parse_size(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(n) if n <= MAX_BODY => Ok(n),
        Ok(_) => Err(format!("bad size {value:?}: at most {MAX_BODY} bytes")),
        Err(_) => Err(format!("bad size {value:?}: expected a byte count")),
    }
}

fn parse_flag(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "true" | "yes" | "" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("bad {key} {value:?}: expected 1 or 0")),
    }
}

fn parse_probability(key: &str, value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "bad {key} {value:?}: expected a probability in [0, 1]"
        )),
    }
}

fn parse_status(key: &str, value: &str) -> Result<StatusCode, String> {
    match value.parse::<u16>() {
        Ok(code) if (200..=599).contains(&code) => {
            StatusCode::from_u16(code).map_err(|e| format!("bad {key} {value:?}: {e}"))
        }
        _ => Err(format!(
            "bad {key} {value:?}: expected a status code 200-599"
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn any(edit: impl FnOnce(&mut Behaviour)) -> Behaviour {
        let mut b = Behaviour::plain(Route::Any);
        edit(&mut b);
        b
    }

    fn injections(items: &[(u16, f64)]) -> Injections {
        let mut set = Injections::default();
        for (code, p) in items {
            set.set(StatusCode::from_u16(*code).expect("valid"), *p)
                .expect("room");
        }
        set
    }

    #[test]
    fn queries_parse() {
        let ms = Duration::from_millis;
        let cases: Vec<(&str, &str, Behaviour)> = vec![
            ("no query", "/", any(|_| {})),
            ("any path", "/a/b/c", any(|_| {})),
            ("empty query", "/x?", any(|_| {})),
            ("unknown keys ignored", "/x?cachebust=17&q", any(|_| {})),
            ("size", "/x?size=100", any(|b| b.body = Body::Filler(100))),
            ("size zero", "/x?size=0", any(|b| b.body = Body::Filler(0))),
            ("chunked", "/x?chunked=1", any(|b| b.chunked = true)),
            ("chunked false", "/x?chunked=0", any(|_| {})),
            (
                "latency",
                "/x?latency=20ms",
                any(|b| b.latency = Latency::Fixed(ms(20))),
            ),
            (
                "status default p",
                "/x?status=503",
                any(|b| b.injections = injections(&[(503, 1.0)])),
            ),
            (
                "status and p",
                "/x?status=500&p=0.1",
                any(|b| b.injections = injections(&[(500, 0.1)])),
            ),
            (
                "p then status",
                "/x?p=0.25&status=429",
                any(|b| b.injections = injections(&[(429, 0.25)])),
            ),
            (
                "pNNN keys",
                "/x?p500=0.1&p429=0.2",
                any(|b| b.injections = injections(&[(500, 0.1), (429, 0.2)])),
            ),
            (
                "stall",
                "/x?stall=1s/5s",
                any(|b| b.stall = Some(Stall::parse("1s/5s").expect("valid"))),
            ),
            ("percent-encoded", "/x?stall=1s%2F5s&close=1", {
                any(|b| {
                    b.stall = Some(Stall::parse("1s/5s").expect("valid"));
                    b.close = true;
                })
            }),
            ("close", "/x?close=1", any(|b| b.close = true)),
            ("hang", "/x?hang=true", any(|b| b.hang = true)),
            ("reset", "/x?reset=0.5", any(|b| b.reset = 0.5)),
            (
                "last value wins",
                "/x?size=1&size=2",
                any(|b| b.body = Body::Filler(2)),
            ),
            (
                "absolute form",
                "http://h:1/x?size=3",
                any(|b| b.body = Body::Filler(3)),
            ),
            ("stats", "/__stats?size=9", Behaviour::plain(Route::Stats)),
            ("form", "/form", Behaviour::plain(Route::Form(Page::Form))),
            (
                "thanks",
                "/thanks",
                Behaviour::plain(Route::Form(Page::Thanks)),
            ),
            ("form with query", "/form?latency=20ms", {
                let mut b = Behaviour::plain(Route::Form(Page::Form));
                b.latency = Latency::Fixed(ms(20));
                b
            }),
        ];
        for (label, target, want) in cases {
            assert_eq!(Behaviour::parse(target), Ok(want), "{label}: {target}");
        }
    }

    #[test]
    fn stream_queries_parse() {
        let ms = Duration::from_millis;
        let cases: Vec<(&str, &str, Behaviour)> = vec![
            (
                "sse",
                "/sse?first=200ms&every=20ms&events=50",
                Behaviour::streamed(Stream {
                    kind: Kind::Sse,
                    first: ms(200),
                    every: ms(20),
                    count: 50,
                }),
            ),
            (
                "chat completions",
                "/v1/chat/completions?tokens=4",
                Behaviour::streamed(Stream {
                    count: 4,
                    ..Stream::completion(Kind::Chat)
                }),
            ),
            ("stream keys elsewhere", "/x?events=5&first=1s", any(|_| {})),
        ];
        for (label, target, want) in cases {
            assert_eq!(Behaviour::parse(target), Ok(want), "{label}: {target}");
        }
    }

    #[test]
    fn a_redirect_says_where_to() {
        let target = "/redirect?to=http%3A%2F%2Fh%3A1%2Fx%3Fy%3D1&size=3";
        let b = Behaviour::parse(target).expect("valid");
        assert_eq!(b.route, Route::Redirect);
        assert_eq!(redirect_to(target).as_deref(), Some("http://h:1/x?y=1"));
        assert_eq!(redirect_to("/redirect?size=3"), None);
    }

    #[test]
    fn work_route_defaults_and_overrides() {
        let work = Behaviour::parse("/api/work").expect("valid");
        assert_eq!(work.route, Route::Work);
        assert_eq!(work.body, Body::WorkJson);
        assert!(matches!(work.latency, Latency::LogNormal(_)));
        assert_eq!(work.injections, injections(&[(500, 0.05), (429, 0.05)]));
        let tuned = Behaviour::parse("/api/work?latency=0&p500=0.2&p429=0").expect("valid");
        assert_eq!(tuned.latency, Latency::Zero);
        assert_eq!(tuned.injections, injections(&[(500, 0.2), (429, 0.0)]));
        let extra = Behaviour::parse("/api/work?status=503&p=0.1").expect("valid");
        assert_eq!(
            extra.injections,
            injections(&[(500, 0.05), (429, 0.05), (503, 0.1)])
        );
    }

    #[test]
    fn queries_reject() {
        let cases: &[(&str, &str)] = &[
            ("/x?size=-1", "bad size"),
            ("/x?size=abc", "bad size"),
            ("/x?size=1073741825", "at most"),
            ("/x?chunked=maybe", "bad chunked"),
            ("/x?latency=20", "missing unit"),
            ("/x?latency=uniform:5ms..1ms", "LOW must not exceed HIGH"),
            ("/x?status=99", "bad status"),
            ("/x?status=600", "bad status"),
            ("/x?status=abc", "bad status"),
            ("/x?p=0.5", "p needs status"),
            ("/x?status=500&p=1.5", "bad p"),
            ("/x?status=500&p=-0.1", "bad p"),
            ("/x?p500=0.7&p503=0.7", "add up to more than 1"),
            ("/x?p100=0.1", "bad p100"),
            (
                "/x?p200=0.1&p201=0.1&p202=0.1&p203=0.1&p204=0.1",
                "at most 4",
            ),
            ("/x?stall=5s", "bad stall"),
            ("/x?reset=2", "bad reset"),
            ("/x?hang=please", "bad hang"),
            ("/api/work?p500=0.96", "add up to more than 1"),
            ("/sse?events=x", "bad events"),
            ("/sse?every=20", "missing unit"),
            ("/v1/completions?tokens=2000000", "bad tokens"),
        ];
        for (target, want) in cases {
            let err = Behaviour::parse(target).expect_err(target);
            assert!(err.contains(want), "{target}: {err}");
            assert!(!err.contains('\n'), "{target}: one line");
        }
    }

    #[test]
    fn injection_draws_map_to_statuses() {
        let set = injections(&[(500, 0.1), (429, 0.2)]);
        let cases: &[(f64, Option<u16>)] = &[
            (0.0, Some(500)),
            (0.0999, Some(500)),
            (0.1, Some(429)),
            (0.2999, Some(429)),
            (0.3001, None),
            (0.9999, None),
        ];
        for (draw, want) in cases {
            assert_eq!(set.pick(*draw).map(|s| s.as_u16()), *want, "draw {draw}");
        }
        assert!(Injections::default().is_empty());
        assert_eq!(Injections::default().pick(0.0), None);
    }
}
