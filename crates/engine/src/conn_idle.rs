//! [`Conn::gone_while_idle`]: whether a kept-alive connection is still there before a request
//! is written on it.
//!
//! Servers close a connection that sits idle past their keep-alive timeout (uvicorn and Node
//! after 5 s, gunicorn 2 s, nginx 75 s). A request written on such a connection meets the
//! close, and a POST that meets it cannot be sent again: the server may have received it
//! (see [`Conn::exchange`]). So before writing on a connection it did not just open, the
//! connection looks for a close it has already been told of, as Go's transport (its idle
//! connections' read loop) and hyper's pool (a closed connection is not checked out) do, and
//! opens a fresh one instead; nothing of the request was sent, so nothing is resent.
//!
//! What it costs: after a complete response the connection drops tokio's read readiness
//! ([`Conn::round_trip`], `drained`), so readiness present now means the server wrote or
//! closed since; reading that flag is an atomic load, no syscall. Only then, or once
//! [`IDLE_PEEK`] has passed since the connection last sent a request or opened (tokio may not
//! have polled the kernel since the close; and TLS, whose readiness is not dropped), does it
//! ask the kernel: a `MSG_PEEK` that takes nothing (TLS: rustls reads what came, a session
//! ticket being no close). A busy connection pays nothing; an idle one, one syscall a request
//! at most.
//!
//! What it cannot see: a close that crosses the request on the wire (the server's timeout
//! firing as the request arrives). That one is met after the write, and the resend rules of
//! [`Conn::exchange`] decide.

use std::io;
use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

use tokio::io::Interest;
use tokio::net::TcpStream;

use super::Conn;

/// IDLE_PEEK is how long a connection must have sat unused before it asks the kernel whether
/// the server closed it, whatever tokio's readiness says: far below any server's keep-alive
/// timeout, and far above a busy connection's gap between requests.
const IDLE_PEEK: Duration = Duration::from_millis(100);

impl Conn {
    /// gone_while_idle says whether the server closed this open connection (or reset it, or
    /// sent bytes nobody asked for, which a `408` before a close is) since its last response;
    /// `now` is the caller's clock. False for a connection that is not open.
    pub(super) fn gone_while_idle(&mut self, now: Instant) -> bool {
        let Some(stream) = self.stream.as_ref() else {
            return false;
        };
        let idle = now.saturating_duration_since(self.used_at) >= IDLE_PEEK;
        if let Some(session) = self.tls.as_deref_mut() {
            if !idle || self.buf.start != self.buf.end {
                return false;
            }
            // Raw bytes on a TLS socket may be a session ticket: let rustls read them.
            let read = crate::tls::try_read(session, stream, &mut self.buf.data);
            self.buf.clear();
            return gone(read);
        }
        let peeked = if idle {
            peek(stream)
        } else if self.drained {
            // Readiness dropped after the last response: present only if something came since.
            stream.try_io(Interest::READABLE, || peek(stream))
        } else {
            return false;
        };
        gone(peeked)
    }
}

/// gone reads a look at an idle connection: nothing to read means still open; an end of
/// stream, bytes or an error mean the connection cannot carry a request.
fn gone(read: io::Result<usize>) -> bool {
    !matches!(&read, Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted))
}

/// peek asks the kernel, without waiting and without taking anything, whether the socket has
/// a byte, an end of stream or an error to read.
fn peek(stream: &TcpStream) -> io::Result<usize> {
    let mut byte = [MaybeUninit::<u8>::uninit()];
    socket2::SockRef::from(stream).peek(&mut byte)
}
