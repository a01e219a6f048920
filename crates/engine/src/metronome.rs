//! Sub-millisecond wake-ups for the open model's send schedule.
//!
//! tokio's timer wheel has millisecond resolution, so a hit due at 10.2 ms is sent at ~11 ms.
//! In the open model latency is measured from the *intended* send time, so that slop would be
//! charged to the server: a 20 µs service time showed up as ~1 ms. A `Metronome` is a queue of
//! waiting lanes sorted by due time (hits are claimed in schedule order, so inserts land at
//! the back) and two ways to wake at its front, both at nanosecond resolution:
//!
//! - **the nap** ([`on_park`]): when the thread has nothing to run and the front is due
//!   within [`NAP_MAX`], it sleeps until then in the runtime's before-park hook and wakes the
//!   lanes due by then itself; responses that arrive meanwhile wait in their sockets and are
//!   served in the same wake-up as the sends (the runtime polls its reactor without blocking
//!   when the hook has scheduled work). One timer a wake-up, no `timerfd_settime`.
//! - **the timer**: one `timerfd` per worker thread, delivered through the same epoll as the
//!   sockets, armed by the hook for a front further away than a nap (or on a thread that may
//!   not nap): one `timerfd_settime` a wake-up.
//!
//! Arming only in the hook, never on a lane's insert, means a front that a nap serves never
//! also fires a timer (at 2,000 req/s that was two timer interrupts and a `timerfd_settime`
//! a request where one nap does).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// NAP_MAX: the longest a thread naps (plus the send-ahead window); a front further away is
/// left to the timer (at such low rates a wake-up per response costs little).
pub const NAP_MAX: Duration = Duration::from_millis(1);

thread_local! {
    /// THIS: the thread's metronome, for the runtime's before-park hook ([`on_park`]) and for
    /// a connection that finds it cannot nap ([`forbid_naps`]); neither has another way in.
    static THIS: RefCell<Option<Rc<Metronome>>> = const { RefCell::new(None) };
    /// WAKE: how many times this thread has parked: the lanes served between two parks were
    /// woken together ([`wake`]).
    static WAKE: Cell<u64> = const { Cell::new(0) };
}

/// wake numbers the thread's current wake-up (it changes each time the thread parks), so
/// that the claims of one wake-up can be matched together ([`crate::handover`]).
pub fn wake() -> u64 {
    WAKE.with(Cell::get)
}

/// Metronome wakes lanes at their due times with sub-millisecond precision.
#[derive(Debug)]
pub struct Metronome {
    fd: AsyncFd<OwnedFd>,
    queue: RefCell<VecDeque<(Instant, Waker)>>,
    /// armed: when the timerfd fires next (None: disarmed or already fired).
    armed: Cell<Option<Instant>>,
    /// naps: whether this thread may nap (open model over plain http, stamps working).
    naps: Cell<bool>,
    /// upcoming: when the first hit no lane has claimed yet falls due, as the pacer said at
    /// the last claim: the nap's other front, for when every lane is busy with a request
    /// and none waits in the queue (None: not known).
    upcoming: Cell<Option<Instant>>,
    /// early: how far ahead of its due time a hit goes out with the ones due before it
    /// (the run's `send_ahead`, see [`crate::config::DEFAULT_SEND_AHEAD_S`]).
    early: Duration,
}

impl Metronome {
    /// install creates the calling thread's metronome (its timerfd registers with the
    /// runtime entered on this thread) and makes it the one the park hook serves.
    pub fn install(naps: bool, early: Duration) -> io::Result<Rc<Metronome>> {
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
        let m = Rc::new(Metronome {
            fd,
            queue: RefCell::new(VecDeque::new()),
            armed: Cell::new(None),
            naps: Cell::new(naps),
            upcoming: Cell::new(None),
            early,
        });
        THIS.with(|t| *t.borrow_mut() = Some(m.clone()));
        Ok(m)
    }

    /// wait_until returns at `due` (or at once if it is within the send-ahead window).
    pub async fn wait_until(&self, due: Instant) {
        let mut queued = false;
        poll_fn(|cx| {
            let now = Instant::now();
            if now + self.early >= due {
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
                // A thread too busy to park still sends on time: whoever queues wakes what
                // fell due meanwhile.
                self.release(now);
            }
            Poll::Pending
        })
        .await
    }

    /// naps says whether this thread naps (see [`forbid_naps`]); lanes ask for kernel
    /// receive stamps and give the nap its hint only while it does.
    pub fn naps(&self) -> bool {
        self.naps.get()
    }

    /// expect tells the metronome when the next unclaimed hit falls due (see `upcoming`).
    pub fn expect(&self, due: Instant) {
        self.upcoming.set(Some(due));
    }

    /// run is the thread's timer task: on each expiry it wakes every lane that is due. The
    /// next expiry is armed (or napped to) by the park hook.
    pub async fn run(&self) {
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                return;
            };
            // Re-arming resets the timerfd's expiry count, so no read() is needed to drain it.
            guard.clear_ready();
            drop(guard);
            self.armed.set(None);
            self.release(Instant::now());
        }
    }

    /// release wakes every lane due by `now` + the send-ahead window.
    fn release(&self, now: Instant) {
        let by = now + self.early;
        let mut q = self.queue.borrow_mut();
        while q.front().is_some_and(|(due, _)| *due <= by) {
            if let Some((_, w)) = q.pop_front() {
                w.wake();
            }
        }
    }

    /// park is the before-park hook's work: nap to a front due within [`NAP_MAX`] and wake
    /// its lanes, or make sure the timer is armed for it. With no lane waiting, or the next
    /// unclaimed hit due before the queue's front, the thread naps to that hit instead: the
    /// lanes it needs are busy with requests, whose responses are then read in one wake-up
    /// at its due time rather than one each (never past it, so no send is late for it).
    fn park(&self) {
        let now = Instant::now();
        let queued = self.queue.borrow().front().map(|(due, _)| *due);
        let upcoming = self.upcoming.get().filter(|u| *u > now);
        let Some(nap_to) = queued.into_iter().chain(upcoming).min() else {
            return;
        };
        if queued.is_some_and(|q| q <= now + self.early) {
            self.release(now);
            return;
        }
        // A hit may go out up to `early` before its time, so a nap reaches that much further;
        // a front the timer already fires for is left to it (a nap as well would be a second
        // timer at the same instant).
        let reach = now + NAP_MAX + self.early;
        if self.naps.get() && nap_to <= reach && self.armed.get() != Some(nap_to) {
            std::thread::sleep(nap_to - now);
            self.release(Instant::now());
            return;
        }
        if let Some(q) = queued {
            if self.armed.get() != Some(q) {
                self.arm(q);
            }
        }
    }

    fn arm(&self, due: Instant) {
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

/// uninstall lets go of the thread's metronome (before its runtime, whose reactor holds its
/// timerfd, is dropped).
pub fn uninstall() {
    let m = THIS.with(|t| t.borrow_mut().take());
    drop(m);
}

/// forbid_naps stops this thread's naps (a connection could not get kernel receive
/// timestamps, and without them a nap would be charged to the server); its fronts go to the
/// timer from the next park on.
pub fn forbid_naps() {
    THIS.with(|t| {
        if let Some(m) = t.borrow().as_ref() {
            m.naps.set(false);
        }
    });
}

/// on_park is the worker runtime's before-park hook. When the thread has nothing to run and
/// its next hit is due within [`NAP_MAX`], it sleeps until then instead of parking on epoll
/// and wakes the lanes due: responses that arrive meanwhile wait in their sockets, and the
/// one wake-up at the due time serves them all with the sends (at 90k req/s: 0.04 instead
/// of 0.2 context switches per request). Their latency is not stretched by the nap: a
/// napping thread's sockets carry kernel receive timestamps ([`crate::stamp`]), and a
/// response ends when its bytes arrived. Otherwise it arms the thread's timer for that hit.
pub fn on_park() {
    WAKE.with(|w| w.set(w.get().wrapping_add(1)));
    // A clone, so no borrow of THIS is held while lanes are woken.
    let Some(m) = THIS.with(|t| t.borrow().clone()) else {
        return;
    };
    m.park();
}
