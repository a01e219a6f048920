//! One keep-alive HTTP/1.1 connection and the request/response exchange on it.
//!
//! This is the hot path, written to spend as few syscalls and allocations per request as the
//! protocol allows: the request bytes are written straight away with `try_write` (no readiness
//! wait, the socket is almost always writable); the response is read with `try_read` into a
//! buffer owned by the connection; and once a response is complete with nothing left over we
//! drop tokio's cached read readiness ourselves, so the next exchange parks on epoll at once
//! instead of paying a read that would only return EAGAIN. The per-request timeout is one
//! lazily re-armed `Sleep` per lane ([`Deadline`]): no timer work per request.

use std::future::{poll_fn, Future};
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::failure::ErrorClass;
use crate::http::ResponseReader;
use crate::message::Response;
use crate::metrics::ConnectionGauge;
pub use crate::stamp::Stamps;
use crate::stream::{Sink, Watch};
use crate::tls::{self, TlsSettings};

/// READ_BUF is the read buffer of a connection that has met a response larger than
/// [`READ_BUF_FIRST`] (wrk's 8 KiB); bodies are counted through it, never kept.
pub const READ_BUF: usize = 8 * 1024;

/// READ_BUF_FIRST is the read buffer a connection starts with: most answers (an API's JSON, a
/// task's status) fit in one, and ten thousand VUs each holding 8 KiB they never fill took
/// 80 MB. The first read that fills it grows it to [`READ_BUF`] at once, for the connection's
/// life: one allocation per connection, none per request.
pub const READ_BUF_FIRST: usize = 1024;

/// MAX_HEAD is the largest response head we accept (the reader enforces it).
pub const MAX_HEAD: usize = crate::http::MAX_HEAD;

#[path = "deadline.rs"]
mod deadline;
pub use deadline::Deadline;

#[path = "conn_buf.rs"]
mod buf;
use buf::ReadBuf;

#[path = "conn_write.rs"]
mod write;
use write::write_all;

#[path = "conn_idle.rs"]
mod idle;

/// Exchange is the outcome of one successful request/response.
#[derive(Debug, Clone, Copy)]
pub struct Exchange {
    /// sent_at: when the first request byte was written (service time starts here).
    pub sent_at: Instant,
    /// status: the response status.
    pub status: u16,
    /// bytes_in: bytes read for this response (head, body and framing; HTTP/2: see http2.rs).
    pub bytes_in: u64,
    /// connects: new connections this exchange opened (0, or 1-2 with a stale retry).
    pub connects: u32,
    /// retries: times the request was sent again on a fresh connection (0 or 1).
    pub retries: u32,
    /// arrived: when the kernel received the response's last bytes, if it stamped them (see
    /// [`crate::stamp`]); None means "when it was read".
    pub arrived: Option<Instant>,
    /// left: when the request left, by the kernel's transmit stamp (see
    /// [`crate::sendstamp`]); None where the kernel gave none: `sent_at` stands in.
    pub left: Option<Instant>,
    /// handshake: the server's share of this exchange's connects, the kernel's handshake
    /// times ([`crate::sendstamp::handshake`]); None: the whole connect is its (https, a
    /// retransmitted SYN).
    pub handshake: Option<Duration>,
}

/// Failure is a failed exchange: its class, and whether a connection was opened first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// class: why it failed.
    pub class: ErrorClass,
    /// connects: new connections opened before failing.
    pub connects: u32,
    /// retries: times the request was sent again before failing (0 or 1).
    pub retries: u32,
}

/// Conn is a lane's connection: the socket (when open), its TLS session (https), its read
/// buffer and parser.
#[derive(Debug)]
pub struct Conn {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    tls_settings: Option<TlsSettings>,
    tls: Option<Box<rustls::ClientConnection>>,
    /// stamps: the kernel stamps this connection asks for.
    stamps: Stamps,
    /// handshake: the kernel's handshake time of the last connect ([`Exchange::handshake`]).
    handshake: Option<Duration>,
    /// sends: the socket's transmit stamps, when asked for and the kernel gives them.
    sends: Option<crate::sendstamp::Sends>,
    buf: ReadBuf,
    reader: ResponseReader,
    /// drained: the socket's read readiness was dropped after the last response (round_trip).
    drained: bool,
    /// used_at: when the socket was opened or last sent on ([`Conn::gone_while_idle`]).
    used_at: Instant,
    served: u64,
    /// gauge: the run's open connections, kept as sockets open and close.
    gauge: Arc<ConnectionGauge>,
    /// capture: when set (scenario requests), each response is kept in it as the reader
    /// frames it (its head's fields, its body's payload); None on the single-request path,
    /// which keeps nothing.
    pub capture: Option<Response>,
    /// text: a scenario's request rendered as HTTP/1.1 (reused; [`crate::wire::Wire::exchange`]).
    pub text: Vec<u8>,
    /// watch: `--stream`'s clock on each response as it arrives (see [`crate::stream`]).
    pub watch: Option<Box<Watch>>,
    /// tunnel: the CONNECT a socket to a proxy opens with (see [`crate::proxy`]).
    pub tunnel: Option<Arc<[u8]>>,
}

impl Conn {
    /// new makes a closed connection to `addr` (TLS when `tls` is given; the kernel stamps
    /// in `stamps`), counted in `gauge` while open; it connects on first use.
    pub fn new(
        addr: SocketAddr,
        tls: Option<TlsSettings>,
        stamps: Stamps,
        gauge: Arc<ConnectionGauge>,
    ) -> Self {
        Conn {
            addr,
            stream: None,
            tls_settings: tls,
            tls: None,
            stamps,
            handshake: None,
            sends: None,
            buf: ReadBuf {
                data: vec![0; READ_BUF_FIRST],
                start: 0,
                end: 0,
            },
            reader: ResponseReader::new(false),
            drained: false,
            used_at: Instant::now(),
            served: 0,
            gauge,
            capture: None,
            text: Vec::new(),
            watch: None,
            tunnel: None,
        }
    }

    /// watched makes the connection time each response as it arrives (`--stream`) into `sink`.
    pub fn watched(mut self, sink: Option<Sink>) -> Self {
        self.watch = sink.map(|sink| Box::new(Watch::new(sink)));
        self.reader = ResponseReader::new(false).watching(self.watch.is_some());
        self
    }

    /// is_open says whether a socket is open.
    pub fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// shed gives back the read buffer a large answer widened (see [`ReadBuf::shrink`]):
    /// a scenario's lane calls it as its VU goes idle (a think, a poll's interval), the
    /// single-URL path only when a ramp leaves its lane idle.
    pub fn shed(&mut self) {
        self.buf.shrink(READ_BUF_FIRST);
    }

    /// close drops the socket; returns whether one was open.
    pub fn close(&mut self) -> bool {
        self.buf.clear();
        self.drained = false;
        self.served = 0;
        self.tls = None;
        self.sends = None;
        let was_open = self.stream.take().is_some();
        if was_open {
            self.gauge.closed();
        }
        was_open
    }

    /// exchange sends `request` and reads its response, failing with a timeout once
    /// `deadline` passes (the caller sets it). `now` is the caller's current time, reused as
    /// the send time when no connect is needed (one clock read less per request).
    ///
    /// A connection this exchange did not open (a kept-alive or pre-opened one) that the
    /// server is known to have closed while it sat idle is replaced before anything is
    /// written (see conn_idle.rs). One that closes under the request (the close crossing it)
    /// has the request sent once more on a fresh connection, and counted (`retries`), when it
    /// cannot have done anything on the server:
    /// when the write itself failed before any byte left, or, for an `idempotent` method only,
    /// when the connection gave a clean EOF before any response byte. A POST that met that EOF
    /// may have been received and acted on, so it fails as a `reset` instead of being sent
    /// twice. A reset while reading is never retried: a server that resets on a request is an
    /// error the user must see. On failure the connection is closed.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        head: bool,
        idempotent: bool,
        deadline: &mut Deadline,
        now: Instant,
    ) -> Result<Exchange, Failure> {
        let mut connects = 0;
        let mut retries = 0;
        let mut handshake = Some(Duration::ZERO);
        loop {
            if connects == 0 && self.gone_while_idle(now) {
                self.close(); // nothing of the request left: a fresh connection, no resend
            }
            if self.stream.is_none() {
                self.connect(deadline).await.map_err(|class| Failure {
                    class,
                    connects,
                    retries,
                })?;
                connects += 1;
                handshake = handshake.zip(self.handshake).map(|(a, b)| a + b);
            }
            // At most one resend: after it, this exchange has opened the connection itself.
            let reused = connects == 0;
            let sent_at = if connects == 0 { now } else { Instant::now() };
            match self.round_trip(request, head, deadline, sent_at).await {
                Ok(RoundTrip {
                    sent_at,
                    status,
                    bytes_in,
                    arrived,
                    left,
                }) => {
                    return Ok(Exchange {
                        sent_at,
                        status,
                        bytes_in,
                        connects,
                        retries,
                        arrived,
                        left,
                        handshake,
                    });
                }
                Err(trip) => {
                    self.close();
                    let class = match trip {
                        Trip::Unsent(_) | Trip::Stale
                            if reused && (idempotent || trip.unsent()) =>
                        {
                            retries += 1;
                            continue;
                        }
                        // Received, perhaps acted on, then the connection went: not safe to repeat.
                        Trip::Stale if reused => ErrorClass::Reset,
                        Trip::Stale => ErrorClass::Read,
                        Trip::Unsent(class) | Trip::Failed(class) => class,
                    };
                    return Err(Failure {
                        class,
                        connects,
                        retries,
                    });
                }
            }
        }
    }

    /// open connects ahead of need (the open model, while it waits for a due hit, so connect
    /// time does not land on the request); errors are left for the request to meet and count.
    pub async fn open(&mut self, deadline: &mut Deadline) -> bool {
        self.stream.is_none() && self.connect(deadline).await.is_ok()
    }

    async fn connect(&mut self, deadline: &mut Deadline) -> Result<(), ErrorClass> {
        let connecting = TcpStream::connect(self.addr);
        let mut connecting = std::pin::pin!(connecting);
        let stream = poll_fn(|cx| {
            if let Poll::Ready(r) = connecting.as_mut().poll(cx) {
                return Poll::Ready(r.map_err(|e| {
                    self.gauge.failed_connect(&e);
                    ErrorClass::Connect
                }));
            }
            if deadline.poll_expired(cx) {
                return Poll::Ready(Err(ErrorClass::Connect));
            }
            Poll::Pending
        })
        .await?;
        // Requests are single small writes: do not let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        if let Some(request) = &self.tunnel {
            crate::proxy::tunnel(&stream, request, &mut |cx| deadline.poll_expired(cx)).await?;
        }
        // The server's part of the connect, before a TLS handshake (its whole span) follows.
        self.handshake = self
            .tls_settings
            .is_none()
            .then(|| crate::sendstamp::handshake(&stream))
            .flatten();
        if self.stamps.receive && crate::stamp::enable(&stream).is_err() {
            // Without stamps a nap would be charged to the server: stop napping instead.
            crate::metronome::forbid_naps();
        }
        // Transmit stamps on plain http (a TLS record's bytes are not the request's); a
        // kernel that refuses them leaves the send time to user space (`Exchange::left`).
        self.sends = (self.stamps.transmit && self.tls_settings.is_none())
            .then(|| crate::sendstamp::enable(&stream).ok())
            .flatten()
            .map(|()| crate::sendstamp::Sends::default());
        self.tls = match &self.tls_settings {
            Some(settings) => {
                // Boxed before the handshake: a session held across its awaits would sit in
                // every lane's future, plain HTTP's too (rustls' state is a few hundred bytes).
                let mut session = Box::new(settings.session().map_err(|_| ErrorClass::Connect)?);
                handshake(&mut session, &stream, deadline).await?;
                Some(session)
            }
            None => None,
        };
        self.stream = Some(stream);
        self.used_at = Instant::now();
        self.gauge.opened();
        self.buf.clear();
        self.served = 0;
        Ok(())
    }

    /// round_trip writes one request and reads its response into the connection's buffer
    /// (and capture); `Trip::Stale` when the server had closed before any response byte.
    // long: the hot path's write-then-read loop, read top to bottom; its locals (bytes read,
    // the last read filling the buffer, the kernel's arrival stamp) live across the awaits,
    // and an async helper would nest its future in this one and add an await per request.
    async fn round_trip(
        &mut self,
        request: &[u8],
        head: bool,
        deadline: &mut Deadline,
        sent_at: Instant,
    ) -> Result<RoundTrip, Trip> {
        let stream = self
            .stream
            .as_ref()
            .ok_or(Trip::Failed(ErrorClass::Connect))?;
        self.used_at = sent_at;
        let from = match self.tls.as_deref_mut() {
            Some(session) => {
                // Plaintext into rustls (it encrypts into its own buffer), then the records out.
                session
                    .writer()
                    .write_all(request)
                    .map_err(|e| Trip::Failed(classify(&e, ErrorClass::Write)))?;
                flush_tls(session, stream, deadline).await?;
                sent_at
            }
            None => write_all(stream, request, deadline, self.sends.as_mut()).await?,
        };
        // The request left inside the bracket of its write's syscall, from `from` to now (see
        // crate::sendstamp): at `from` when the bracket is narrow; a wide one needs the
        // kernel's stamp.
        let left = match self.sends.as_mut() {
            Some(sends) => sends.left(stream, from, Instant::now()),
            None if self.tls.is_none() => crate::sendstamp::narrow(from, Instant::now()),
            None => None,
        };
        self.reader.start(head);
        if std::mem::take(&mut self.drained) {
            // Nothing can be read before the server answers this request, and the readiness
            // a read would check was dropped: wait for the answer at once.
            readable(stream, deadline).await?;
        }
        if let Some(c) = self.capture.as_mut() {
            c.clear(); // a resend starts the capture afresh
        }
        let mut bytes_in = 0u64;
        let mut last_read_full = false;
        let mut arrived = None;
        loop {
            let b = &mut self.buf;
            if b.end > b.start {
                let p = self
                    .reader
                    .advance_into(&b.data[b.start..b.end], self.capture.as_mut())
                    .map_err(|_| Trip::Failed(ErrorClass::Protocol))?;
                b.start += p.consumed;
                if let Some(w) = self.watch.as_deref_mut() {
                    let taken = self.reader.pieces.take();
                    w.progress(self.reader.body_bytes, p.complete, taken);
                }
                if p.complete {
                    break;
                }
            }
            b.make_room()?;
            let read = match self.tls.as_deref_mut() {
                Some(session) => tls::try_read(session, stream, &mut b.data[b.end..]),
                None if self.stamps.receive => crate::stamp::try_read(stream, &mut b.data[b.end..])
                    .map(|(n, at)| {
                        arrived = at;
                        n
                    }),
                None => stream.try_read(&mut b.data[b.end..]),
            };
            match read {
                Ok(0) => {
                    if bytes_in == 0 {
                        return Err(Trip::Stale);
                    }
                    self.reader
                        .finish()
                        .map_err(|_| Trip::Failed(ErrorClass::Read))?;
                    break;
                }
                Ok(n) => {
                    if let Some(w) = self.watch.as_deref_mut() {
                        w.arrived(arrived.unwrap_or_else(Instant::now));
                    }
                    b.end += n;
                    bytes_in += n as u64;
                    last_read_full = b.end == b.data.len();
                    if last_read_full {
                        b.widen();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    readable(stream, deadline).await?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Trip::Failed(classify(&e, ErrorClass::Read))),
            }
        }
        self.served += 1;
        let status = self.reader.status;
        if self.reader.close {
            self.close();
        } else if self.buf.start == self.buf.end && !last_read_full && self.tls.is_none() {
            self.buf.clear();
            // The response is complete and the server sends nothing unasked, so the readiness
            // tokio cached for this socket is stale: drop it without a syscall. If the server
            // closes or writes later, epoll reports a fresh edge and readiness comes back.
            let _ = stream.try_io(Interest::READABLE, || {
                Err::<(), _>(io::ErrorKind::WouldBlock.into())
            });
            self.drained = true;
        }
        Ok(RoundTrip {
            sent_at,
            status,
            bytes_in,
            arrived,
            left,
        })
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.close();
    }
}

/// RoundTrip is a completed round trip (see [`Exchange`]).
struct RoundTrip {
    sent_at: Instant,
    status: u16,
    bytes_in: u64,
    arrived: Option<Instant>,
    left: Option<Instant>,
}

/// Trip is how a round trip failed: `Unsent` means the write failed before any request byte
/// left (safe to send again, whatever the method); `Stale` means the server had closed the
/// connection (clean EOF) before any response byte (safe to send again only if idempotent).
#[derive(Debug, Clone, Copy)]
enum Trip {
    Unsent(ErrorClass),
    Stale,
    Failed(ErrorClass),
}

impl Trip {
    fn unsent(&self) -> bool {
        matches!(self, Trip::Unsent(_))
    }
}

/// classify maps an I/O error to an error class; `other` is the class for the phase.
pub fn classify(e: &io::Error, other: ErrorClass) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorClass::Reset,
        io::ErrorKind::TimedOut => ErrorClass::Timeout,
        // Only TLS reports this: a record that does not decrypt or parse.
        io::ErrorKind::InvalidData => ErrorClass::Protocol,
        _ => other,
    }
}

/// handshake runs a TLS client handshake on a fresh socket, bounded by `deadline`; any
/// failure (a bad certificate, a server that does not speak TLS) is a connect error.
async fn handshake(
    session: &mut rustls::ClientConnection,
    stream: &TcpStream,
    deadline: &mut Deadline,
) -> Result<(), ErrorClass> {
    let fail = |_: Trip| ErrorClass::Connect;
    while session.is_handshaking() {
        flush_tls(session, stream, deadline).await.map_err(fail)?;
        if !session.is_handshaking() {
            break;
        }
        match session.read_tls(&mut tls::Sock(stream)) {
            Ok(0) => return Err(ErrorClass::Connect),
            Ok(_) => {
                if session.process_new_packets().is_err() {
                    // Send the alert that says why, then give up.
                    let _ = session.write_tls(&mut tls::Sock(stream));
                    return Err(ErrorClass::Connect);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                readable(stream, deadline).await.map_err(fail)?
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(ErrorClass::Connect),
        }
    }
    flush_tls(session, stream, deadline).await.map_err(fail)
}

/// flush_tls writes every TLS record rustls has ready, waiting for the socket when it is full;
/// a write error before any byte left is `Unsent`.
async fn flush_tls(
    session: &mut rustls::ClientConnection,
    stream: &TcpStream,
    deadline: &mut Deadline,
) -> Result<(), Trip> {
    let mut sent_any = false;
    while session.wants_write() {
        match session.write_tls(&mut tls::Sock(stream)) {
            Ok(n) => sent_any |= n > 0,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => writable(stream, deadline).await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(write_failed(&e, sent_any)),
        }
    }
    Ok(())
}

/// write_failed is a write error's trip: `Unsent` while no byte of the request has left (the
/// server saw nothing of it), `Failed` once some has.
fn write_failed(e: &io::Error, sent_any: bool) -> Trip {
    let class = classify(e, ErrorClass::Write);
    if sent_any {
        Trip::Failed(class)
    } else {
        Trip::Unsent(class)
    }
}

/// writable waits for write readiness or the request timeout, whichever comes first.
async fn writable(stream: &TcpStream, deadline: &mut Deadline) -> Result<(), Trip> {
    poll_fn(|cx| {
        if let Poll::Ready(r) = stream.poll_write_ready(cx) {
            return Poll::Ready(r.map_err(|e| Trip::Failed(classify(&e, ErrorClass::Write))));
        }
        if deadline.poll_expired(cx) {
            return Poll::Ready(Err(Trip::Failed(ErrorClass::Timeout)));
        }
        Poll::Pending
    })
    .await
}

/// readable waits for read readiness or the request timeout, whichever comes first.
async fn readable(stream: &TcpStream, deadline: &mut Deadline) -> Result<(), Trip> {
    poll_fn(|cx| {
        if let Poll::Ready(r) = stream.poll_read_ready(cx) {
            return Poll::Ready(r.map_err(|e| Trip::Failed(classify(&e, ErrorClass::Read))));
        }
        if deadline.poll_expired(cx) {
            return Poll::Ready(Err(Trip::Failed(ErrorClass::Timeout)));
        }
        Poll::Pending
    })
    .await
}
