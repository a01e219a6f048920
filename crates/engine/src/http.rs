//! HTTP/1.1 on the wire: requests rendered to bytes once, responses parsed incrementally.
//!
//! The response side is a small hand-rolled state machine over `httparse` rather than a full
//! client (hyper) because it sits on the hot path of every request: it works in place on the
//! connection's reusable read buffer, counts body bytes instead of keeping them, and allocates
//! nothing per response. `httparse` does the part that is easy to get wrong (status line,
//! headers, chunk-size lines); this module only frames the body (Content-Length, chunked with
//! extensions and trailers, or until EOF).
//!
//! Measured against hyper 1.x `client::conn::http1` (same 50 keep-alive connections, one
//! current-thread runtime pinned to one core, same local server, 4 s runs, three rounds):
//! hyper 7.2-9.0 µs CPU per request, this reader (with `conn.rs`) 5.4-5.6 µs, wrk 6.4-6.6 µs.
//! hyper pays for its `Request`/`Response` objects, header maps and body frames on every
//! request; the bar for redline is 0.9x wrk, which hyper misses and this meets.

use std::mem::MaybeUninit;

use crate::message::{Request, Response};
use crate::stream::Pieces;

#[path = "http_head.rs"]
mod head;
use head::{fast_head, HeadMemo, FAST_HEADERS};

/// MAX_HEAD is the largest response head we accept (status line, headers and the blank line):
/// the head is bounded by size, not by its number of headers, since real responses carry
/// many (a `Set-Cookie` per cookie) and curl and browsers accept them. A head must sit whole
/// in the connection's read buffer for `httparse`, so this also bounds that buffer.
#[cfg(not(fuzzing))]
pub const MAX_HEAD: usize = 64 * 1024;
/// MAX_HEAD is small under the fuzzer so that its inputs (4 KiB by default) reach the bound.
#[cfg(fuzzing)]
pub const MAX_HEAD: usize = 1024;

/// INLINE_HEADERS is how many headers are parsed into an array on the stack; a head with more
/// is parsed again into a heap array sized by its line count (one allocation per parse of such
/// a head, that is per read while it is incomplete), so the common response allocates nothing.
#[cfg(not(fuzzing))]
const INLINE_HEADERS: usize = 64;
/// INLINE_HEADERS is small under the fuzzer so that most heads take the heap path too.
#[cfg(fuzzing)]
const INLINE_HEADERS: usize = 4;

/// MAX_LINE bounds a chunk-size line and a trailer line, so that a server sending one
/// endless line fails the response instead of growing the buffer.
#[cfg(not(fuzzing))]
pub const MAX_LINE: usize = 8 * 1024;
/// MAX_LINE is small under the fuzzer so that its inputs reach the bound.
#[cfg(fuzzing)]
pub const MAX_LINE: usize = 64;

/// USER_AGENT is the `User-Agent` a request carries unless the user gave one: servers and
/// their logs tell a load test from real traffic by it (wrk sends none, k6 `k6/VERSION`).
pub const USER_AGENT: &str = concat!("redline/", env!("CARGO_PKG_VERSION"));

/// write_request renders `req` as HTTP/1.1 text into `out` (cleared first): request line,
/// `Host`, its fields in order, the blank line, the body. `via` is the origin
/// (`http://host:port`) a forward proxy is asked for, named in front of the target (absolute
/// form, RFC 9112 3.2.2).
pub fn write_request(req: &Request, via: Option<&str>, out: &mut Vec<u8>) {
    out.clear();
    let line: [&[u8]; 6] = [
        req.method(),
        b" ",
        via.unwrap_or_default().as_bytes(),
        req.target(),
        b" HTTP/1.1\r\nHost: ",
        req.authority(),
    ];
    for part in line {
        out.extend_from_slice(part);
    }
    for (name, value) in req.headers() {
        for part in [&b"\r\n"[..], name, b": ", value] {
            out.extend_from_slice(part);
        }
    }
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&req.body);
}

/// ParseError is a response that is not valid HTTP/1.x; the connection cannot be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Head: the status line or headers are malformed.
    Head,
    /// HeadTooLarge: the head is longer than [`MAX_HEAD`] bytes.
    HeadTooLarge,
    /// Framing: Content-Length or Transfer-Encoding is malformed.
    Framing,
    /// Chunk: a chunk-size line, chunk terminator or trailer line is malformed or too long.
    Chunk,
    /// Truncated: the connection closed in the middle of a response.
    Truncated,
}

/// State is where the reader is within one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body { remaining: u64 },
    ChunkSize,
    ChunkData { remaining: u64 },
    ChunkEnd,
    Trailers,
    UntilEof,
    Done,
}

/// Progress says how far one call to [`ResponseReader::advance`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// consumed: bytes of the input that belong to this response and can be dropped.
    pub consumed: usize,
    /// complete: the response is complete; bytes after `consumed` belong to the next one.
    pub complete: bool,
}

/// ResponseReader frames one response at a time from bytes fed in any split.
///
/// The caller keeps unconsumed bytes (an incomplete head must be re-offered whole, since
/// `httparse` needs it contiguous) and appends new reads after them.
#[derive(Debug, Clone)]
pub struct ResponseReader {
    state: State,
    head_request: bool,
    /// status: the response status code (valid once the head is parsed).
    pub status: u16,
    /// body_bytes: body bytes seen so far (payload only, without chunk framing).
    pub body_bytes: u64,
    /// close: the server will close the connection after this response.
    pub close: bool,
    /// memo: the last head framed, kept across the responses of a connection (see
    /// [`ResponseReader::start`]).
    memo: HeadMemo,
    /// watch: cut each body into pieces as it is parsed (`--stream`; see [`crate::stream`]).
    watch: bool,
    /// pieces: the pieces of the body being parsed, when watching.
    pub pieces: Pieces,
}

/// Framing is what a response head says about the response: its status, whether the server
/// closes after it, and how its body is delimited (Content-Length, chunked, or neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Framing {
    status: u16,
    close: bool,
    length: Option<u64>,
    chunked: bool,
    /// event_stream: `Content-Type: text/event-stream` (server-sent events).
    event_stream: bool,
}

impl ResponseReader {
    /// new makes a reader for the response to a request; `head_request` means no body follows.
    pub fn new(head_request: bool) -> Self {
        ResponseReader {
            state: State::Head,
            head_request,
            status: 0,
            body_bytes: 0,
            close: false,
            memo: HeadMemo::default(),
            watch: false,
            pieces: Pieces::default(),
        }
    }

    /// watching makes the reader cut every body into pieces ([`ResponseReader::pieces`]) when
    /// `watch`.
    pub fn watching(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// start prepares the reader for the response to the next request on the same
    /// connection (`head_request`: a HEAD); the last head it framed stays known.
    pub fn start(&mut self, head_request: bool) {
        self.reset();
        self.head_request = head_request;
    }

    /// reset prepares the reader for the next response on the same connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.status = 0;
        self.body_bytes = 0;
        self.close = false;
    }

    /// started says whether any part of the response head has been parsed.
    pub fn started(&self) -> bool {
        self.state != State::Head
    }

    /// advance consumes as much of `buf` as belongs to the current response.
    #[inline]
    pub fn advance(&mut self, buf: &[u8]) -> Result<Progress, ParseError> {
        self.advance_into(buf, None)
    }

    /// advance_into is [`ResponseReader::advance`] keeping the response in `keep` (a
    /// scenario's): its head's status and fields, and its body's payload as it is framed.
    // long: one arm per state of the response, read top to bottom (each hands its payload to
    // `keep` where it frames it); helpers would pass the position and state back to loop on.
    pub fn advance_into(
        &mut self,
        buf: &[u8],
        mut keep: Option<&mut Response>,
    ) -> Result<Progress, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            let step = match self.state {
                State::Done => {
                    return Ok(Progress {
                        consumed: pos,
                        complete: true,
                    })
                }
                State::Head => {
                    let n = self.parse_head(rest)?;
                    if let (Some(n), Some(k)) = (n, keep.as_deref_mut()) {
                        head::keep(&rest[..n], self.status, k);
                    }
                    n
                }
                State::Body { remaining } => {
                    let n = remaining.min(rest.len() as u64);
                    self.body_bytes += n;
                    if let Some(k) = keep.as_deref_mut() {
                        k.payload(&rest[..n as usize]);
                    }
                    if self.watch {
                        self.pieces.feed(&rest[..n as usize]);
                    }
                    self.state = if n == remaining {
                        State::Done
                    } else {
                        State::Body {
                            remaining: remaining - n,
                        }
                    };
                    Some(n as usize)
                }
                State::ChunkSize => self.parse_chunk_size(rest)?,
                State::ChunkData { remaining } => {
                    let n = remaining.min(rest.len() as u64);
                    self.body_bytes += n;
                    if let Some(k) = keep.as_deref_mut() {
                        k.payload(&rest[..n as usize]);
                    }
                    if self.watch {
                        self.pieces.feed(&rest[..n as usize]);
                        if n == remaining {
                            self.pieces.chunk_done();
                        }
                    }
                    self.state = if n == remaining {
                        State::ChunkEnd
                    } else {
                        State::ChunkData {
                            remaining: remaining - n,
                        }
                    };
                    Some(n as usize)
                }
                State::ChunkEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        self.state = State::ChunkSize;
                        Some(2)
                    }
                    [] | [b'\r'] => None,
                    _ => return Err(ParseError::Chunk),
                },
                State::Trailers => self.parse_trailer_line(rest)?,
                State::UntilEof => {
                    self.body_bytes += rest.len() as u64;
                    if let Some(k) = keep.as_deref_mut() {
                        k.payload(rest);
                    }
                    if self.watch {
                        self.pieces.feed(rest);
                    }
                    Some(rest.len())
                }
            };
            match step {
                Some(n) => pos += n,
                None => {
                    return Ok(Progress {
                        consumed: pos,
                        complete: false,
                    })
                }
            }
            if pos == buf.len() && self.state != State::Done {
                return Ok(Progress {
                    consumed: pos,
                    complete: false,
                });
            }
        }
    }

    /// finish is called at EOF: a body delimited by the close completes, anything else is
    /// a truncated response.
    pub fn finish(&mut self) -> Result<(), ParseError> {
        match self.state {
            State::UntilEof | State::Done => {
                self.state = State::Done;
                self.close = true;
                Ok(())
            }
            _ => Err(ParseError::Truncated),
        }
    }

    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        // Only the first MAX_HEAD bytes can hold an acceptable head; parsing no further also
        // makes the outcome independent of how the bytes were split into reads.
        let buf = &buf[..buf.len().min(MAX_HEAD)];
        if let Some((n, framing)) = self.memo.get(buf) {
            return Ok(Some(self.apply(n, framing)));
        }
        let mut lines = [(0, 0, 0); FAST_HEADERS];
        if let Some(head) = fast_head(buf, &mut lines) {
            let headers = lines[..head.headers].iter().map(|&(name, colon, end)| {
                let (name, colon, end) = (usize::from(name), usize::from(colon), usize::from(end));
                (&buf[name..colon], &buf[colon + 1..end])
            });
            let framing = framing(Some(head.minor), Some(head.code), headers)?;
            self.memo.keep(&buf[..head.len], framing);
            return Ok(Some(self.apply(head.len, framing)));
        }
        // Uninitialised: httparse writes only the headers it finds, so a response does not
        // pay for zeroing the whole array (2 KiB) first.
        let mut inline = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; INLINE_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        match httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut resp,
            buf,
            &mut inline,
        ) {
            Err(httparse::Error::TooManyHeaders) => {}
            parsed => return self.apply_head(parsed, &resp, buf.len()),
        }
        // Every header ends with a newline, so the count of newlines bounds the headers,
        // and the shortest header line ("a:\n") bounds them by the head's size.
        let lines = buf.iter().filter(|&&b| b == b'\n').count();
        let mut many = vec![httparse::EMPTY_HEADER; lines.min(MAX_HEAD / 3) + 1];
        let mut resp = httparse::Response::new(&mut many);
        let parsed = resp.parse(buf);
        self.apply_head(parsed, &resp, buf.len())
    }

    /// apply_head reads the framing of a parsed head; `seen` is how many bytes were offered.
    fn apply_head(
        &mut self,
        parsed: httparse::Result<usize>,
        resp: &httparse::Response<'_, '_>,
        seen: usize,
    ) -> Result<Option<usize>, ParseError> {
        let n = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if seen >= MAX_HEAD => {
                return Err(ParseError::HeadTooLarge)
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(ParseError::Head),
        };
        let headers = resp.headers.iter().map(|h| (h.name.as_bytes(), h.value));
        let framing = framing(resp.version, resp.code, headers)?;
        Ok(Some(self.apply(n, framing)))
    }

    /// apply sets the reader to what a complete head of `n` bytes said (`f`), and returns
    /// `n`: the status, whether the connection closes after this response, and how much body
    /// follows (none for a HEAD request's response, whatever its head says).
    fn apply(&mut self, n: usize, f: Framing) -> usize {
        let status = f.status;
        self.status = status;
        self.close = f.close;
        if self.watch {
            self.pieces.begin(f.event_stream, f.chunked);
        }
        let bodiless =
            self.head_request || (100..200).contains(&status) || status == 204 || status == 304;
        self.state = match (bodiless, f.chunked, f.length) {
            (true, _, _) => State::Done,
            (false, true, _) => State::ChunkSize,
            (false, false, Some(0)) => State::Done,
            (false, false, Some(l)) => State::Body { remaining: l },
            (false, false, None) => {
                self.close = true;
                State::UntilEof
            }
        };
        if (100..200).contains(&status) && status != 101 {
            // An interim response (100 Continue): the real one follows.
            self.state = State::Head;
        }
        n
    }

    fn parse_chunk_size(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        // httparse reads a line without digits ("\r\n", ";ext\r\n") as size 0, the last
        // chunk; the grammar (RFC 9112 section 7.1) wants at least one hex digit.
        if buf.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
            return Err(ParseError::Chunk);
        }
        match httparse::parse_chunk_size(buf) {
            Ok(httparse::Status::Complete((n, _))) if n > MAX_LINE => Err(ParseError::Chunk),
            Ok(httparse::Status::Complete((n, 0))) => {
                self.state = State::Trailers;
                Ok(Some(n))
            }
            Ok(httparse::Status::Complete((n, size))) => {
                self.state = State::ChunkData { remaining: size };
                Ok(Some(n))
            }
            Ok(httparse::Status::Partial) if buf.len() >= MAX_LINE => Err(ParseError::Chunk),
            Ok(httparse::Status::Partial) => Ok(None),
            Err(_) => Err(ParseError::Chunk),
        }
    }

    /// parse_trailer_line skips one trailer line; the empty line ends the response. A line
    /// longer than [`MAX_LINE`] fails whether or not its end has arrived yet, so the outcome
    /// does not depend on how the bytes were split into reads.
    fn parse_trailer_line(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let Some(lf) = buf.iter().position(|&b| b == b'\n') else {
            return if buf.len() >= MAX_LINE {
                Err(ParseError::Chunk)
            } else {
                Ok(None)
            };
        };
        if lf >= MAX_LINE {
            return Err(ParseError::Chunk);
        }
        let line = &buf[..lf];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.state = State::Done;
        }
        Ok(Some(lf + 1))
    }
}

/// framing reads the framing of a complete head: its minor version, status code and headers
/// (name, value: the value perhaps with the spaces around it).
fn framing<'a>(
    version: Option<u8>,
    code: Option<u16>,
    headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Result<Framing, ParseError> {
    // httparse takes any three digits; below 100 is no status (hyper rejects it too).
    let status = code.filter(|&c| c >= 100).ok_or(ParseError::Head)?;
    let mut close = version == Some(0);
    let (mut length, mut chunked, mut event_stream) = (None, false, false);
    for (name, value) in headers {
        if is_name(name, b"content-length") {
            let v = parse_length(value).ok_or(ParseError::Framing)?;
            if length.is_some_and(|l| l != v) {
                return Err(ParseError::Framing);
            }
            length = Some(v);
        } else if is_name(name, b"transfer-encoding") {
            chunked = last_token_is(value, b"chunked");
            if !chunked {
                return Err(ParseError::Framing);
            }
        } else if is_name(name, b"connection") {
            // The usual value is one token: compare it whole before splitting it up.
            let v = value.trim_ascii();
            if v.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            } else if v.eq_ignore_ascii_case(b"close") || has_token(v, b"close") {
                close = true;
            } else if has_token(v, b"keep-alive") {
                close = false;
            }
        } else if is_name(name, b"content-type") {
            let v = value.trim_ascii();
            event_stream = crate::stream::is_event_stream(v);
        }
    }
    Ok(Framing {
        status,
        close,
        length,
        chunked,
        event_stream,
    })
}

/// parse_length reads a Content-Length value: decimal digits only (no sign, unlike
/// `u64::from_str`), optional surrounding whitespace, no overflow.
fn parse_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let d = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// is_name says whether header name `name` (as httparse validated it: token characters only)
/// is `lower` (lowercase letters and `-`) in any case: the answer of `eq_ignore_ascii_case`,
/// in two word compares instead of a loop with a branch per byte, since every header of every
/// response comes through here. Setting bit 5 lowercases a letter and leaves `-` as it is; of
/// the other bytes only CR also becomes `-`, and no token character becomes a letter or `-`.
#[inline]
fn is_name<const N: usize>(name: &[u8], lower: &[u8; N]) -> bool {
    const { assert!(N >= 8) };
    if name.len() != N {
        return false;
    }
    let word =
        |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) | 0x2020_2020_2020_2020;
    let (head, tail) = (&name[..8], &name[N - 8..]);
    word(head) == word(&lower[..8]) && word(tail) == word(&lower[N - 8..])
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(|t| t.trim_ascii())
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    tokens(value).any(|t| t.eq_ignore_ascii_case(token))
}

fn last_token_is(value: &[u8], token: &[u8]) -> bool {
    tokens(value)
        .last()
        .is_some_and(|t| t.eq_ignore_ascii_case(token))
}

/// read_whole reads `raw`, one whole response, into a [`Response`] as a scenario's
/// connection keeps it (tests build their responses so); what does not frame is left as far
/// as it read.
#[cfg(test)]
pub(crate) fn read_whole(raw: &[u8]) -> Response {
    let mut into = Response::default();
    let mut r = ResponseReader::new(false);
    if let Ok(p) = r.advance_into(raw, Some(&mut into)) {
        if !p.complete {
            let _ = r.finish();
        }
    }
    into
}

/// idempotent says whether `method` is idempotent (RFC 9110 9.2.2): POST, PATCH, CONNECT and
/// unknown methods are not.
pub fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
