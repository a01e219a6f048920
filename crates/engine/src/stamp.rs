//! Kernel receive timestamps: when a response's bytes reached the socket, not when we read them.
//!
//! The open model naps until its next due hit instead of waking for every response (see
//! [`crate::metronome::on_park`]); responses that arrive meanwhile wait in their sockets. Timing
//! them at the read would charge that wait to the server, so sockets of napping threads ask the
//! kernel to stamp incoming data (`SO_TIMESTAMPNS`) and the reader takes the stamp of the read
//! that completed the response. The stamp is `CLOCK_REALTIME`; it is turned into an `Instant`
//! by its age at the read (two clock reads, no offset kept, so a clock step cannot skew a run).

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tokio::io::Interest;
use tokio::net::TcpStream;

/// MAX_AGE bounds a believable stamp: an older one means the wall clock stepped, and the read
/// time is used instead.
const MAX_AGE: Duration = Duration::from_secs(10);

/// Stamps is which kernel stamps a connection asks for. Receive stamps ([`crate::stamp`])
/// cost a control message per read; transmit stamps ([`crate::sendstamp`]) cost the kernel a
/// queued message per stamped write and the reader a read of it, asked for one request in
/// 16 in the open model; the closed model asks for none (a request there has no intended time
/// to lag behind): its send time is its write's bracket when that is narrow, and user space's
/// when not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    /// receive: when a response's bytes arrived.
    pub receive: bool,
    /// transmit: when a request's bytes left.
    pub transmit: bool,
}

/// enable asks the kernel to stamp the data arriving on `stream`.
pub fn enable(stream: &TcpStream) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: valid socket descriptor; the option value is a c_int that outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// try_read is `TcpStream::try_read` that also returns when the bytes arrived (None when the
/// kernel gave no stamp).
pub fn try_read(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    // SAFETY: initialised bytes are valid MaybeUninit ones, and recvmsg writes only bytes.
    let room = unsafe { &mut *(buf as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
    try_read_uninit(stream, room)
}

/// try_read_uninit is [`try_read`] into memory not yet initialised (a `ReadBuf`'s room, as
/// HTTP/2's stamped socket reads, `crate::http2_stamp`): the first `n` bytes are written.
pub fn try_read_uninit(
    stream: &TcpStream,
    buf: &mut [std::mem::MaybeUninit<u8>],
) -> io::Result<(usize, Option<Instant>)> {
    stream.try_io(Interest::READABLE, || {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // Room for an SCM_TIMESTAMPNS message and the SCM_TIMESTAMPING one that comes with it
        // on a socket that also asked for transmit stamps (crate::sendstamp), 8-byte aligned
        // as cmsghdr needs.
        let mut space = [0u64; 16];
        // SAFETY: msghdr is plain old data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        // SAFETY: msg points at a live iovec over `buf` and a live control buffer, both sized
        // as declared.
        let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let read_at = Instant::now();
        Ok((
            n as usize,
            stamp_of(&msg).and_then(|ts| instant_of(ts, read_at)),
        ))
    })
}

/// stamp_of finds the SCM_TIMESTAMPNS control message of a `recvmsg` result.
fn stamp_of(msg: &libc::msghdr) -> Option<libc::timespec> {
    // SAFETY: `msg` was filled by recvmsg; the CMSG_* macros walk its control buffer within
    // msg_controllen, and the timestamp is read unaligned from inside a message of its type.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                return Some(std::ptr::read_unaligned(
                    libc::CMSG_DATA(c).cast::<libc::timespec>(),
                ));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// instant_of turns a kernel's wall-clock stamp into an `Instant`, given the `Instant` at
/// which it was read.
pub(crate) fn instant_of(ts: libc::timespec, read_at: Instant) -> Option<Instant> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and a writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } != 0 {
        return None;
    }
    age(ts, now).map(|a| read_at.checked_sub(a).unwrap_or(read_at))
}

/// age is how long before `now` the stamp `ts` was taken (zero if after it, None if
/// unbelievably old).
fn age(ts: libc::timespec, now: libc::timespec) -> Option<Duration> {
    let ns = (i128::from(now.tv_sec) - i128::from(ts.tv_sec)) * 1_000_000_000
        + (i128::from(now.tv_nsec) - i128::from(ts.tv_nsec));
    if ns <= 0 {
        return Some(Duration::ZERO);
    }
    let age = Duration::from_nanos(u64::try_from(ns).ok()?);
    (age <= MAX_AGE).then_some(age)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(sec: i64, nsec: i64) -> libc::timespec {
        libc::timespec {
            tv_sec: sec as libc::time_t,
            tv_nsec: nsec as libc::c_long,
        }
    }

    #[test]
    fn age_of_a_stamp() {
        let cases = [
            ("same instant", ts(100, 5), ts(100, 5), Some(Duration::ZERO)),
            (
                "250 us",
                ts(100, 999_900_000),
                ts(101, 150_000),
                Some(Duration::from_micros(250)),
            ),
            (
                "stamp after now (clock stepped back)",
                ts(101, 0),
                ts(100, 0),
                Some(Duration::ZERO),
            ),
            (
                "older than MAX_AGE (clock stepped forward)",
                ts(100, 0),
                ts(200, 0),
                None,
            ),
        ];
        for (label, stamp, now, want) in cases {
            assert_eq!(age(stamp, now), want, "{label}");
        }
    }

    /// A real socket: data written 30 ms before the read is stamped about 30 ms before it.
    #[test]
    fn stamps_tell_when_data_arrived_not_when_it_was_read() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let client = TcpStream::connect(addr).await.expect("connect");
            let (server, _) = listener.accept().await.expect("accept");
            enable(&client).expect("SO_TIMESTAMPNS");
            // The kernel turns stamping on a moment after the first socket asks (a deferred
            // static key), so the first messages may come unstamped: try a few, boundedly.
            let mut stamped = None;
            for _ in 0..50 {
                server.writable().await.expect("writable");
                let written = Instant::now();
                server.try_write(b"hello").expect("write");
                std::thread::sleep(Duration::from_millis(30));
                client.readable().await.expect("readable");
                let mut buf = [0u8; 16];
                let (n, at) = try_read(&client, &mut buf).expect("read");
                let read = Instant::now();
                assert_eq!(&buf[..n], b"hello");
                if let Some(at) = at {
                    stamped = Some((written, at, read));
                    break;
                }
            }
            let (written, at, read) = stamped.expect("the kernel never stamped the data");
            // (1 ms of slack for the two clocks the conversion reads)
            assert!(
                at + Duration::from_millis(1) >= written,
                "stamped before it was written"
            );
            assert!(
                at.duration_since(written) < Duration::from_millis(5),
                "stamp {:?} after the write",
                at.duration_since(written)
            );
            assert!(read.duration_since(at) >= Duration::from_millis(29));
        });
    }
}
