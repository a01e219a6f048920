//! Kernel transmit stamps: when a request really left, not when the generator meant to write it.
//!
//! A request's send time taken in user space before the write charges the server with any
//! preemption between the stamp and the write (a busy core doubled a 4 ms server's p99). So the
//! write's syscall is bracketed by two clock reads, the first right before it: when the
//! bracket is narrow ([`SLACK`]), the thread ran straight through the syscall and the bytes
//! left inside it, so the bracket's start *is* the send time, to within the slack. Only a wide
//! bracket (the thread was interrupted or preempted around the syscall) leaves the moment open.
//!
//! The kernel can say that moment: `SO_TIMESTAMPING` with `SOF_TIMESTAMPING_TX_SOFTWARE` stamps
//! a write as it hands the bytes to the device (`OPT_ID` numbers the stamps by the last byte
//! written, `OPT_TSONLY` keeps the payload out) and queues the stamp on the socket's error
//! queue. But a stamp must be asked for before the write, and whether a bracket comes out wide
//! is known only after it: stamping every write cost the open model a fifth of its CPU a
//! request (a queued message and a wake-up per write, and reading each one back off the
//! queue: 26.5 against 22.1 µs at 5,400 req/s, bench/results/seam.md), for the 0.3-0.7 % of
//! writes that come out wide on a loaded machine. Stamps are therefore asked per write (a
//! control message on `sendmsg`) for one request in [`SAMPLE`]: a wide bracket of a stamped
//! request reads its stamp; a wide one without falls back to user space's stamp, counted and
//! said in the result. On a kernel that cannot preempt a syscall before its bytes leave
//! (`PREEMPT_NONE`/`VOLUNTARY`, most servers') a wide bracket's start is still within the
//! syscall's entry of the stamp (measured by hand, every write stamped, at load 17 on the
//! 2-core box, beside a spinning loop and not: the stamps of wide brackets lay within 124 µs of
//! their start, three in four within 20 µs, never a scheduler slice later). Where a sampled
//! stamp shows the bytes leaving [`PREEMPTED`] or more after their syscall began (a kernel that
//! preempted the syscall first), the connection stamps every write from then on. The unread
//! stamps of narrow brackets are drained a batch at a time ([`DRAIN`] stamps, one `recvmmsg`).

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tokio::io::Interest;
use tokio::net::TcpStream;

/// SLACK is the widest write bracket taken as the send time itself: the loopback write that
/// also runs the receiver's TCP input takes 5-20 µs; a preempted thread's bracket is a
/// scheduler slice (milliseconds).
pub const SLACK: Duration = Duration::from_micros(50);

/// DRAIN is how many unread stamps a connection keeps before it reads them in one batch.
const DRAIN: u32 = 32;

/// SAMPLE: one request in this many asks the kernel for its transmit stamp (see the module's
/// note); the others pay nothing for it.
const SAMPLE: u32 = 16;

/// PREEMPTED: a stamp this long after its syscall began means the kernel preempted the thread
/// before the bytes left, so no bracket's start can stand in for a stamp there (a scheduler
/// slice is milliseconds; an interrupt served in the syscall, tens of microseconds).
const PREEMPTED: Duration = Duration::from_millis(1);

/// BATCH is the most stamps one read takes off the queue.
const BATCH: usize = 48;

/// SO_TIMESTAMPING (`SO_TIMESTAMPING_OLD`: timespecs of the native `time_t`, 64-bit here).
const SO_TIMESTAMPING: libc::c_int = 37;

/// enable readies `stream` for transmit stamps asked per write ([`send_stamped`]): software
/// stamps, numbered by byte (`OPT_ID`), without payload; `OPT_RX_FILTER` (Linux 6.5) keeps the
/// receive stamps the socket already gets (`SO_TIMESTAMPNS`) from coming twice, where the
/// kernel knows it.
pub fn enable(stream: &TcpStream) -> io::Result<()> {
    let flags: libc::c_uint = libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    set_timestamping(stream, flags | libc::SOF_TIMESTAMPING_OPT_RX_FILTER)
        .or_else(|_| set_timestamping(stream, flags))
}

/// set_timestamping sets `stream`'s `SO_TIMESTAMPING` flags.
fn set_timestamping(stream: &TcpStream, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: valid socket descriptor; the option value is a c_uint that outlives the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_TIMESTAMPING,
            (&flags as *const libc::c_uint).cast(),
            size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// send_stamped is `TcpStream::try_write` asking the kernel to stamp this write as it leaves
/// (a `SO_TIMESTAMPING` control message, Linux 4.13); on a socket [`enable`]d for it.
pub fn send_stamped(stream: &TcpStream, data: &[u8]) -> io::Result<usize> {
    stream.try_io(Interest::WRITABLE, || {
        let mut iov = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        // Room for one control message of a c_uint, 8-byte aligned as cmsghdr needs.
        let mut space = [0u64; 4];
        // SAFETY: msghdr is plain old data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is arithmetic on its argument.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<libc::c_uint>() as u32) } as _;
        // SAFETY: the control buffer is live, aligned and holds CMSG_SPACE(c_uint) bytes, so
        // the first header and its data fit; sendmsg reads `data` through the iovec only.
        let n = unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = SO_TIMESTAMPING;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_uint>() as u32) as _;
            std::ptr::write_unaligned(
                libc::CMSG_DATA(c).cast::<libc::c_uint>(),
                libc::SOF_TIMESTAMPING_TX_SOFTWARE,
            );
            libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    })
}

/// narrow is the send time of a write bracketed by `from..to` without transmit stamps:
/// `from` when the bracket is narrow (the thread ran straight through the write), None when
/// it is wide (where in it the bytes left is unknown: user space's stamp stands in).
pub fn narrow(from: Instant, to: Instant) -> Option<Instant> {
    (to.saturating_duration_since(from) <= SLACK).then_some(from)
}

/// handshake is the server's part of `stream`'s connect, as the kernel timed it: its first
/// round-trip sample, from the SYN leaving to the SYN-ACK arriving (`TCP_INFO`'s `tcpi_rtt`
/// right after the connect). The rest of the connect's span is the generator's (a thread busy
/// with other lanes, or not running, notices the connect late). None when the SYN was sent
/// again (the server's queue was full: the whole connect is its backpressure) or the kernel
/// says nothing.
pub fn handshake(stream: &TcpStream) -> Option<Duration> {
    // SAFETY: tcp_info is plain old data (all-zero valid); getsockopt writes at most `len`
    // bytes into it and says how many.
    let mut info: libc::tcp_info = unsafe { zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: valid socket descriptor; `info` and `len` outlive the call, sized as declared.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    let retransmitted = info.tcpi_total_retrans > 0 || info.tcpi_retransmits > 0;
    (rc == 0 && !retransmitted && info.tcpi_rtt > 0)
        .then(|| Duration::from_micros(u64::from(info.tcpi_rtt)))
}

/// Sends is a connection's count of its writes: the `OPT_ID` key of the next stamp, how many
/// stamps wait unread, and which requests ask for one.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sends {
    /// written: bytes written since stamping was enabled (a stamp's key is its write's last
    /// byte's offset).
    written: u64,
    /// unread: stamped writes whose stamps have not been read off the queue.
    unread: u32,
    /// requests: requests begun, for the one-in-[`SAMPLE`] choice.
    requests: u32,
    /// stamping: the request being written asks for stamps.
    stamping: bool,
    /// every: every request asks (a sampled stamp showed the kernel preempting a syscall
    /// before its bytes left).
    every: bool,
    /// refused: the kernel refused a stamp asked per write: none is asked again.
    refused: bool,
}

impl Sends {
    /// begin starts a request's writes: whether they ask for stamps ([`send_stamped`]).
    pub fn begin(&mut self) -> bool {
        self.requests = self.requests.wrapping_add(1);
        self.stamping = !self.refused && (self.every || self.requests.is_multiple_of(SAMPLE));
        self.stamping
    }

    /// refuse stops asking for stamps (the kernel refused the control message).
    pub fn refuse(&mut self) {
        self.refused = true;
        self.stamping = false;
    }

    /// wrote counts a write of `n` bytes (stamped if its request asked).
    pub fn wrote(&mut self, n: usize) {
        self.written += n as u64;
        self.unread += u32::from(self.stamping);
    }

    /// left is when the request whose writes' syscalls were bracketed by `from..to` left:
    /// `from` when the bracket is narrow (and the queue is drained once [`DRAIN`] stamps
    /// wait), else the kernel's stamp of its last write, read now, when the request asked for
    /// one; None when it did not, or the stamp is not there (the bytes wait in the socket):
    /// the caller keeps user space's.
    pub fn left(&mut self, stream: &TcpStream, from: Instant, to: Instant) -> Option<Instant> {
        if to.saturating_duration_since(from) <= SLACK {
            if self.unread >= DRAIN {
                let _ = self.read(stream, None);
            }
            return Some(from);
        }
        if !self.stamping {
            return None;
        }
        let key = self.written.checked_sub(1)? as u32;
        let left = self.read(stream, Some(key)).ok().flatten()?;
        if left.saturating_duration_since(from) >= PREEMPTED {
            self.every = true;
        }
        Some(left)
    }

    /// read takes the waiting stamps off the queue (batches until it is empty) and returns
    /// the stamp of `key`, if asked for and found.
    fn read(&mut self, stream: &TcpStream, key: Option<u32>) -> io::Result<Option<Instant>> {
        let mut found = None;
        loop {
            let (n, hit) = read_batch(stream.as_raw_fd(), key)?;
            found = found.or(hit);
            self.unread = self.unread.saturating_sub(n as u32);
            if n < BATCH {
                self.unread = 0;
                return Ok(found);
            }
        }
    }
}

/// Room for one message's control data: an IP(V6)_RECVERR (sock_extended_err and the
/// offender's address) and an SCM_TIMESTAMPING (three timespecs), 8-byte aligned.
type Control = [u64; 24];

/// read_batch reads up to [`BATCH`] stamps off `fd`'s error queue in one `recvmmsg`: how many
/// it read, and the software stamp of the write keyed `key` among them, as an `Instant`.
fn read_batch(fd: libc::c_int, key: Option<u32>) -> io::Result<(usize, Option<Instant>)> {
    let mut control: [Control; BATCH] = [[0; 24]; BATCH];
    // SAFETY: mmsghdr is plain old data; all-zero is a valid empty header.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
    for (m, c) in msgs.iter_mut().zip(control.iter_mut()) {
        m.msg_hdr.msg_control = c.as_mut_ptr().cast();
        m.msg_hdr.msg_controllen = size_of::<Control>() as _;
    }
    // SAFETY: every header points at its own live control buffer, sized as declared; no
    // iovec (OPT_TSONLY: the stamps carry no payload).
    let n = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            BATCH as libc::c_uint,
            libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock {
            Ok((0, None))
        } else {
            Err(e)
        };
    }
    let read_at = Instant::now();
    let n = n as usize;
    let found = key.and_then(|key| {
        msgs[..n]
            .iter()
            .filter_map(|m| stamp_of(&m.msg_hdr))
            .find(|(k, _)| *k == key)
            .and_then(|(_, ts)| crate::stamp::instant_of(ts, read_at))
    });
    Ok((n, found))
}

/// stamp_of reads a transmit stamp message: its `OPT_ID` key and its software stamp.
fn stamp_of(msg: &libc::msghdr) -> Option<(u32, libc::timespec)> {
    let mut key = None;
    let mut ts = None;
    // SAFETY: `msg` was filled by recvmmsg; the CMSG_* macros walk its control buffer within
    // msg_controllen, and each payload is read unaligned from inside a message of its type.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let (level, kind) = ((*c).cmsg_level, (*c).cmsg_type);
            if level == libc::SOL_SOCKET && kind == SO_TIMESTAMPING {
                let three =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<[libc::timespec; 3]>());
                ts = Some(three[0]);
            } else if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
            {
                let e =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::sock_extended_err>());
                if e.ee_errno == libc::ENOMSG as u32
                    && e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                    && e.ee_info == SCM_TSTAMP_SND
                {
                    key = Some(e.ee_data);
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    Some((key?, ts?))
}

/// SCM_TSTAMP_SND: a stamp taken as the bytes went to the device.
const SCM_TSTAMP_SND: u32 = 0;

#[cfg(test)]
#[path = "sendstamp_tests.rs"]
mod tests;
