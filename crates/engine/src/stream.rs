//! Streamed answers (`--stream`): a response timed as it arrives, not as one piece.
//!
//! With `--stream` each HTTP/1.1 response is cut into pieces as its body arrives: the events of
//! a `text/event-stream` body (each ends with a blank line, as the SSE spec dispatches them),
//! else the chunks of a chunked body, else each read that brought body bytes. An HTTP/2
//! response's pieces are its DATA frames, or the events they carry ([`Watch::frame`]). Two figures come
//! of it, each an HdrHistogram merged across threads like the latency's:
//!
//! - `first_byte`: from the request's start (the same instant its latency starts from: the
//!   intended send in the open model, the write in the closed one) to the arrival of the
//!   body's first byte (the head's end, for a response without a body): the time to first
//!   token of an LLM server that streams.
//! - `chunk_gap`: between the arrivals of two pieces in a row (inter-token latency). Pieces
//!   that arrived in one read are 0 µs apart (recorded at the histogram's floor, 1 µs): that
//!   is when the client could see them.
//!
//! An arrival is the kernel's receive stamp of the read that brought it, over plain http: the
//! HTTP/1.1 reader's read, or for HTTP/2 the read of h2's connection task that brought the
//! frame's last byte, noted as the task reads and claimed by the stream as h2 hands the frame
//! over ([`crate::http2_stamp`]), so a stream task that runs late adds nothing to the gaps.
//! Over https (and where the kernel gave no stamp) it is the clock read right after the read
//! (HTTP/2: right after h2 handed the frame over). Without `--stream` none of this runs:
//! the reader counts no pieces and the connection reads no clock per read.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::completion::{CompletionTotals, TokenScan};
use crate::hdr::{micros, new_histogram, record};

#[path = "stream_report.rs"]
mod report;
pub use report::{RunStreamCounts, StreamCounts, StreamHistograms, StreamReport};

/// Pieces cuts one response body into pieces as its bytes are parsed (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Pieces {
    /// events: the body is `text/event-stream`: a piece is an event.
    events: bool,
    /// chunked: the body is chunked: a piece is a chunk.
    chunked: bool,
    /// done: pieces completed since the last [`Pieces::take`].
    done: u32,
    /// fed: body bytes came since the last take (a piece, when neither of the above).
    fed: bool,
    /// line_start: the SSE scan is at the start of a line.
    line_start: bool,
    /// comment: the SSE line being read is a comment (`:`), which makes no event.
    comment: bool,
    /// cr: the last byte was CR (a CRLF's LF ends no second line).
    cr: bool,
    /// pending: the event being read has a field line: a blank line dispatches it.
    pending: bool,
    /// tokens: events completed since the last take that carried a completion's token.
    tokens: u32,
    /// scan: the event's `data`, read to find its token (see [`crate::completion`]).
    scan: TokenScan,
    /// messages: the body is gRPC's length-prefixed messages: a piece is a message.
    messages: Messages,
}

/// Messages reads gRPC's message framing (a flag byte, a four-byte big-endian length, the
/// message; see [`crate::grpc::frame`]) across the frames it arrives in, counting whole
/// messages: a frame may carry several, or part of one.
#[derive(Debug, Clone, Copy, Default)]
struct Messages {
    /// on: the body is gRPC's.
    on: bool,
    /// prefix: bytes of the current message's prefix read (0-5).
    prefix: u8,
    /// len: its length, as far as read.
    len: u32,
    /// left: the current message's bytes still to come, once its prefix is read.
    left: u32,
}

impl Messages {
    /// feed reads `bytes` and says how many messages they completed.
    fn feed(&mut self, mut bytes: &[u8]) -> u32 {
        let mut done = 0;
        while let Some((&b, rest)) = bytes.split_first() {
            if self.prefix == 5 {
                let n = bytes.len().min(self.left as usize);
                self.left -= n as u32;
                bytes = &bytes[n..];
            } else {
                bytes = rest;
                self.len = if self.prefix == 0 {
                    0
                } else {
                    (self.len << 8) | u32::from(b)
                };
                self.prefix += 1;
                self.left = self.len;
            }
            if self.prefix == 5 && self.left == 0 {
                done += 1;
                self.prefix = 0;
            }
        }
        done
    }
}

impl Pieces {
    /// begin starts a body: `events` when its head said `text/event-stream`, `chunked` when
    /// it is chunked.
    pub fn begin(&mut self, events: bool, chunked: bool) {
        let mut scan = std::mem::take(&mut self.scan);
        scan.clear();
        let grpc = self.messages.on;
        *self = Pieces {
            events: events && !grpc,
            chunked,
            line_start: true,
            scan,
            messages: Messages {
                on: grpc,
                ..Messages::default()
            },
            ..Pieces::default()
        };
    }

    /// grpc makes each body gRPC's: its pieces are whole messages (from the next
    /// [`Pieces::begin`] on).
    pub fn grpc(&mut self, on: bool) {
        self.messages.on = on;
    }

    /// feed reads body bytes (payload, without chunk framing).
    pub fn feed(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.fed = true;
        if self.messages.on {
            self.done += self.messages.feed(bytes);
            return;
        }
        if !self.events {
            return;
        }
        for &b in bytes {
            match b {
                b'\n' if self.cr => self.cr = false,
                b'\n' | b'\r' => {
                    self.cr = b == b'\r';
                    if !self.line_start {
                        self.scan.line_end();
                    } else if self.pending {
                        self.done += 1;
                        self.tokens += u32::from(self.scan.dispatch());
                        self.pending = false;
                    }
                    self.line_start = true;
                    self.comment = false;
                }
                _ => {
                    self.scan.byte(b);
                    self.cr = false;
                    if self.line_start {
                        self.comment = b == b':';
                        self.line_start = false;
                    }
                    self.pending |= !self.comment;
                }
            }
        }
    }

    /// chunk_done marks the end of a chunk's data.
    pub fn chunk_done(&mut self) {
        if self.chunked && !self.events && !self.messages.on {
            self.done += 1;
        }
    }

    /// take is what completed since the last take: the pieces, whether they are events,
    /// and how many of those carried a token.
    pub fn take(&mut self) -> Taken {
        let pieces = if self.events || self.chunked || self.messages.on {
            self.done
        } else {
            u32::from(self.fed)
        };
        let tokens = std::mem::take(&mut self.tokens);
        self.done = 0;
        self.fed = false;
        Taken {
            pieces,
            events: self.events,
            tokens,
        }
    }
}

/// Taken is what a body's bytes completed since the last [`Pieces::take`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taken {
    /// pieces: pieces completed.
    pub pieces: u32,
    /// events: the pieces are SSE events.
    pub events: bool,
    /// tokens: the events among them that carried a completion's token.
    pub tokens: u32,
}

/// is_event_stream says whether a `Content-Type` value is `text/event-stream` (server-sent
/// events), whatever its parameters and case.
pub fn is_event_stream(content_type: &[u8]) -> bool {
    content_type.len() >= 17 && content_type[..17].eq_ignore_ascii_case(b"text/event-stream")
}

/// StreamTotals are a thread's (or, merged, the run's) figures of streamed answers, over the
/// measured part of the run.
#[derive(Debug, Clone)]
pub struct StreamTotals {
    /// responses: answered responses timed.
    pub responses: u64,
    /// events: SSE events received.
    pub events: u64,
    /// chunks: pieces received (events, chunks or reads; see the module docs).
    pub chunks: u64,
    /// body_bytes: body bytes of the responses timed (payload, without framing).
    pub body_bytes: u64,
    /// first_byte: request start to first body byte, µs.
    pub first_byte: Histogram<u64>,
    /// chunk_gap: between two pieces in a row, µs.
    pub chunk_gap: Histogram<u64>,
    /// clamped: figures beyond the histograms' range, recorded at its top.
    pub clamped: u64,
    /// completion: the tokens of streamed completions among them.
    pub completion: CompletionTotals,
}

impl StreamTotals {
    /// new makes empty totals whose histograms reach `highest_us`.
    pub fn new(highest_us: u64) -> Self {
        StreamTotals {
            responses: 0,
            events: 0,
            chunks: 0,
            body_bytes: 0,
            first_byte: new_histogram(highest_us),
            chunk_gap: new_histogram(highest_us),
            clamped: 0,
            completion: CompletionTotals::new(highest_us),
        }
    }

    /// merge folds another thread's figures into these.
    pub fn merge(&mut self, o: &StreamTotals) {
        self.responses += o.responses;
        self.events += o.events;
        self.chunks += o.chunks;
        self.body_bytes += o.body_bytes;
        self.clamped += o.clamped;
        let _ = self.first_byte.add(&o.first_byte);
        let _ = self.chunk_gap.add(&o.chunk_gap);
        self.completion.merge(&o.completion);
    }

    /// answered books a measured response whose connection watched it: its first byte from
    /// `from` (where its latency starts), clamped between its send and its end.
    pub fn answered(&mut self, watch: &Watch, from: Instant, sent_at: Instant, end: Instant) {
        let Some(first) = watch.first else { return };
        let at = |t: Instant| micros(t.max(sent_at).min(end).saturating_duration_since(from));
        self.responses += 1;
        self.body_bytes += watch.body_bytes;
        self.clamped += u64::from(record(&mut self.first_byte, at(first)));
        if let Some(token) = watch.first_token {
            let whole = micros(end.saturating_duration_since(from));
            self.clamped += self.completion.answered(watch.tokens, at(token), whole);
        }
    }

    /// pieces books `pieces` pieces that arrived together (SSE `events` or not), `tokens`
    /// of them a completion's: `gap_us` since the response's piece before (None for its
    /// first), `token_gap_us` since its token before.
    fn pieces(
        &mut self,
        pieces: u32,
        events: bool,
        tokens: u32,
        gap_us: Option<u64>,
        token_gap_us: Option<u64>,
    ) {
        if tokens > 0 {
            let c = &mut self.completion;
            c.tokens += u64::from(tokens);
            if let Some(us) = token_gap_us {
                self.clamped += u64::from(record(&mut c.itl, us));
            }
            let _ = c.itl.record_n(1, u64::from(tokens - 1));
        }
        self.chunks += u64::from(pieces);
        if events {
            self.events += u64::from(pieces);
        }
        if let Some(us) = gap_us {
            self.clamped += u64::from(record(&mut self.chunk_gap, us));
        }
        // The first piece of a response has no gap; the others of this read came with it.
        let _ = self.chunk_gap.record_n(1, u64::from(pieces - 1));
    }

    /// reset empties the totals (an interval's, once taken), keeping the histograms' memory.
    pub fn reset(&mut self) {
        self.responses = 0;
        self.events = 0;
        self.chunks = 0;
        self.body_bytes = 0;
        self.clamped = 0;
        self.first_byte.reset();
        self.chunk_gap.reset();
        self.completion.reset();
    }
}

/// StreamBooks are a thread's stream figures twice over: the run's (its measured part) and
/// the interval's being filled, which the thread's reporter takes with the rest of the
/// interval ([`StreamBooks::take_interval`]), so the time series, the live view and a
/// search's steps read first bytes, gaps, TTFT and ITL interval by interval.
#[derive(Debug, Clone)]
pub struct StreamBooks {
    /// run: the run's totals.
    pub run: StreamTotals,
    /// interval: the interval's, since it was last taken.
    pub interval: StreamTotals,
}

impl StreamBooks {
    /// new makes empty books whose histograms reach `highest_us`.
    pub fn new(highest_us: u64) -> Self {
        StreamBooks {
            run: StreamTotals::new(highest_us),
            interval: StreamTotals::new(highest_us),
        }
    }

    /// answered books a measured response in both (see [`StreamTotals::answered`]).
    pub fn answered(&mut self, watch: &Watch, from: Instant, sent_at: Instant, end: Instant) {
        self.run.answered(watch, from, sent_at, end);
        self.interval.answered(watch, from, sent_at, end);
    }

    /// take_interval hands over the interval's figures and starts the next interval's.
    pub fn take_interval(&mut self) -> StreamTotals {
        let out = self.interval.clone();
        self.interval.reset();
        out
    }
}

/// Sink is a thread's stream books, shared by the connections of its lanes (one thread, one
/// runtime: no lock): the run's folded into the thread's totals at its end, the interval's
/// taken with each interval.
pub type Sink = Rc<RefCell<StreamBooks>>;

/// Watch is a connection's clock on the response arriving: when its bytes came, its first
/// byte, its last piece; the gaps go straight into the thread's [`Sink`].
#[derive(Debug)]
pub struct Watch {
    sink: Sink,
    /// measured: the request is past the warm-up (its gaps count).
    measured: bool,
    /// read_at: when the bytes being parsed arrived.
    read_at: Instant,
    /// first: when the first body byte arrived.
    pub first: Option<Instant>,
    /// last: when the last piece arrived.
    last: Option<Instant>,
    /// body_bytes: the response's body bytes so far.
    body_bytes: u64,
    /// first_token: when the first event that carried a token arrived.
    first_token: Option<Instant>,
    /// last_token: when the last one did.
    last_token: Option<Instant>,
    /// tokens: the response's tokens so far.
    tokens: u64,
    /// pieces: the pieces of a body that arrives in frames (HTTP/2 DATA); an HTTP/1.1
    /// connection's reader cuts its own.
    pieces: Pieces,
}

impl Watch {
    /// new watches responses for a thread's `sink`.
    pub fn new(sink: Sink) -> Self {
        Watch {
            sink,
            measured: false,
            read_at: Instant::now(),
            first: None,
            last: None,
            body_bytes: 0,
            first_token: None,
            last_token: None,
            tokens: 0,
            pieces: Pieces::default(),
        }
    }

    /// begin starts the response to a request sent at `sent_at` (or, on a fresh connection,
    /// just after); `measured`: the request is past the warm-up (its gaps count).
    pub fn begin(&mut self, measured: bool, sent_at: Instant) {
        self.measured = measured;
        self.read_at = sent_at;
        self.first = None;
        self.last = None;
        self.body_bytes = 0;
        self.first_token = None;
        self.last_token = None;
        self.tokens = 0;
    }

    /// grpc makes the watched answers gRPC's: a piece is a whole message, and the first
    /// byte is the first message's arrival.
    pub fn grpc(&mut self, on: bool) {
        self.pieces.grpc(on);
    }

    /// is_measured says whether the response being watched counts (past the warm-up, and a
    /// request that asked to be streamed).
    pub fn is_measured(&self) -> bool {
        self.measured
    }

    /// head books the head of a response that arrives in frames (HTTP/2), read at `at`:
    /// `events` when it said `text/event-stream`; `end` when no body follows. Each DATA frame
    /// is then a piece (as a chunk is), or the events it completes.
    pub fn head(&mut self, at: Instant, events: bool, end: bool) {
        self.pieces.begin(events, true);
        self.arrived(at);
        if end {
            self.progress(0, true, Taken::default());
        }
    }

    /// frame books a DATA frame's `payload`, read at `at`; `body_bytes`: the body's so far,
    /// this frame's included. An empty frame (one that only ends the stream) is no piece.
    pub fn frame(&mut self, payload: &[u8], at: Instant, body_bytes: u64) {
        if payload.is_empty() {
            return;
        }
        self.arrived(at);
        self.pieces.feed(payload);
        self.pieces.chunk_done();
        let taken = self.pieces.take();
        self.progress(body_bytes, false, taken);
    }

    /// end books the end of a response that arrived in frames, at `at` (its first byte, when
    /// no frame carried one).
    pub fn end(&mut self, at: Instant) {
        if self.first.is_none() {
            self.arrived(at);
            self.progress(self.body_bytes, true, Taken::default());
        }
    }

    /// arrived notes when the bytes read last arrived.
    pub fn arrived(&mut self, at: Instant) {
        self.read_at = at;
    }

    /// progress books what parsing the bytes that arrived last gave: the body's bytes so far,
    /// whether the response is complete, and what they completed.
    pub fn progress(&mut self, body_bytes: u64, complete: bool, taken: Taken) {
        let Taken {
            pieces,
            events,
            tokens,
        } = taken;
        self.body_bytes = body_bytes;
        // A gRPC answer's first byte is its first whole message's (a prefix alone is none).
        let begun = if self.pieces.messages.on {
            pieces > 0
        } else {
            body_bytes > 0
        };
        if self.first.is_none() && (begun || complete) {
            self.first = Some(self.read_at);
        }
        if pieces == 0 {
            return;
        }
        let at = self.read_at;
        let last = self.last.replace(at);
        let last_token = if tokens > 0 {
            self.first_token.get_or_insert(at);
            self.tokens += u64::from(tokens);
            self.last_token.replace(at)
        } else {
            None
        };
        if !self.measured {
            return;
        }
        let gap = last.map(|l| micros(at.saturating_duration_since(l)));
        let token_gap = last_token.map(|l| micros(at.saturating_duration_since(l)));
        let mut sink = self.sink.borrow_mut();
        let books = &mut *sink;
        for s in [&mut books.run, &mut books.interval] {
            s.pieces(pieces, events, tokens, gap, token_gap);
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
