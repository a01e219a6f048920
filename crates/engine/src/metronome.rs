//! Sub-millisecond wake-ups for the open model's send schedule.
//!
//! tokio's timer wheel has millisecond resolution, so a hit due at 10.2 ms is sent at ~11 ms.
//! In the open model latency is measured from the *intended* send time, so that slop would be
//! charged to the server: a 20 µs service time showed up as ~1 ms. A `Metronome` is one
//! `timerfd` per worker thread (nanosecond resolution, delivered through the same epoll as the
//! sockets) plus a queue of waiting lanes sorted by due time (hits are claimed in schedule
//! order, so inserts land at the back) with the timer armed for its front: one
//! `timerfd_settime` per wake-up, shared by every hit due by then.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// EARLY is how far ahead of its due time a hit may go out. Waking once per hit would cost a
/// context switch per request at high rates (the open model's dominant CPU cost, measured at
/// ~15 µs/request at 30k req/s); sending every hit due within the next 200 µs together turns
/// that into one wake-up per batch. Hits are never sent *later* because of this, and a hit
/// sent early is timed from its actual send, so no latency is understated.
pub const EARLY: Duration = Duration::from_micros(200);

/// Metronome wakes lanes at their due times with sub-millisecond precision.
#[derive(Debug)]
pub struct Metronome {
    fd: AsyncFd<OwnedFd>,
    queue: RefCell<VecDeque<(Instant, Waker)>>,
    armed: Cell<Option<Instant>>,
}

impl Metronome {
    /// new creates the thread's timerfd; it must be called inside a tokio runtime.
    pub fn new() -> io::Result<Metronome> {
        // SAFETY: plain syscall; the returned descriptor is checked and then owned.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd is moved into the AsyncFd, so the descriptor stays open and the
        // same for the AsyncFd's whole life.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?;
        Ok(Metronome {
            fd,
            queue: RefCell::new(VecDeque::new()),
            armed: Cell::new(None),
        })
    }

    /// wait_until returns at `due` (or at once if it is within [`EARLY`]).
    pub async fn wait_until(&self, due: Instant) {
        let mut queued = false;
        poll_fn(|cx| {
            if Instant::now() + EARLY >= due {
                return Poll::Ready(());
            }
            if !queued {
                queued = true;
                let mut q = self.queue.borrow_mut();
                // Almost always the back (hits are claimed in due order), but a lane that
                // awaited something between claiming and waiting may be behind another.
                let at = q.partition_point(|(d, _)| *d <= due);
                q.insert(at, (due, cx.waker().clone()));
                drop(q);
                if self.armed.get().is_none_or(|a| due < a) {
                    self.arm(due);
                }
            }
            Poll::Pending
        })
        .await
    }

    /// run is the thread's dispatcher task: on each timer expiry it wakes every lane that is
    /// due and re-arms for the next one.
    pub async fn run(&self) {
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                return;
            };
            // Re-arming resets the timerfd's expiry count, so no read() is needed to drain it.
            guard.clear_ready();
            drop(guard);
            self.armed.set(None);
            NAP_UNTIL.with(|n| n.set(None));
            let now = Instant::now() + EARLY;
            let next = {
                let mut q = self.queue.borrow_mut();
                while q.front().is_some_and(|(due, _)| *due <= now) {
                    if let Some((_, w)) = q.pop_front() {
                        w.wake();
                    }
                }
                q.front().map(|(due, _)| *due)
            };
            if let Some(due) = next {
                self.arm(due);
            }
        }
    }

    fn arm(&self, due: Instant) {
        NAP_UNTIL.with(|n| n.set(Some(due)));
        let wait = due
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: libc::c_long::from(wait.subsec_nanos() as i32),
            },
        };
        // SAFETY: valid descriptor and a fully initialised itimerspec; old value not wanted.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc == 0 {
            self.armed.set(Some(due));
        }
    }
}

/// NAP_MAX: the longest a thread naps; a next hit further away than this parks on epoll as
/// usual (at such low rates a wake-up per response costs little).
pub const NAP_MAX: Duration = Duration::from_millis(1);

thread_local! {
    /// NAPS: whether this thread may nap (open model over plain http, stamps working).
    static NAPS: Cell<bool> = const { Cell::new(false) };
    /// NAP_UNTIL: when the metronome's timer fires next (None: not armed).
    static NAP_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// set_naps allows or forbids naps on this thread.
pub fn set_naps(on: bool) {
    NAPS.with(|n| n.set(on));
}

/// nap is the worker runtime's before-park hook. When the thread has nothing to run and its
/// next hit is due within [`NAP_MAX`], it sleeps until then instead of parking on epoll:
/// responses that arrive meanwhile wait in their sockets, and the one wake-up at the due
/// time serves them all with the sends (at 90k req/s: 0.04 instead of 0.2 context switches
/// per request). Their latency is not stretched by the nap: a napping thread's sockets carry
/// kernel receive timestamps ([`crate::stamp`]), and a response ends when its bytes arrived.
pub fn nap() {
    if !NAPS.with(Cell::get) {
        return;
    }
    let Some(due) = NAP_UNTIL.with(Cell::get) else {
        return;
    };
    let now = Instant::now();
    if due > now && due <= now + NAP_MAX {
        std::thread::sleep(due - now);
    }
}
