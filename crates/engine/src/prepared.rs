//! A request as the wire takes it ([`What`]): a scenario's [`Request`] as its flow wrote it,
//! which each protocol renders per request, or a plain run's one request [`Prepared`] once in
//! each protocol's own form when the plan is built (HTTP/1.1's text, HTTP/2's h2 request), so
//! that a plain run's hot path renders nothing and neither protocol reads the other's bytes.

use crate::http::write_request;
use crate::http2_message::Template;
use crate::message::Request;

/// Prepared is a plain run's one request, made once in the form each protocol sends.
#[derive(Debug)]
pub struct Prepared {
    /// h1: the request as HTTP/1.1 text.
    pub(crate) h1: Box<[u8]>,
    /// h2: the request as h2 sends it; None when HTTP/2 cannot carry it (a header h2
    /// refuses), which fails each of its HTTP/2 sends as a protocol error.
    pub(crate) h2: Option<Template>,
}

impl Prepared {
    /// new prepares `req` to an `https` (or http) origin; `via` is the origin
    /// (`http://host:port`) a forward proxy is asked for, which HTTP/1.1 names in front of the
    /// target (absolute form).
    pub fn new(req: &Request, https: bool, via: Option<&str>) -> Prepared {
        let mut h1 = Vec::new();
        write_request(req, via, &mut h1);
        Prepared {
            h1: h1.into(),
            h2: Template::of(req, https).ok(),
        }
    }
}

/// What is a request as the lane hands it to the wire.
#[derive(Debug, Clone, Copy)]
pub enum What<'a> {
    /// Prepared: a plain run's one request, in each protocol's form already.
    Prepared(&'a Prepared),
    /// Message: a scenario's request as the flow wrote it; each protocol renders it its own
    /// way (HTTP/1.1's text by `http::write_request`, HTTP/2's by `http2_message.rs`).
    Message(&'a Request),
}

impl What<'_> {
    /// size is the request's size in bytes as HTTP/1.1 carries it: its bytes out (HTTP/2
    /// counts its own frames as h2 writes them, `http2_traffic.rs`).
    pub fn size(&self) -> usize {
        match self {
            What::Prepared(p) => p.h1.len(),
            What::Message(m) => m.size(),
        }
    }
}
