//! A flow's WebSocket step on the lane ([`crate::scenario::ws`]): the socket opened on a
//! connection of its own (the lane's HTTP connection stays as it is), each message booked
//! as a request of the step's name (sent, then answered with its round trip as the latency,
//! or failed with the reason the socket ended), and in the run's socket books, where every
//! message sent is answered or lost.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::time::timeout_at;
use tokio_websockets::{CloseCode, Message};

use super::Lane;
use crate::failure::ErrorClass;
use crate::flight::{Flight, Sent};
use crate::metrics::{Recorder, Response};
use crate::scenario::ws::{Matcher, SocketStep};
use crate::shared::Shared;
use crate::socket::books::SocketBooks;
use crate::socket::session::{connect, Socket};
use crate::socket::tally::End;
use crate::tls::TlsSettings;

/// STATUS is the status a message's answer is booked with: the socket's, 101 Switching
/// Protocols (a message has none of its own).
const STATUS: u16 = 101;

/// CLOSE_WAIT bounds the wait for the server's answer to the step's close frame.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

impl Lane {
    /// socket_step runs WebSocket step `step` on `url` with `messages` (rendered), meant to
    /// start at `intended` (see [`crate::scenario::executor::Transport::socket`]).
    pub(super) async fn socket_step(
        &mut self,
        s: &Rc<Shared>,
        step: &SocketStep,
        url: &str,
        messages: &[Bytes],
        intended: Instant,
    ) -> bool {
        let wait = step.timeout.unwrap_or(s.job.cfg.timeout);
        let mut ws = match open(s, url, wait).await {
            Ok(ws) => ws,
            Err((end, why)) => {
                // Nothing was sent: one failed request of the step's name says why.
                let now = Instant::now();
                let sent = self.depart(s, intended, now, step.stat, 0);
                self.failed(s, &sent, end, &why);
                return false;
            }
        };
        let mut books = s.rec.borrow_mut().measured(intended);
        if books {
            book(s, step.stat, |b| b.opened += 1);
        }
        for _ in 0..step.count {
            for m in messages {
                let now = Instant::now();
                let sent = self.depart(s, now, now, step.stat, m.len());
                books = s.rec.borrow().measured(now);
                if ws.send(Message::text(m.clone())).await.is_err() {
                    // It never left: a failed write, not a message sent.
                    let why = "websocket: the socket was gone before the message left";
                    self.failed_as(s, &sent, ErrorClass::Write, why);
                    return false;
                }
                if books {
                    book(s, step.stat, |b| b.messages.sent += 1);
                }
                let matcher = Matcher::new(step.field.as_deref(), m);
                match reply(s, &mut ws, &matcher, now + wait, step.stat, books).await {
                    Ok((at, bytes_in)) => self.answered(s, &sent, at, bytes_in),
                    Err(end) => {
                        if books {
                            book(s, step.stat, |b| b.messages.lose(&end.class(), 1));
                        }
                        self.failed(s, &sent, end, &end.class());
                        if let End::Closed(_) = end {
                            // Our answer to the server's close, as the stream ends.
                            let _ =
                                timeout_at((Instant::now() + CLOSE_WAIT).into(), ws.close()).await;
                        }
                        return false;
                    }
                }
            }
        }
        close(s, &mut ws, step.stat, books).await;
        true
    }

    /// depart books a message (or, with `len` 0 and the socket unopened, the step) as sent
    /// at `now`, and as under way on this lane until it lands (a run cut short books it as
    /// unfinished, as it does a request).
    fn depart(
        &mut self,
        s: &Shared,
        intended: Instant,
        now: Instant,
        stat: usize,
        len: usize,
    ) -> Sent {
        s.rec
            .borrow_mut()
            .send(now, intended, len as u64, false, false);
        let sent = Sent {
            intended,
            from: now,
            sent_at: now,
            stat,
        };
        s.flights.depart(self.slot, Flight::Out(sent));
        sent
    }

    /// answered books the reply to `sent`, read at `at`.
    fn answered(&mut self, s: &Shared, sent: &Sent, at: Instant, bytes_in: usize) {
        s.flights.land(self.slot);
        self.clock = Some(at);
        let latency = at.saturating_duration_since(sent.sent_at);
        s.rec.borrow_mut().response(&Response {
            intended: sent.intended,
            stat: sent.stat,
            status: STATUS,
            latency,
            service: latency,
            bytes_in: bytes_in as u64,
            expected: false,
            grpc: false,
            at,
            ended: at,
        });
    }

    /// failed books `sent` as failed because the socket ended with `end`, for `why`.
    fn failed(&mut self, s: &Shared, sent: &Sent, end: End, why: &str) {
        let class = match end {
            End::Connect => ErrorClass::Connect,
            End::Handshake | End::Protocol => ErrorClass::Protocol,
            End::Dropped => ErrorClass::Reset,
            End::Closed(_) => ErrorClass::Read,
            End::Timeout => ErrorClass::Timeout,
        };
        self.failed_as(s, sent, class, why);
    }

    /// failed_as books `sent` as a failure of `class`, with `why` its reason under its name.
    fn failed_as(&mut self, s: &Shared, sent: &Sent, class: ErrorClass, why: &str) {
        s.flights.land(self.slot);
        let now = Instant::now();
        self.clock = Some(now);
        let mut rec = s.rec.borrow_mut();
        rec.error(sent, class, now);
        if rec.measured(sent.intended) {
            rec.totals.flow.reason(sent.stat, why);
        }
    }
}

/// open resolves `url`'s host and opens its socket (TLS for wss://, with the run's trust
/// settings), each step within `wait`; the error is the end it met and why, in words.
async fn open(s: &Shared, url: &str, wait: Duration) -> Result<Socket, (End, String)> {
    let bad = |why: String| (End::Connect, format!("websocket: bad URL {url:?}: {why}"));
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| bad(e.to_string()))?;
    let secure = match uri.scheme_str() {
        Some("ws") => false,
        Some("wss") => true,
        _ => return Err(bad("not ws:// or wss://".into())),
    };
    let host = uri
        .host()
        .ok_or_else(|| bad("no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
    let looked = tokio::time::timeout(wait, tokio::net::lookup_host((host.as_str(), port))).await;
    let addr: SocketAddr = match looked {
        Ok(Ok(mut addrs)) => addrs.next(),
        _ => None,
    }
    .ok_or_else(|| (End::Connect, format!("websocket: cannot resolve {host}")))?;
    let cfg = &s.job.cfg;
    let tls = match (secure, &cfg.tls) {
        (false, _) => None,
        // The run's own https host: its settings, built once.
        (true, Some(t)) if cfg.target.host.eq_ignore_ascii_case(&host) => Some(t.clone()),
        (true, _) => Some(
            TlsSettings::new(&host, cfg.insecure, cfg.ca_file.as_deref())
                .map_err(|e| (End::Connect, format!("websocket: {e}")))?,
        ),
    };
    connect(addr, uri, tls.as_ref(), wait).await.map_err(|end| {
        let why = match end {
            End::Handshake => "websocket: the upgrade was refused",
            _ => "websocket: cannot connect",
        };
        (end, why.to_string())
    })
}

/// reply reads `ws` until the message `matcher` looks for comes (when, and its size), or
/// the socket ends or `deadline` passes (why); the data messages read are counted in the
/// step's books (`books`: measured), those that answer nothing as unmatched.
async fn reply(
    s: &Shared,
    ws: &mut Socket,
    matcher: &Matcher<'_>,
    deadline: Instant,
    stat: usize,
    books: bool,
) -> Result<(Instant, usize), End> {
    loop {
        let next = match timeout_at(deadline.into(), ws.next()).await {
            Ok(next) => next,
            Err(_) => return Err(End::Timeout),
        };
        match next {
            Some(Ok(m)) if m.is_text() || m.is_binary() => {
                let at = Instant::now();
                let answers = matcher.answers(m.as_payload());
                if books {
                    count(&mut s.rec.borrow_mut(), stat, answers);
                }
                if answers {
                    return Ok((at, m.as_payload().len()));
                }
            }
            Some(Ok(m)) if m.is_close() => {
                return Err(End::Closed(
                    m.as_close().map_or(1005, |(code, _)| u16::from(code)),
                ))
            }
            Some(Ok(_)) => {}
            Some(Err(tokio_websockets::Error::Io(_))) | None => return Err(End::Dropped),
            Some(Err(_)) => return Err(End::Protocol),
        }
    }
}

/// book updates step `stat`'s socket books in the run's totals.
fn book(s: &Shared, stat: usize, update: impl FnOnce(&mut SocketBooks)) {
    update(s.rec.borrow_mut().totals.flow.socket(stat));
}

/// count books a data message read on step `stat`'s socket: an answer, or unmatched.
fn count(rec: &mut Recorder, stat: usize, answers: bool) {
    rec.totals.flow.socket(stat).messages.read(answers);
}

/// close ends a step's socket in order: our close frame, then the server's (a data message
/// that comes first is counted, unmatched), within [`CLOSE_WAIT`].
async fn close(s: &Shared, ws: &mut Socket, stat: usize, books: bool) {
    if ws
        .send(Message::close(Some(CloseCode::NORMAL_CLOSURE), ""))
        .await
        .is_err()
    {
        return;
    }
    let deadline = Instant::now() + CLOSE_WAIT;
    while let Ok(Some(Ok(m))) = timeout_at(deadline.into(), ws.next()).await {
        if m.is_close() {
            return;
        }
        if books && (m.is_text() || m.is_binary()) {
            count(&mut s.rec.borrow_mut(), stat, false);
        }
    }
}
