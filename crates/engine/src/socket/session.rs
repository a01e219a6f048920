//! One socket's life over a run: open it, send messages (after each reply in the closed model,
//! on a schedule in the open one), match and time the replies, and when the socket ends early
//! count why and open another; at the run's end wait for the replies still due, then close.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::time::{sleep_until, timeout, timeout_at};
use tokio_websockets::{ClientBuilder, CloseCode, MaybeTlsStream, Message, WebSocketStream};

use crate::control::RunControl;
use crate::socket::config::Plan;
use crate::socket::matcher::{Outstanding, Rule};
use crate::socket::tally::{End, Tally};
use crate::tls::TlsSettings;

/// REOPEN_PAUSE is how long a socket that failed to open waits before trying again, so a
/// dead server costs a few attempts a second, not a busy loop.
const REOPEN_PAUSE: Duration = Duration::from_millis(100);

/// CLOSE_WAIT bounds the wait for the server's answer to our close frame at the end.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Clock is what every socket of a run reads to know whether to send: the run's start and
/// end, the caller's stop, and the messages left to send when the run has a count.
#[derive(Debug)]
pub(crate) struct Clock {
    pub(crate) start: Instant,
    pub(crate) end: Option<Instant>,
    pub(crate) control: Arc<RunControl>,
    pub(crate) budget: Option<Arc<AtomicU64>>,
}

impl Clock {
    /// sending: the run still sends at `now`.
    fn sending(&self, now: Instant) -> bool {
        !self.control.is_stopped()
            && self.end.is_none_or(|end| now < end)
            && self
                .budget
                .as_ref()
                .is_none_or(|b| b.load(Ordering::Relaxed) > 0)
    }

    /// take claims one message of the count (always, without one).
    fn take(&self) -> bool {
        self.budget.as_ref().is_none_or(|b| {
            b.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok()
        })
    }
}

/// Slot is one of the run's sockets: its place, the plan, its thread's tally and the clock.
pub(crate) struct Slot {
    pub(crate) index: u64,
    pub(crate) plan: Rc<Plan>,
    pub(crate) tally: Rc<RefCell<Tally>>,
    pub(crate) clock: Rc<Clock>,
}

/// Pace is when a socket sends: after each reply from `next` on (closed model: `next` is its
/// first send, spread over the plan's stagger), or every `every` from `next` (open model: the
/// run's rate shared over its sockets, their starts staggered).
struct Pace {
    every: Option<Duration>,
    next: Instant,
}

impl Slot {
    /// run keeps this socket open and sending until the run ends, starting with `first`, the
    /// socket opened (or not) before the run's clock started.
    pub(crate) async fn run(self, first: Result<Socket, End>) {
        let mut rule = self.plan.rule.clone();
        let mut pace = match self.plan.rate {
            None => Pace {
                every: None,
                next: self.clock.start
                    + self.plan.stagger.map_or(Duration::ZERO, |s| {
                        s.mul_f64(self.index as f64 / self.plan.sockets as f64)
                    }),
            },
            Some(rate) => Pace {
                every: Some(Duration::from_secs_f64(self.plan.sockets as f64 / rate)),
                next: self.clock.start + Duration::from_secs_f64(self.index as f64 / rate),
            },
        };
        let mut id = 0u64;
        let mut first = Some(first);
        while self.clock.sending(Instant::now()) {
            let opened = match first.take() {
                Some(opened) => opened,
                None => open(&self.plan).await,
            };
            match opened {
                Ok(ws) => {
                    self.tally.borrow_mut().books.opened += 1;
                    let end = self.drive(ws, &mut rule, &mut id, &mut pace).await;
                    if end.is_none() {
                        return;
                    }
                }
                Err(end) => {
                    self.tally.borrow_mut().ended(end, 0);
                    let resume = Instant::now() + REOPEN_PAUSE;
                    sleep_until(self.clock.end.map_or(resume, |e| e.min(resume)).into()).await;
                }
            }
        }
    }

    /// drive sends and reads on one open socket; None when the run ended and the socket
    /// closed in order, else why it ended (counted, with the messages it lost).
    async fn drive(
        &self,
        mut ws: Socket,
        rule: &mut Rule,
        id: &mut u64,
        pace: &mut Pace,
    ) -> Option<End> {
        let mut out = Outstanding::default();
        let timeout = self.plan.timeout;
        loop {
            let now = Instant::now();
            let sending = self.clock.sending(now);
            let due = now >= pace.next && (pace.every.is_some() || out.is_empty());
            if sending && due {
                if !self.clock.take() {
                    continue;
                }
                // The open model times from the intended send (a late send is the client's
                // delay, not the server's: no coordinated omission); the closed one from now.
                let start = if pace.every.is_some() { pace.next } else { now };
                let text = rule.message(*id);
                let len = text.len();
                if ws.send(Message::text(text)).await.is_err() {
                    // The count was claimed for a message that never left: give it back.
                    if let Some(b) = &self.clock.budget {
                        b.fetch_add(1, Ordering::Relaxed);
                    }
                    return Some(self.end(End::Dropped, &mut out));
                }
                self.tally.borrow_mut().sent_one(len, Instant::now());
                out.push(*id, start);
                *id += 1;
                if let Some(every) = pace.every {
                    pace.next += every;
                }
                continue;
            }
            if !sending && out.is_empty() {
                return self.finish(ws).await;
            }
            let next_send = (sending && now < pace.next).then_some(pace.next);
            let end_at = self.clock.end.filter(|_| sending);
            let expiry = out.oldest().map(|t| t + timeout);
            let never = now + Duration::from_secs(86_400);
            tokio::select! {
                message = ws.next() => match message {
                    Some(Ok(m)) if m.is_text() || m.is_binary() => {
                        let now = Instant::now();
                        let payload = m.as_payload();
                        let start = out.answer(rule, payload);
                        self.tally.borrow_mut().received_one(payload.len(), start, now);
                    }
                    Some(Ok(m)) if m.is_close() => {
                        let code = m.as_close().map_or(1005, |(code, _)| u16::from(code));
                        // Our answer to the server's close goes out as the stream ends.
                        let _ = timeout_at((now + CLOSE_WAIT).into(), ws.close()).await;
                        return Some(self.end(End::Closed(code), &mut out));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(tokio_websockets::Error::Io(_))) | None => {
                        return Some(self.end(End::Dropped, &mut out));
                    }
                    Some(Err(_)) => return Some(self.end(End::Protocol, &mut out)),
                },
                _ = sleep_until(next_send.unwrap_or(never).into()), if next_send.is_some() => {}
                _ = sleep_until(end_at.unwrap_or(never).into()), if end_at.is_some() => {}
                _ = sleep_until(expiry.unwrap_or(never).into()), if expiry.is_some() => {
                    // A reply this late may never come, and under `next` a late one would
                    // answer the wrong message: the socket is given up and another opened.
                    return Some(self.end(End::Timeout, &mut out));
                }
                _ = self.clock.control.stopped(), if sending => {}
            }
        }
    }

    /// end counts an early end with the messages it lost.
    fn end(&self, end: End, out: &mut Outstanding) -> End {
        self.tally.borrow_mut().ended(end, out.clear());
        end
    }

    /// finish closes a socket whose messages are all answered: our close frame, then the
    /// server's; a connection that ends without one is counted as dropped.
    async fn finish(&self, mut ws: Socket) -> Option<End> {
        let mut out = Outstanding::default();
        let close = Message::close(Some(CloseCode::NORMAL_CLOSURE), "");
        if ws.send(close).await.is_err() {
            return Some(self.end(End::Dropped, &mut out));
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        loop {
            match timeout_at(deadline.into(), ws.next()).await {
                // The server's answer to our close; a code other than ours means it was
                // closing on its own as we did (the frames crossed): counted as its close.
                Ok(Some(Ok(m))) if m.is_close() => {
                    let code = m.as_close().map_or(1005, |(code, _)| u16::from(code));
                    if code != 1000 && code != 1005 {
                        return Some(self.end(End::Closed(code), &mut out));
                    }
                    return None;
                }
                Ok(Some(Ok(m))) if m.is_text() || m.is_binary() => {
                    let mut tally = self.tally.borrow_mut();
                    tally.received_one(m.as_payload().len(), None, Instant::now());
                }
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(_)) | None) => return Some(self.end(End::Dropped, &mut out)),
                // A server that never answers our close: nothing was lost, the socket goes.
                Err(_) => return None,
            }
        }
    }
}

/// Socket is one open WebSocket, over TLS for `wss://`.
pub(crate) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// open connects (with a TLS handshake for `wss://`) and upgrades one socket of the run
/// ([`connect`] with the plan's target and timeout).
pub(crate) async fn open(plan: &Plan) -> Result<Socket, End> {
    connect(plan.addr, plan.uri.clone(), plan.tls.as_ref(), plan.timeout).await
}

/// connect connects to `addr` (with a TLS handshake under `tls`) and upgrades to the
/// WebSocket of `uri`, each step within `wait`: a run's socket, or a flow's socket step. A
/// failed TLS handshake is a `connect` error, as in HTTP runs (the run's preflight has said
/// why in words).
pub(crate) async fn connect(
    addr: SocketAddr,
    uri: http::Uri,
    tls: Option<&TlsSettings>,
    wait: Duration,
) -> Result<Socket, End> {
    let tcp = match timeout(wait, TcpStream::connect(addr)).await {
        Ok(Ok(tcp)) => tcp,
        _ => return Err(End::Connect),
    };
    let _ = tcp.set_nodelay(true);
    let stream = match tls {
        None => MaybeTlsStream::Plain(tcp),
        Some(tls) => {
            let (connector, name) = tls.http1_connector();
            match timeout(wait, connector.connect(name, tcp)).await {
                Ok(Ok(stream)) => MaybeTlsStream::Rustls(stream),
                _ => return Err(End::Connect),
            }
        }
    };
    let builder = ClientBuilder::from_uri(uri);
    match timeout(wait, builder.connect_on(stream)).await {
        Ok(Ok((ws, _))) => Ok(ws),
        _ => Err(End::Handshake),
    }
}
