//! One client connection: read, parse (pipelined) requests, apply their behaviour, answer.
//!
//! Hand-rolled on `httparse` rather than hyper's server because the target must misbehave on
//! purpose (reset a connection, hang, stall) and must stay cheaper than the load generator it
//! serves; see `server.rs` for the measurement behind the choice.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use http::StatusCode;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::capacity::Admission;
use crate::form::{self, Outcome, Page, Verb, Visit};
use crate::request::{self, Parsed, Request, RequestBody};
use crate::response::{self, Framing, Head, FILLER, FILLER_LEN};
use crate::route::{Behaviour, Body, Route};
use crate::shared::Shared;
use crate::sleep;
use crate::socket::{self, Probe};
use crate::task::{self, Ask};
use crate::tls::Io;

mod apps;
mod stream;

/// MAX_HEAD is the largest request head accepted (431 beyond).
const MAX_HEAD: usize = 64 * 1024;
/// READ_CHUNK is how much room each read asks for.
const READ_CHUNK: usize = 16 * 1024;
/// FLUSH_AT is the output size at which a long body is written out mid-response.
const FLUSH_AT: usize = 64 * 1024;

/// End is how a connection finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Close shuts the connection down in order.
    Close,
    /// Reset aborts it (RST) without answering.
    Reset,
    /// Hang keeps it open, unanswered, until the client leaves.
    Hang,
    /// Upgrade answers a `/ws` request with 101 (this accept value) and echoes (`socket.rs`).
    Upgrade(Probe, [u8; 28]),
}

/// serve runs one connection until the client leaves, asks to close, or a fault ends it.
pub(crate) async fn serve<S: Io>(stream: S, shared: Arc<Shared>, thread: usize) {
    if let Some(tcp) = stream.tcp() {
        let _ = tcp.set_nodelay(true);
    }
    let mut conn = Conn {
        stream,
        input: BytesMut::with_capacity(READ_CHUNK),
        out: Vec::with_capacity(READ_CHUNK),
        rng: SmallRng::from_rng(&mut rand::rng()),
        shared,
        thread,
        body: Vec::new(),
        keeping: false,
        body_over: false,
    };
    let end = conn.run().await.unwrap_or(End::Close);
    match end {
        End::Close => {
            let _ = conn.stream.shutdown().await;
        }
        End::Reset => {
            if let Some(tcp) = conn.stream.tcp() {
                let _ = socket2::SockRef::from(tcp).set_linger(Some(Duration::ZERO));
            }
        }
        End::Upgrade(probe, accept) => {
            let head = socket::switching(&accept);
            if conn.stream.write_all(&head).await.is_ok() && conn.stream.flush().await.is_ok() {
                let counters = conn.shared.board.thread(conn.thread);
                socket::echo(conn.stream, probe, counters).await;
            }
        }
        End::Hang => {
            let mut sink = [0u8; 4096];
            while let Ok(n) = conn.stream.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        }
    }
}

struct Conn<S> {
    stream: S,
    input: BytesMut,
    out: Vec<u8>,
    rng: SmallRng,
    shared: Arc<Shared>,
    thread: usize,
    /// body holds a form post's body (other bodies are skipped, never kept).
    body: Vec<u8>,
    /// keeping: the body being read goes into `body`, up to `form::MAX_FORM_BODY`.
    keeping: bool,
    /// body_over: the kept body was longer than `form::MAX_FORM_BODY`.
    body_over: bool,
}

impl<S: Io> Conn<S> {
    /// run answers every complete request in the buffer, writes the batch, then reads more:
    /// pipelined requests cost one write for all of them.
    async fn run(&mut self) -> io::Result<End> {
        let mut read_at = Instant::now();
        loop {
            loop {
                match request::parse(&self.input) {
                    Parsed::Request(request, used) => {
                        self.input.advance(used);
                        if let Some(end) = self.handle(request, read_at).await? {
                            self.flush().await?;
                            return Ok(end);
                        }
                    }
                    Parsed::Partial => break,
                    Parsed::Invalid(status, reason) => {
                        self.simple(status, reason.as_bytes(), true);
                        self.flush().await?;
                        return Ok(End::Close);
                    }
                }
            }
            self.flush().await?;
            if self.input.len() >= MAX_HEAD {
                self.simple(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    b"request head too large\n",
                    true,
                );
                self.flush().await?;
                return Ok(End::Close);
            }
            if !self.read_next().await? {
                return Ok(End::Close);
            }
            read_at = Instant::now();
        }
    }

    /// handle consumes one request (head already parsed and consumed, body next) and queues its
    /// answer; `Some(end)` stops the connection.
    async fn handle(&mut self, request: Request, read_at: Instant) -> io::Result<Option<End>> {
        self.keeping = request.verb == Verb::Post
            && matches!(&request.behaviour,
                Ok(b) if matches!(b.route, Route::Form(Page::Form) | Route::Task(Ask::Submit))
                    || matches!(b.body, Body::Stream(s) if s.is_completion()));
        self.body.clear();
        self.body_over = false;
        let read = self.read_body(&request).await;
        self.keeping = false;
        if let Some(end) = read? {
            return Ok(Some(end));
        }

        let behaviour = match request.behaviour {
            Ok(b) => b,
            Err(reason) => return Ok(self.bad_request(&reason, request.keep_alive)),
        };
        if behaviour.route == Route::Stats {
            let body = self.shared.stats().to_json();
            self.reply(
                StatusCode::OK,
                "application/json",
                body.as_bytes(),
                &behaviour,
                &request,
            )
            .await?;
            return Ok((!request.keep_alive).then_some(End::Close));
        }
        if let Route::Socket(probe) = behaviour.route {
            let Some(accept) = request.ws_accept else {
                let reason = "/ws is a WebSocket: expected an upgrade (Sec-WebSocket-Key)";
                return Ok(self.bad_request(reason, request.keep_alive));
            };
            self.counters_request();
            return Ok(Some(End::Upgrade(probe, accept)));
        }
        self.counters_request();
        if self.rate_limited(&request) {
            return Ok((!request.keep_alive).then_some(End::Close));
        }
        if behaviour.reset > 0.0 && self.rng.random::<f64>() < behaviour.reset {
            return Ok(Some(End::Reset));
        }
        if behaviour.hang {
            return Ok(Some(End::Hang));
        }
        let work = self.wait(&behaviour, read_at).await?;
        let Some(begun) = self.admit(read_at).await? else {
            let status = StatusCode::SERVICE_UNAVAILABLE;
            self.refuse(status, 1, b"queue full\n", &request);
            return Ok((!request.keep_alive).then_some(End::Close));
        };
        match (behaviour.route, self.injection(&behaviour)) {
            (Route::Form(page), None) => self.answer_form(page, &behaviour, &request),
            (Route::Task(ask), None) => self.answer_task(ask, &behaviour, &request),
            (Route::Redirect, None) => self.answer_redirect(&behaviour, &request),
            (_, status) => {
                let status = status.unwrap_or(StatusCode::OK);
                self.answer(status, work, begun, &behaviour, &request)
                    .await?;
            }
        }
        let close = behaviour.close || !request.keep_alive;
        Ok(close.then_some(End::Close))
    }

    /// admit holds a request arrived at `read_at` in the server-wide modes (contention,
    /// capacity) and says when a streamed answer's schedule starts: at the request's arrival,
    /// or, in capacity mode, when its service ended: the slot is its prefill, as an LLM
    /// server's queue and prefill come before its first token (its TTFT is the wait plus the
    /// service). None: the queue shed it.
    async fn admit(&mut self, read_at: Instant) -> io::Result<Option<Instant>> {
        if self.shared.queue.is_none() && self.shared.crowd.is_none() {
            return Ok(Some(read_at));
        }
        // Earlier pipelined answers go out before this request joins the queue.
        self.flush().await?;
        let shared = Arc::clone(&self.shared);
        if let Some(crowd) = &shared.crowd {
            crowd.serve().await?;
        }
        match &shared.queue {
            None => Ok(Some(read_at)),
            Some(queue) => Ok(match queue.serve().await? {
                Admission::Served(end) => Some(end),
                Admission::Shed => None,
            }),
        }
    }

    /// bad_request answers a request whose behaviour could not be parsed (a 400 saying why).
    fn bad_request(&mut self, reason: &str, keep_alive: bool) -> Option<End> {
        self.counters_request();
        let body = format!("{reason}\n");
        self.simple(StatusCode::BAD_REQUEST, body.as_bytes(), !keep_alive);
        (!keep_alive).then_some(End::Close)
    }

    /// rate_limited: the token bucket (if any) had no token for this request, which is then
    /// refused.
    fn rate_limited(&mut self, request: &Request) -> bool {
        let Some(bucket) = &self.shared.bucket else {
            return false;
        };
        let Err(wait) = bucket.take() else {
            return false;
        };
        let status = bucket.status;
        let seconds = crate::bucket::retry_after(wait);
        self.refuse(status, seconds, b"rate limited\n", request);
        true
    }

    /// injection draws the status a behaviour's injections give this request (None: answer
    /// normally).
    fn injection(&mut self, behaviour: &Behaviour) -> Option<StatusCode> {
        if behaviour.injections.is_empty() {
            return None;
        }
        let draw = self.rng.random::<f64>();
        behaviour.injections.pick(draw)
    }

    /// read_body reads (skips, or keeps for a form post) the request's body; `Some(end)` when
    /// it was malformed and the connection must end.
    async fn read_body(&mut self, request: &Request) -> io::Result<Option<End>> {
        match request.body {
            RequestBody::None => {}
            RequestBody::Length(n) => self.discard(n).await?,
            RequestBody::Chunked => {
                if !self.discard_chunked().await? {
                    self.simple(StatusCode::BAD_REQUEST, b"bad chunked request body\n", true);
                    return Ok(Some(End::Close));
                }
            }
        }
        Ok(None)
    }

    /// wait holds the answer until the stall window (if any) ends, then for the sampled latency,
    /// both measured from when the request arrived (so pipelined requests do not queue behind
    /// each other's delays); returns the sampled latency.
    async fn wait(&mut self, behaviour: &Behaviour, read_at: Instant) -> io::Result<Duration> {
        let latency = behaviour.latency.sample(&mut self.rng);
        let mut start = read_at;
        if let Some(stall) = behaviour.stall {
            let started = self.shared.started;
            if let Some(release) = stall.release_at(read_at.saturating_duration_since(started)) {
                start = started + release;
            }
        }
        let deadline = start + latency;
        if deadline > read_at {
            self.flush().await?;
            sleep::until(deadline).await?;
        }
        Ok(latency)
    }

    /// answer queues the response body a behaviour asks for; a streamed one is paced from
    /// `begun` (see `handle`).
    async fn answer(
        &mut self,
        status: StatusCode,
        work: Duration,
        begun: Instant,
        behaviour: &Behaviour,
        request: &Request,
    ) -> io::Result<()> {
        match behaviour.body {
            Body::Text => {
                self.reply(status, "text/plain", b"ok\n", behaviour, request)
                    .await
            }
            Body::WorkJson => {
                let body = format!("{{\"time\": {}}}\n", work.as_millis());
                self.reply(
                    status,
                    "application/json",
                    body.as_bytes(),
                    behaviour,
                    request,
                )
                .await
            }
            Body::Filler(n) => self.reply_filler(status, n, behaviour, request).await,
            Body::Stream(stream) => {
                self.answer_stream(status, stream, begun, behaviour, request)
                    .await
            }
        }
    }

    /// reply queues a response with a small in-memory body.
    async fn reply(
        &mut self,
        status: StatusCode,
        content_type: &'static str,
        body: &[u8],
        behaviour: &Behaviour,
        request: &Request,
    ) -> io::Result<()> {
        let framing = framing(behaviour);
        let head = Head {
            status,
            content_type,
            body_len: body.len() as u64,
            framing,
            close: behaviour.close || !request.keep_alive,
        };
        response::encode_head(&mut self.out, &head);
        if response::has_body(status) && !request.head_only {
            response::encode_piece(&mut self.out, body, framing);
            response::encode_end(&mut self.out, framing);
        }
        if self.out.len() >= FLUSH_AT {
            self.flush().await?;
        }
        Ok(())
    }

    /// reply_filler queues a response of `n` filler bytes, writing as it goes so memory stays
    /// bounded whatever `n` is.
    async fn reply_filler(
        &mut self,
        status: StatusCode,
        n: u64,
        behaviour: &Behaviour,
        request: &Request,
    ) -> io::Result<()> {
        let framing = framing(behaviour);
        let head = Head {
            status,
            content_type: "application/octet-stream",
            body_len: n,
            framing,
            close: behaviour.close || !request.keep_alive,
        };
        response::encode_head(&mut self.out, &head);
        if !response::has_body(status) || request.head_only {
            return Ok(());
        }
        let mut left = n;
        while left > 0 {
            let piece = usize::try_from(left).map_or(FILLER_LEN, |l| l.min(FILLER_LEN));
            response::encode_piece(&mut self.out, &FILLER[..piece], framing);
            left -= piece as u64;
            if self.out.len() >= FLUSH_AT {
                self.flush().await?;
            }
        }
        response::encode_end(&mut self.out, framing);
        Ok(())
    }

    /// refuse queues a refusal (rate limit, load shedding): `status` with `Retry-After`.
    fn refuse(&mut self, status: StatusCode, retry_after: u64, body: &[u8], request: &Request) {
        let head = Head {
            status,
            content_type: "text/plain",
            body_len: body.len() as u64,
            framing: Framing::Length,
            close: !request.keep_alive,
        };
        let seconds = retry_after.to_string();
        response::encode_head_with(&mut self.out, &head, &[("retry-after", &seconds)]);
        if response::has_body(status) && !request.head_only {
            self.out.extend_from_slice(body);
        }
    }

    /// simple queues a plain-text response outside any behaviour (errors).
    fn simple(&mut self, status: StatusCode, body: &[u8], close: bool) {
        let head = Head {
            status,
            content_type: "text/plain",
            body_len: body.len() as u64,
            framing: Framing::Length,
            close,
        };
        response::encode_head(&mut self.out, &head);
        self.out.extend_from_slice(body);
    }

    fn counters_request(&self) {
        self.shared.board.thread(self.thread).add_request();
    }

    async fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await?;
            // A no-op for TCP; pushes out any TLS record rustls still holds.
            self.stream.flush().await?;
            self.out.clear();
        }
        Ok(())
    }

    /// read_more appends what the socket has; false at end of stream.
    async fn read_more(&mut self) -> io::Result<bool> {
        self.input.reserve(READ_CHUNK);
        Ok(self.stream.read_buf(&mut self.input).await? > 0)
    }

    /// read_next is [`Conn::read_more`] between requests: with an idle timeout, a client's
    /// connection with nothing buffered that stays silent that long is to be closed (false),
    /// counted in `idle_closed`; a partial request waits as long as it takes, and so does an
    /// HTTP/2 stream answered through this code (no socket of its own).
    async fn read_next(&mut self) -> io::Result<bool> {
        match self.shared.idle_timeout {
            Some(idle) if self.input.is_empty() && self.stream.tcp().is_some() => {
                match tokio::time::timeout(idle, self.read_more()).await {
                    Ok(read) => read,
                    Err(_) => {
                        self.shared.board.thread(self.thread).add_idle_closed();
                        Ok(false)
                    }
                }
            }
            _ => self.read_more().await,
        }
    }

    /// need reads until at least `n` bytes are buffered; false if the client left first.
    async fn need(&mut self, n: usize) -> io::Result<bool> {
        while self.input.len() < n {
            if !self.read_more().await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// discard skips a `Content-Length` body of `n` bytes without keeping it.
    async fn discard(&mut self, mut n: u64) -> io::Result<()> {
        loop {
            let take = usize::try_from(n).map_or(self.input.len(), |n| n.min(self.input.len()));
            if self.keeping {
                if self.body.len() + take <= form::MAX_FORM_BODY {
                    self.body.extend_from_slice(&self.input[..take]);
                } else {
                    self.body_over = true;
                }
            }
            self.input.advance(take);
            n -= take as u64;
            if n == 0 {
                return Ok(());
            }
            if !self.read_more().await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// discard_chunked skips a chunked body and its trailers; false if it is malformed.
    async fn discard_chunked(&mut self) -> io::Result<bool> {
        loop {
            let (used, size) = match httparse::parse_chunk_size(&self.input) {
                Ok(httparse::Status::Complete(found)) => found,
                Ok(httparse::Status::Partial) if self.input.len() < MAX_HEAD => {
                    if !self.read_more().await? {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    continue;
                }
                _ => return Ok(false),
            };
            self.input.advance(used);
            if size == 0 {
                return self.discard_trailers().await;
            }
            self.discard(size).await?;
            if !self.need(2).await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            if &self.input[..2] != b"\r\n" {
                return Ok(false);
            }
            self.input.advance(2);
        }
    }

    /// discard_trailers skips trailer lines up to the empty line ending a chunked body.
    async fn discard_trailers(&mut self) -> io::Result<bool> {
        loop {
            match self.input.windows(2).position(|w| w == b"\r\n") {
                Some(0) => {
                    self.input.advance(2);
                    return Ok(true);
                }
                Some(at) => self.input.advance(at + 2),
                None if self.input.len() >= MAX_HEAD => return Ok(false),
                None => {
                    if !self.read_more().await? {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
            }
        }
    }
}

fn framing(behaviour: &Behaviour) -> Framing {
    if behaviour.chunked {
        Framing::Chunked
    } else {
        Framing::Length
    }
}
