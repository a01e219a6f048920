//! The wire: the one seam between a lane and the protocol it speaks.
//!
//! A lane asks its [`Wire`] "send this request, tell me when the response is complete" and
//! records what comes back ([`Exchange`] or [`Failure`]); it never sees framing, sockets or
//! TLS. HTTP/1.1 ([`crate::conn::Conn`]) is one kind of wire, HTTP/2 ([`crate::http2`]) the
//! other. An enum rather than a trait
//! object: the kinds are few and known, a `match` costs nothing next to a syscall, and the
//! futures stay unboxed (an `async fn` in a `dyn` trait would box one per request).

use std::time::Instant;

use crate::conn::{Conn, Deadline, Exchange, Failure};
use crate::http2::Stream;
use crate::message::Response;
pub use crate::prepared::What;
use crate::stream::Watch;

/// Outgoing is one request as the lane hands it to the wire, and what the wire must know
/// about it.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// what: the request itself.
    pub what: What<'a>,
    /// head: a HEAD request (its response has no body whatever its headers say).
    pub head: bool,
    /// idempotent: safe to send again after a kept-alive connection closed under it.
    pub idempotent: bool,
    /// stream: time its answer as it arrives (`--stream`, or a scenario's `stream=True`),
    /// when the run has a watch on its connections.
    pub stream: bool,
    /// grpc: a gRPC call (a `grpc://` run's, or a flow's `u.grpc`): its status is the call's
    /// `grpc-status`, 0 being OK.
    pub grpc: bool,
}

/// Wire is a lane's connection, of the protocol the run speaks.
#[derive(Debug)]
pub enum Wire {
    /// H1: one HTTP/1.1 connection per lane, one request at a time.
    H1(Conn),
    /// H2: one stream of an HTTP/2 connection shared by the lanes of a group.
    H2(Stream),
}

impl Wire {
    /// is_open says whether this lane holds an open connection.
    pub fn is_open(&self) -> bool {
        match self {
            Wire::H1(c) => c.is_open(),
            Wire::H2(s) => s.is_open(),
        }
    }

    /// close lets go of the lane's connection; returns whether one was open.
    pub fn close(&mut self) -> bool {
        match self {
            Wire::H1(c) => c.close(),
            Wire::H2(s) => s.close(),
        }
    }

    /// open connects ahead of need (see [`Conn::open`]); true when it opened one.
    pub async fn open(&mut self, deadline: &mut Deadline) -> bool {
        match self {
            Wire::H1(c) => c.open(deadline).await,
            Wire::H2(s) => s.open(deadline).await,
        }
    }

    /// size_at_send is what sending `what` adds to the run's bytes out as it goes: HTTP/1.1's
    /// text, whose size is known before it is written; nothing for HTTP/2, whose frames h2
    /// writes later, HPACK-compressed, and which are counted as written ([`Wire::wrote`]).
    pub fn size_at_send(&self, what: What<'_>) -> u64 {
        match self {
            Wire::H1(_) => what.size() as u64,
            Wire::H2(_) => 0,
        }
    }

    /// wrote is what the connection wrote since it was last asked that the send did not
    /// count: HTTP/2's frames, counted at its socket (`http2_traffic.rs`); 0 for HTTP/1.1.
    pub fn wrote(&self) -> u64 {
        match self {
            Wire::H1(_) => 0,
            Wire::H2(s) => s.wrote(),
        }
    }

    /// exchange sends `req` and waits for its whole response, or fails once `deadline`
    /// passes; `now` is the caller's clock, reused as the send time when nothing must be
    /// opened first.
    pub async fn exchange(
        &mut self,
        req: Outgoing<'_>,
        deadline: &mut Deadline,
        now: Instant,
    ) -> Result<Exchange, Failure> {
        match self {
            Wire::H1(c) => match req.what {
                What::Prepared(p) => {
                    c.exchange(&p.h1, req.head, req.idempotent, deadline, now)
                        .await
                }
                What::Message(m) => {
                    let mut text = std::mem::take(&mut c.text);
                    crate::http::write_request(m, None, &mut text);
                    let done = c
                        .exchange(&text, req.head, req.idempotent, deadline, now)
                        .await;
                    c.text = text;
                    done
                }
            },
            Wire::H2(s) => s.exchange(req.what, deadline, now).await,
        }
    }

    /// watch is the clock on the last response as it arrived (`--stream`), None without one.
    pub fn watch(&self) -> Option<&Watch> {
        match self {
            Wire::H1(c) => c.watch.as_deref(),
            Wire::H2(s) => s.watch.as_deref(),
        }
    }

    /// watch_next starts the watch (if any) on the response to a request sent at `now`;
    /// `measured`: past the warm-up.
    pub fn watch_next(&mut self, measured: bool, now: Instant) {
        let watch = match self {
            Wire::H1(c) => c.watch.as_deref_mut(),
            Wire::H2(s) => s.watch.as_deref_mut(),
        };
        if let Some(w) = watch {
            w.begin(measured, now);
        }
    }

    /// capture starts keeping each response (its status, header fields and body payload, as
    /// the protocol read them) in `into`, for a scenario's checks; [`Wire::captured`] hands
    /// it back.
    pub fn capture(&mut self, into: Response) {
        match self {
            Wire::H1(c) => c.capture = Some(into),
            Wire::H2(s) => s.capture = Some(into),
        }
    }

    /// shed gives back an HTTP/1.1 connection's widened read buffer while a scenario's VU
    /// rests ([`crate::conn::Conn::shed`]); an HTTP/2 session keeps its own.
    pub fn shed(&mut self) {
        if let Wire::H1(c) = self {
            c.shed();
        }
    }

    /// captured stops capturing and returns what was kept.
    pub fn captured(&mut self) -> Option<Response> {
        match self {
            Wire::H1(c) => c.capture.take(),
            Wire::H2(s) => s.capture.take(),
        }
    }
}
