//! Kernel receive stamps for HTTP/2 frames (`--stream` over plain http): when a frame's bytes
//! reached the socket, not when its stream's task got it from h2.
//!
//! h2 reads the socket in the connection's own task and hands each frame to its stream's task,
//! which runs later: after a wake-up and a turn of the thread's loop, or much later when the
//! thread is busy with other lanes, or waits for a core. A frame timed by the clock when its
//! stream gets it carries that wait into the gaps between pieces (the probe's 20 ms gaps read a
//! p99 of 35-55 ms on a busy box while the wire's was 20.0-20.3; bench/results/stream.md,
//! 2026-11-28 23:58 UTC). So the connection's
//! socket is read through [`Stamped`], which reads as HTTP/1.1's reader does with
//! `SO_TIMESTAMPNS` ([`crate::stamp`]) and follows the frame headers in the bytes it hands to
//! h2: each DATA frame with a payload, and each header block's end, is noted in the link's
//! [`Arrivals`] with its connection, its stream and the stamp of the read that brought its last
//! byte. A stream claims its frames' stamps in order as h2 hands the frames over
//! ([`Clock`]); a claim never gives a time later than the clock at the claim, and one that
//! finds nothing noted (an unstamped read is noted with the clock at the read) takes the clock.
//!
//! A read that brings several frames gives them all its stamp (the kernel stamps a read with
//! its last segment's arrival), as pieces that arrive in one HTTP/1.1 read are 0 µs apart:
//! that is when the client could first have seen them.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// KEPT bounds a link's unclaimed arrivals: frames no stream claims (a reset stream's, a
/// gRPC answer's trailers) are let go with their stream, or pushed out by newer ones, so the
/// queue never grows past what it was given when the link first watched.
const KEPT: usize = 256;

/// DATA, HEADERS and CONTINUATION are the frame types noted (RFC 9113 §6).
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
/// END_HEADERS and PADDED are the flags read (RFC 9113 §6.1, §6.2).
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;

/// Part is what a noted frame brought: a response's head (its header block's end) or a piece
/// of its body (a DATA frame with a payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Head: a header block ended.
    Head,
    /// Data: a DATA frame with a payload.
    Data,
}

/// Arrival is one noted frame.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    /// connection: the link's connection it came on (its generation).
    connection: u64,
    stream: u32,
    part: Part,
    at: Instant,
}

/// Arrivals are a link's frames noted as its connection read them, waiting for their streams
/// to claim them (one thread, one runtime: no lock).
#[derive(Debug)]
pub(crate) struct Arrivals {
    queue: RefCell<VecDeque<Arrival>>,
}

impl Arrivals {
    /// new makes an empty queue, its memory taken once.
    pub(crate) fn new() -> Self {
        Arrivals {
            queue: RefCell::new(VecDeque::with_capacity(KEPT)),
        }
    }

    /// note keeps a frame's arrival (the oldest goes when [`KEPT`] are waiting).
    fn note(&self, connection: u64, stream: u32, part: Part, at: Instant) {
        let mut q = self.queue.borrow_mut();
        if q.len() == KEPT {
            q.pop_front();
        }
        q.push_back(Arrival {
            connection,
            stream,
            part,
            at,
        });
    }

    /// claim takes the earliest unclaimed arrival of `part` on `stream` of `connection`: its
    /// time, never later than `now`; `now` when none is noted.
    pub(crate) fn claim(&self, connection: u64, stream: u32, part: Part, now: Instant) -> Instant {
        let mut q = self.queue.borrow_mut();
        let mine = |a: &Arrival| a.connection == connection && a.stream == stream && a.part == part;
        match q.iter().position(mine).and_then(|i| q.remove(i)) {
            Some(a) => a.at.min(now),
            None => now,
        }
    }

    /// forget lets go of what `stream` of `connection` left unclaimed (its response is read).
    pub(crate) fn forget(&self, connection: u64, stream: u32) {
        self.queue
            .borrow_mut()
            .retain(|a| a.connection != connection || a.stream != stream);
    }
}

/// Clock is when a stream's frames arrived: their noted stamps, claimed in order, when the
/// link stamps its reads; else the clock when each is handed over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock<'a> {
    /// noted: the link's arrivals, the connection's generation and the stream's id.
    noted: Option<(&'a Arrivals, u64, u32)>,
}

impl<'a> Clock<'a> {
    /// of is the clock of a stream on connection `connection`: `noted`, the link's arrivals
    /// and the stream's id, when the link stamps its reads; else the clock at hand-over.
    pub(crate) fn of(noted: Option<(&'a Arrivals, u32)>, connection: u64) -> Self {
        Clock {
            noted: noted.map(|(a, stream)| (a, connection, stream)),
        }
    }

    /// at is when the next `part` of the stream arrived.
    pub(crate) fn at(&self, part: Part) -> Instant {
        let now = Instant::now();
        match self.noted {
            Some((a, connection, stream)) => a.claim(connection, stream, part, now),
            None => now,
        }
    }

    /// done lets go of what the stream left unclaimed.
    pub(crate) fn done(&self) {
        if let Some((a, connection, stream)) = self.noted {
            a.forget(connection, stream);
        }
    }
}

/// Frames follows the frame headers in a connection's bytes as they are read, noting the
/// frames that end in each read.
#[derive(Debug, Default)]
struct Frames {
    /// head: the frame header being read, `have` bytes of it so far.
    head: [u8; 9],
    have: usize,
    /// length, kind, flags and stream: the current frame's, once its header is read.
    length: usize,
    kind: u8,
    flags: u8,
    stream: u32,
    /// left: its payload bytes still to come.
    left: usize,
    /// pad: a padded DATA frame's padding length (its payload's first byte).
    pad: usize,
}

impl Frames {
    /// feed follows `bytes`, read at `at`, noting into `arrivals` as from `connection` each
    /// frame whose last byte they bring.
    fn feed(&mut self, mut bytes: &[u8], at: Instant, connection: u64, arrivals: &Arrivals) {
        loop {
            if self.have < 9 {
                let n = (9 - self.have).min(bytes.len());
                self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
                self.have += n;
                bytes = &bytes[n..];
                if self.have < 9 {
                    return;
                }
                let h = self.head;
                self.length = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                self.kind = h[3];
                self.flags = h[4];
                self.stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                self.left = self.length;
                self.pad = 0;
            } else {
                let Some(&first) = bytes.first() else { return };
                if self.kind == DATA && self.flags & PADDED != 0 && self.left == self.length {
                    self.pad = usize::from(first);
                }
                let n = self.left.min(bytes.len());
                self.left -= n;
                bytes = &bytes[n..];
            }
            if self.left > 0 {
                continue;
            }
            self.have = 0;
            let part = match self.kind {
                DATA => {
                    let framing = if self.flags & PADDED != 0 {
                        1 + self.pad
                    } else {
                        0
                    };
                    (self.length > framing).then_some(Part::Data)
                }
                HEADERS | CONTINUATION => (self.flags & END_HEADERS != 0).then_some(Part::Head),
                _ => None,
            };
            if let Some(part) = part {
                arrivals.note(connection, self.stream, part, at);
            }
        }
    }
}

/// Stamped is a plain-http connection's socket as h2 reads and writes it: with a clock, each
/// read takes the kernel's receive stamp and its frames are noted (see the module docs);
/// without, it is the socket.
#[derive(Debug)]
pub(crate) struct Stamped {
    tcp: TcpStream,
    clock: Option<Noting>,
}

/// Noting is what a stamped socket notes into: the link's arrivals, as from its connection.
#[derive(Debug)]
struct Noting {
    frames: Frames,
    arrivals: Rc<Arrivals>,
    connection: u64,
}

impl Stamped {
    /// new reads `tcp` as is, or, with `arrivals` (and the kernel stamping its data), noting
    /// its frames there as from connection `connection`.
    pub(crate) fn new(tcp: TcpStream, arrivals: Option<Rc<Arrivals>>, connection: u64) -> Self {
        let arrivals = arrivals.filter(|_| crate::stamp::enable(&tcp).is_ok());
        Stamped {
            clock: arrivals.map(|arrivals| Noting {
                frames: Frames::default(),
                arrivals,
                connection,
            }),
            tcp,
        }
    }
}

impl AsyncRead for Stamped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(noting) = this.clock.as_mut() else {
            return Pin::new(&mut this.tcp).poll_read(cx, buf);
        };
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(())); // as the socket's own read: no room, no read
        }
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            // SAFETY: recvmsg writes at most the unfilled part's length, and only the bytes it
            // says it wrote are then marked initialised.
            let room: &mut [MaybeUninit<u8>] = unsafe { buf.unfilled_mut() };
            match crate::stamp::try_read_uninit(&this.tcp, room) {
                Ok((n, stamp)) => {
                    // SAFETY: the kernel wrote these n bytes.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    let filled = buf.filled();
                    let at = stamp.unwrap_or_else(Instant::now);
                    let Noting {
                        frames,
                        arrivals,
                        connection,
                    } = noting;
                    frames.feed(&filled[filled.len() - n..], at, *connection, arrivals);
                    return Poll::Ready(Ok(()));
                }
                // try_io cleared the readiness: wait for the next edge.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Stamped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "http2_stamp_tests.rs"]
mod tests;
