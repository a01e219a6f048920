//! HTTP/2 on the wire, with the `h2` crate (hyper's): h2c with prior knowledge for `http://`,
//! and TLS with ALPN `h2` for `https://`.
//!
//! A [`Link`] is one HTTP/2 connection of a worker thread; the lanes of its group each own one
//! [`Stream`] on it (`streams` lanes a connection, h2load's `-m`), so a lane still has one
//! request out at a time and the books (`crate::flight`) hold per stream. The first lane that
//! needs the connection opens it; the others wait for that connect rather than opening their
//! own. The connection's frames are driven by a task of its own, spawned on the thread's
//! `LocalSet`; when it ends (GOAWAY, a reset, the peer closing) the link is marked closed and
//! the next request opens a fresh one.
//!
//! A request arrives as a [`What`]: a plain run's was made an h2 request ([`Template`],
//! `http2_message.rs`) once, with the plan, so the per-request cost is a few reference-count
//! bumps; a scenario's arrives as the flow wrote it (a [`crate::message::Request`]) and is
//! made one here. Neither is ever HTTP/1.1 text. Responses are counted through, not kept,
//! except for a scenario, which gets each one's status, header fields and DATA payload as a
//! [`Response`] (`message.rs`), the same as HTTP/1.1's reader gives it.
//!
//! Errors are classed as the HTTP/1.1 path classes them, plus the two of HTTP/2: a stream the
//! server refused or reset (RST_STREAM) is `rst_stream`, a request caught by the server's
//! GOAWAY is `goaway`.
//!
//! Bytes out and in are the frames as h2 wrote and read them, counted at the connection's
//! socket and charged to the requests as their exchanges end (`http2_traffic.rs`).

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::conn::{Deadline, Exchange, Failure};
use crate::failure::ErrorClass;
use crate::http2_body::{grpc_status, read_body, within, Trip};
use crate::http2_message::Template;
use crate::http2_stamp::{Arrivals, Clock, Part, Stamped};
use crate::message::Response;
use crate::metrics::ConnectionGauge;
use crate::prepared::What;
use crate::stream::{is_event_stream, Sink, Watch};
use crate::tls::TlsSettings;

#[path = "http2_traffic.rs"]
mod traffic;
use traffic::{Counted, Traffic};

/// WINDOW is the receive window the client grants, per stream and per connection (h2load's
/// default too, `-w 30 -W 30`): responses are counted, never held, so there is no reason to
/// slow the server down with small windows and the WINDOW_UPDATE frames they cost.
const WINDOW: u32 = (1 << 30) - 1;

/// Link is one HTTP/2 connection shared by a group of lanes.
pub struct Link {
    addr: SocketAddr,
    tls: Option<TlsSettings>,
    https: bool,
    gauge: Arc<ConnectionGauge>,
    state: RefCell<State>,
    /// settled: signalled when a connect ends, well or badly, for the lanes waiting on it.
    settled: Notify,
    /// went_away: the last connection (by generation) that ended by the server's GOAWAY: its
    /// streams cut by the close that followed fail as `goaway`, not as a broken pipe.
    went_away: std::cell::Cell<u64>,
    /// seated: the streams put on this link so far (each one's seat in [`State::Open`]).
    seated: std::cell::Cell<usize>,
    /// arrivals: where a watched plain-http link's connections note their frames' kernel
    /// receive stamps for the streams to claim (`crate::http2_stamp`); unset unwatched.
    arrivals: std::cell::OnceCell<Rc<Arrivals>>,
    /// traffic: what its connections wrote and read that no exchange has taken yet.
    traffic: Rc<Traffic>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link").field("addr", &self.addr).finish()
    }
}

/// State is where a link's connection is.
enum State {
    /// Closed: no connection; the next request opens one.
    Closed,
    /// Connecting: a lane is opening it; the others wait for [`Link::settled`].
    Connecting,
    /// Open: requests go out through `send`; `generation` tells this connection from the
    /// next, so that the end of an old one does not close a new one. `seats` keeps each
    /// stream's own handle on it between requests (a handle per stream, as h2 wants: one
    /// that waits for a stream to open waits for its own), so that a request costs no clone
    /// and drop of one (each takes h2's lock); they go with the connection when it closes.
    Open {
        send: SendRequest<Bytes>,
        generation: u64,
        seats: Vec<Option<SendRequest<Bytes>>>,
    },
}

impl Link {
    /// new makes a closed link to `addr` (TLS with ALPN `h2` when `tls` is given), counted in
    /// `gauge` while its connection is open.
    pub fn new(
        addr: SocketAddr,
        tls: Option<TlsSettings>,
        gauge: Arc<ConnectionGauge>,
    ) -> Rc<Self> {
        Rc::new(Link {
            addr,
            https: tls.is_some(),
            tls,
            gauge,
            state: RefCell::new(State::Closed),
            settled: Notify::new(),
            went_away: std::cell::Cell::new(0),
            seated: std::cell::Cell::new(0),
            arrivals: std::cell::OnceCell::new(),
            traffic: Rc::new(Traffic::default()),
        })
    }

    /// is_open says whether the connection is open.
    pub fn is_open(&self) -> bool {
        matches!(*self.state.borrow(), State::Open { .. })
    }

    /// sender returns stream `seat`'s handle to send on (its own, kept between requests, or a
    /// fresh clone), opening the connection (or waiting for the lane that opens it) first; the
    /// count is the connections this call opened (0 or 1). Hand it back with
    /// [`Link::reseat`].
    async fn sender(
        self: &Rc<Self>,
        seat: usize,
        deadline: &mut Deadline,
    ) -> Result<(SendRequest<Bytes>, u64, u32), ErrorClass> {
        loop {
            let waiting = {
                let mut state = self.state.borrow_mut();
                match &mut *state {
                    State::Open {
                        send,
                        generation,
                        seats,
                    } => {
                        let own = seats.get_mut(seat).and_then(Option::take);
                        return Ok((own.unwrap_or_else(|| send.clone()), *generation, 0));
                    }
                    State::Connecting => true,
                    State::Closed => {
                        *state = State::Connecting;
                        false
                    }
                }
            };
            if waiting {
                let settled = self.settled.notified();
                let mut settled = std::pin::pin!(settled);
                // Registered before looking again: a connect that ends meanwhile is not missed.
                settled.as_mut().enable();
                if matches!(*self.state.borrow(), State::Connecting) {
                    within(settled, deadline, ErrorClass::Connect).await?;
                }
                continue;
            }
            // Boxed: the handshake's state (h2's codec, a TLS session) is kilobytes, and
            // inline it would sit in every lane's future for the lane's life, HTTP/1.1
            // lanes' too (Wire's futures are the larger of the two protocols'). One
            // allocation per connection opened.
            let opened = Box::pin(self.connect(deadline)).await;
            let mut state = self.state.borrow_mut();
            let out = match opened {
                Ok((send, generation)) => {
                    *state = State::Open {
                        send: send.clone(),
                        generation,
                        seats: Vec::new(),
                    };
                    Ok((send, generation, 1))
                }
                Err(class) => {
                    *state = State::Closed;
                    Err(class)
                }
            };
            drop(state);
            self.settled.notify_waiters();
            return out;
        }
    }

    /// reseat keeps stream `seat`'s handle for its next request, if connection `generation`
    /// is still the open one (else it is dropped, as the connection's other handles were).
    fn reseat(&self, seat: usize, send: SendRequest<Bytes>, generation: u64) {
        let mut state = self.state.borrow_mut();
        if let State::Open {
            generation: g,
            seats,
            ..
        } = &mut *state
        {
            if *g == generation {
                if seats.len() <= seat {
                    seats.resize_with(seat + 1, || None);
                }
                seats[seat] = Some(send);
            }
        }
    }

    /// connect opens the TCP connection (and TLS session), says the HTTP/2 preface and spawns
    /// the task that drives the connection's frames.
    async fn connect(
        self: &Rc<Self>,
        deadline: &mut Deadline,
    ) -> Result<(SendRequest<Bytes>, u64), ErrorClass> {
        let tcp = within(TcpStream::connect(self.addr), deadline, ErrorClass::Connect)
            .await?
            .map_err(|e| {
                self.gauge.failed_connect(&e);
                ErrorClass::Connect
            })?;
        let _ = tcp.set_nodelay(true);
        let mut builder = h2::client::Builder::new();
        builder
            .initial_window_size(WINDOW)
            .initial_connection_window_size(WINDOW)
            .enable_push(false);
        let generation = GENERATION.with(|g| {
            let n = g.get() + 1;
            g.set(n);
            n
        });
        let link = Rc::downgrade(self);
        let send = match &self.tls {
            None => {
                let io = Stamped::new(tcp, self.arrivals.get().cloned(), generation);
                let io = Counted::new(io, self.traffic.clone());
                let (send, conn) = within(builder.handshake(io), deadline, ErrorClass::Connect)
                    .await?
                    .map_err(|_| ErrorClass::Connect)?;
                tokio::task::spawn_local(drive(conn, link, generation));
                send
            }
            Some(tls) => {
                let (connector, name) = tls.h2_connector();
                let stream = within(connector.connect(name, tcp), deadline, ErrorClass::Connect)
                    .await?
                    .map_err(|_| ErrorClass::Connect)?;
                if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
                    // The server would read our preface as a broken HTTP/1.1 request.
                    return Err(ErrorClass::Protocol);
                }
                let io = Counted::new(stream, self.traffic.clone());
                let (send, conn) = within(builder.handshake(io), deadline, ErrorClass::Connect)
                    .await?
                    .map_err(|_| ErrorClass::Connect)?;
                tokio::task::spawn_local(drive(conn, link, generation));
                send
            }
        };
        self.gauge.opened();
        Ok((send, generation))
    }

    /// lost marks connection `generation` as gone (if it is still the current one), so the
    /// next request opens a fresh connection.
    fn lost(&self, generation: u64) {
        let mut state = self.state.borrow_mut();
        if matches!(&*state, State::Open { generation: g, .. } if *g == generation) {
            *state = State::Closed;
        }
    }

    /// close drops the connection (its task sends GOAWAY once no stream uses it).
    pub fn close(&self) -> bool {
        let mut state = self.state.borrow_mut();
        let was = matches!(&*state, State::Open { .. });
        if was {
            *state = State::Closed;
        }
        was
    }
}

thread_local! {
    /// GENERATION numbers this thread's HTTP/2 connections.
    static GENERATION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// drive runs a connection's frames until it ends, then takes it off the link and the gauge.
/// It ends in the same poll that fails the streams still open on it, before their lanes run,
/// so `went_away` is set by the time they look.
async fn drive<T>(conn: h2::client::Connection<T, Bytes>, link: Weak<Link>, generation: u64)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let ended = conn.await;
    if let Some(link) = link.upgrade() {
        // A clean end with streams cut can only be the server's GOAWAY (NO_ERROR) and close;
        // we close ours only once no stream is left on it.
        if ended.as_ref().map_or_else(h2::Error::is_go_away, |()| true) {
            link.went_away.set(generation);
        }
        link.lost(generation);
        link.gauge.closed();
    }
}

/// Stream is a lane's place on a link: it sends one request at a time on the shared
/// connection.
#[derive(Debug)]
pub struct Stream {
    link: Rc<Link>,
    /// leader: the first lane of the group, which counts the connection as its own in the
    /// per-thread open-connection figure (the others ride on it).
    leader: bool,
    /// seat: where the link keeps this stream's handle between requests.
    seat: usize,
    /// template: the h2 request of the scenario's request being sent.
    template: Option<Template>,
    /// capture: see [`crate::conn::Conn::capture`].
    pub capture: Option<Response>,
    /// watch: see [`crate::conn::Conn::watch`]; its pieces are DATA frames, or the SSE
    /// events or gRPC messages they carry.
    pub watch: Option<Box<Watch>>,
    /// grpc: the requests are gRPC calls: an answer's status is its `grpc-status`.
    grpc: bool,
}

impl Stream {
    /// new puts a lane on `link`.
    pub fn new(link: Rc<Link>, leader: bool) -> Self {
        let seat = link.seated.get();
        link.seated.set(seat + 1);
        Stream {
            link,
            leader,
            seat,
            template: None,
            capture: None,
            watch: None,
            grpc: false,
        }
    }

    /// watched makes the stream time each response as it arrives (`--stream`) into `sink`:
    /// over plain http, by the kernel's receive stamps of its frames (`crate::http2_stamp`).
    pub fn watched(mut self, sink: Option<Sink>) -> Self {
        if sink.is_some() && !self.link.https {
            let _ = self.link.arrivals.set(Rc::new(Arrivals::new()));
        }
        self.watch = sink.map(|sink| Box::new(Watch::new(sink)));
        self
    }

    /// calling makes the stream's requests gRPC calls (`grpc`): each answer's status is its
    /// `grpc-status` code, and a watch counts the messages of a streamed answer.
    pub fn calling(mut self, grpc: bool) -> Self {
        self.grpc = grpc;
        if let Some(w) = self.watch.as_deref_mut() {
            w.grpc(grpc);
        }
        self
    }

    /// is_open says whether this lane counts an open connection as its own.
    pub fn is_open(&self) -> bool {
        self.leader && self.link.is_open()
    }

    /// close drops the connection if this lane leads its group (a follower only lets go).
    pub fn close(&mut self) -> bool {
        self.leader && self.link.close()
    }

    /// open connects ahead of need (the open model, while it waits for a due hit).
    pub async fn open(&mut self, deadline: &mut Deadline) -> bool {
        if self.link.is_open() {
            return false;
        }
        match self.link.sender(self.seat, deadline).await {
            Ok((send, generation, connects)) => {
                self.link.reseat(self.seat, send, generation);
                connects == 1
            }
            Err(_) => false,
        }
    }

    /// wrote is what the connection wrote since an exchange last asked: its requests' frames
    /// (h2 writes them from the connection's task, after the send), counted at its socket.
    pub fn wrote(&self) -> u64 {
        self.link.traffic.take_written()
    }

    /// exchange sends one request as a new stream and reads its whole response. A HEAD
    /// request needs no care here: h2 knows the method, and the stream's END_STREAM ends the
    /// response whatever its headers say.
    pub async fn exchange(
        &mut self,
        what: What<'_>,
        deadline: &mut Deadline,
        now: Instant,
    ) -> Result<Exchange, Failure> {
        let fail = |class, connects| Failure {
            class,
            connects,
            retries: 0,
        };
        let (send, generation, connects) = self
            .link
            .sender(self.seat, deadline)
            .await
            .map_err(|c| fail(c, 0))?;
        let sent_at = if connects == 0 { now } else { Instant::now() };
        // A plain run's one request was made an h2 request with the plan; a scenario's is
        // made here, each time.
        let template = match what {
            What::Prepared(p) => p.h2.as_ref(),
            What::Message(m) => {
                self.template = Template::of(m, self.link.https).ok();
                self.template.as_ref()
            }
        };
        let Some(template) = template else {
            self.link.reseat(self.seat, send, generation);
            return Err(fail(ErrorClass::Protocol, connects));
        };
        let trip = Trip::round_trip(
            Handle {
                link: &self.link,
                seat: self.seat,
                send,
                generation,
            },
            template,
            &mut self.capture,
            self.watch.as_deref_mut(),
            deadline,
            self.grpc,
        )
        .await;
        match trip {
            Ok(status) => Ok(Exchange {
                left: None,
                handshake: None,
                sent_at,
                status,
                // Its frames are in: h2 read them before it handed the stream its end.
                bytes_in: self.link.traffic.take_read(),
                connects,
                retries: 0,
                arrived: None,
            }),
            Err(Trip { class, connection }) => {
                if connection {
                    self.link.lost(generation);
                }
                if class == ErrorClass::Timeout && self.grpc && told_deadline(what) {
                    // A call that told the server its deadline ends, when it passes, as gRPC
                    // clients end it: DEADLINE_EXCEEDED, whichever side saw it pass first
                    // (the server's answer saying so may be on its way).
                    return Ok(deadline_exceeded(sent_at, connects));
                }
                let cut = matches!(
                    class,
                    ErrorClass::Reset | ErrorClass::Read | ErrorClass::Write
                );
                let class = if cut && self.link.went_away.get() == generation {
                    ErrorClass::GoAway
                } else {
                    class
                };
                Err(fail(class, connects))
            }
        }
    }
}

/// told_deadline says whether request `what` told the server its deadline: a flow's gRPC call
/// with a `grpc-timeout` header (`u.grpc(..., timeout=)`).
fn told_deadline(what: What<'_>) -> bool {
    matches!(what, What::Message(m)
        if m.headers().any(|(n, _)| n.eq_ignore_ascii_case(b"grpc-timeout")))
}

/// deadline_exceeded is how a call whose deadline passed ends (see [`told_deadline`]):
/// answered DEADLINE_EXCEEDED, as gRPC clients end it, nothing read.
fn deadline_exceeded(sent_at: Instant, connects: u32) -> Exchange {
    Exchange {
        left: None,
        handshake: None,
        sent_at,
        status: crate::grpc::DEADLINE_EXCEEDED,
        bytes_in: 0,
        connects,
        retries: 0,
        arrived: None,
    }
}

/// Handle is a stream's handle on its connection for one request, handed back to its seat
/// once the request is out.
struct Handle<'a> {
    link: &'a Link,
    seat: usize,
    send: SendRequest<Bytes>,
    generation: u64,
}

impl Trip {
    /// round_trip sends `template`'s request on `handle` and reads the whole response: its
    /// status, the head and body kept in `capture` when a scenario reads them.
    ///
    /// The response is read through h2's poll functions rather than its future wrappers: the
    /// head is taken apart where it lands (no `Response` moved through the layers of
    /// `Result`), and the body is read until h2 says it ended, so each response takes the
    /// fewest calls into h2 (each call takes the connection's lock). A gRPC call's status
    /// is read from its trailers (or its head, when the answer is trailers only).
    async fn round_trip(
        mut handle: Handle<'_>,
        template: &Template,
        capture: &mut Option<Response>,
        mut watch: Option<&mut Watch>,
        deadline: &mut Deadline,
        grpc: bool,
    ) -> Result<u16, Trip> {
        within(
            poll_fn(|cx| handle.send.poll_ready(cx)),
            deadline,
            ErrorClass::Timeout,
        )
        .await
        .map_err(Trip::stream)?
        .map_err(|e| Trip::from_h2(&e, ErrorClass::Write))?;
        let body = &template.body;
        let sent = handle
            .send
            .send_request(template.request(), body.is_empty());
        let link = handle.link;
        link.reseat(handle.seat, handle.send, handle.generation);
        let (mut response, mut out) = sent.map_err(|e| Trip::from_h2(&e, ErrorClass::Write))?;
        // The stream's frames are claimed by its id (one lock into h2, with --stream only).
        let noted = watch.as_ref().and(link.arrivals.get());
        let noted = noted.map(|a| (&**a, response.stream_id().as_u32()));
        let clock = Clock::of(noted, handle.generation);
        if !body.is_empty() {
            // Queued whole: h2 sends it as the server's windows allow (a window that never
            // opens leaves the request waiting for its timeout, or unfinished at the end).
            out.send_data(body.clone(), true)
                .map_err(|e| Trip::from_h2(&e, ErrorClass::Write))?;
        }
        drop(out);
        let head_of = |cx: &mut std::task::Context<'_>| {
            let r = std::task::ready!(std::pin::Pin::new(&mut response).poll(cx));
            Poll::Ready(r.map(|r| {
                let status = r.status().as_u16();
                if let Some(c) = capture.as_mut() {
                    c.clear();
                    c.head(status);
                    for (n, v) in r.headers() {
                        c.header(n.as_str().as_bytes(), v.as_bytes());
                    }
                }
                if let Some(w) = watch.as_deref_mut() {
                    let events = r
                        .headers()
                        .get(http::header::CONTENT_TYPE)
                        .is_some_and(|v| is_event_stream(v.as_bytes()));
                    w.head(clock.at(Part::Head), events, r.body().is_end_stream());
                }
                let code = grpc
                    .then(|| r.headers().get("grpc-status"))
                    .flatten()
                    .and_then(|v| crate::grpc::status(v.as_bytes()));
                (status, code, r.into_body())
            }))
        };
        let (status, in_head, mut body) = within(poll_fn(head_of), deadline, ErrorClass::Timeout)
            .await
            .map_err(Trip::stream)?
            .map_err(|e| Trip::from_h2(&e, ErrorClass::Read))?;
        drop(response);
        let read = read_body(&mut body, deadline, capture, watch, clock).await;
        clock.done();
        read?;
        if !grpc {
            return Ok(status);
        }
        grpc_status(&mut body, (status, in_head), deadline, capture).await
    }
}
