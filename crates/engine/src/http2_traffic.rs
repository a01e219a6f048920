//! What an HTTP/2 connection carried: the bytes h2 wrote and read, frames and all, counted as
//! they pass through the connection's socket (inside TLS, over https, as HTTP/1.1's count
//! is), because h2 does not say what a request's frames took: its header blocks are
//! HPACK-compressed against the connection's table, so the same request takes far fewer bytes
//! the second time than the first, and neither is its HTTP/1.1 text's size.
//!
//! The streams of a connection share it, so its bytes are charged to the requests as their
//! exchanges end: each takes what the connection wrote and read since the last one took
//! ([`Traffic::take_written`], [`Traffic::take_read`]), its own frames with whatever else
//! went meanwhile (the preface and SETTINGS to the first, another stream's frames read in
//! the same read). The run's sums are then the connection's bytes, less what it carried
//! after its last exchange ended (the GOAWAY of its close).

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Traffic is a link's bytes written and read that no exchange has taken yet (one thread,
/// one runtime: no lock).
#[derive(Debug, Default)]
pub(crate) struct Traffic {
    written: Cell<u64>,
    read: Cell<u64>,
}

impl Traffic {
    /// take_written is what the link's connections wrote since the last take.
    pub(crate) fn take_written(&self) -> u64 {
        self.written.take()
    }

    /// take_read is what they read since the last take.
    pub(crate) fn take_read(&self) -> u64 {
        self.read.take()
    }
}

/// Counted is a connection's socket (or TLS session) as h2 reads and writes it, counting the
/// bytes each way into its link's [`Traffic`].
#[derive(Debug)]
pub(crate) struct Counted<T> {
    io: T,
    traffic: Rc<Traffic>,
}

impl<T> Counted<T> {
    /// new counts what goes through `io` into `traffic`.
    pub(crate) fn new(io: T, traffic: Rc<Traffic>) -> Self {
        Counted { io, traffic }
    }

    /// wrote counts `n` bytes written, passing the write's outcome on.
    fn wrote(&self, done: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if let Poll::Ready(Ok(n)) = done {
            let w = &self.traffic.written;
            w.set(w.get() + n as u64);
        }
        done
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        let r = &this.traffic.read;
        r.set(r.get() + (buf.filled().len() - before) as u64);
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let done = Pin::new(&mut this.io).poll_write(cx, buf);
        this.wrote(done)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let done = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote(done)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn counts_each_way_and_takes_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let (near, mut far) = tokio::io::duplex(64);
            let traffic = Rc::new(Traffic::default());
            let mut counted = Counted::new(near, traffic.clone());
            counted.write_all(b"hello").await.expect("write");
            let vectored = [io::IoSlice::new(b"ab"), io::IoSlice::new(b"c")];
            let n = counted.write_vectored(&vectored).await.expect("write");
            far.write_all(b"0123456789").await.expect("write");
            let mut got = [0u8; 10];
            counted.read_exact(&mut got).await.expect("read");
            assert_eq!(
                (traffic.take_written(), traffic.take_read()),
                (5 + n as u64, 10)
            );
            assert_eq!((traffic.take_written(), traffic.take_read()), (0, 0));
            let mut back = vec![0u8; 5 + n];
            far.read_exact(&mut back).await.expect("read");
            assert_eq!(&back[..5], b"hello");
        });
    }
}
