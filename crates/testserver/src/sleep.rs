//! Precise delays for injected latency.
//!
//! tokio's timer has 1 ms granularity and rounds deadlines up: a 20 ms delay came back at
//! p50 = 21.4 ms (wrk, 10 connections), too coarse for tests that expect a fixed 20 ms latency
//! to read as 20 ± 1 ms. On Linux each serving thread therefore keeps one timerfd (a kernel
//! hrtimer, microsecond precision) armed for the earliest pending deadline, with the deadlines
//! in a heap: one descriptor per thread, not per connection, and a timer syscall only when the
//! earliest deadline changes. The thread's accept loop drives it ([`Driver`]). Threads without
//! a driver (other platforms, or no timerfd) use tokio's timer.

use std::io;
use std::time::Instant;

/// until returns at, never before, `deadline`.
pub(crate) async fn until(deadline: Instant) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if wheel::installed() {
        return wheel::Sleep { deadline }.await;
    }
    tokio::time::sleep_until(deadline.into()).await;
    Ok(())
}

/// Driver fires the current thread's precise timers; `None` where they are unavailable.
#[derive(Debug)]
pub(crate) struct Driver {
    #[cfg(target_os = "linux")]
    timer: std::rc::Rc<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

impl Driver {
    /// install sets up precise timers for the calling thread (inside its runtime).
    pub(crate) fn install() -> Option<Driver> {
        #[cfg(target_os = "linux")]
        {
            wheel::install().ok().map(|timer| Driver { timer })
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// fire waits for the timer and wakes every sleeper whose deadline has passed.
    pub(crate) async fn fire(&self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            wheel::fire(&self.timer).await
        }
        #[cfg(not(target_os = "linux"))]
        {
            std::future::pending().await
        }
    }
}

/// uninstall drops the current thread's precise timers after a timer error; pending sleepers
/// are woken and fail (their connections close) rather than wait forever.
pub(crate) fn uninstall() {
    #[cfg(target_os = "linux")]
    wheel::uninstall();
}

/// drive fires a driver's timers if there is one, else never completes (for `select!`).
pub(crate) async fn drive(driver: &Option<Driver>) -> io::Result<()> {
    match driver {
        Some(driver) => driver.fire().await,
        None => std::future::pending().await,
    }
}

#[cfg(target_os = "linux")]
mod wheel {
    use std::cell::RefCell;
    use std::cmp::{Ordering, Reverse};
    use std::collections::BinaryHeap;
    use std::future::Future;
    use std::io;
    use std::os::fd::OwnedFd;
    use std::pin::Pin;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    type Timer = Rc<AsyncFd<OwnedFd>>;

    thread_local! {
        static WHEEL: RefCell<Option<Wheel>> = const { RefCell::new(None) };
    }

    struct Wheel {
        timer: Timer,
        sleepers: BinaryHeap<Reverse<Sleeper>>,
        armed: Option<Instant>,
    }

    struct Sleeper {
        deadline: Instant,
        waker: Waker,
    }

    impl PartialEq for Sleeper {
        fn eq(&self, other: &Self) -> bool {
            self.deadline == other.deadline
        }
    }
    impl Eq for Sleeper {}
    impl PartialOrd for Sleeper {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Sleeper {
        fn cmp(&self, other: &Self) -> Ordering {
            self.deadline.cmp(&other.deadline)
        }
    }

    pub(super) fn installed() -> bool {
        WHEEL.with(|w| w.borrow().is_some())
    }

    pub(super) fn install() -> io::Result<Timer> {
        let flags = TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC;
        let fd = timerfd_create(TimerfdClockId::Monotonic, flags)?;
        // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the same for
        // the AsyncFd's whole life, as `register_with_interest` requires.
        let timer = Rc::new(unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?);
        WHEEL.with(|w| {
            *w.borrow_mut() = Some(Wheel {
                timer: Rc::clone(&timer),
                sleepers: BinaryHeap::new(),
                armed: None,
            })
        });
        Ok(timer)
    }

    pub(super) fn uninstall() {
        let wheel = WHEEL.with(|w| w.borrow_mut().take());
        if let Some(wheel) = wheel {
            wheel
                .sleepers
                .into_iter()
                .for_each(|Reverse(sleeper)| sleeper.waker.wake());
        }
    }

    /// arm programs the timerfd to expire at `deadline` (at least 1 ns ahead: zero disarms).
    fn arm(timer: &Timer, deadline: Instant) -> io::Result<()> {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: left.subsec_nanos().into(),
            },
        };
        timerfd_settime(timer.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
        Ok(())
    }

    /// Sleep is pending until its deadline; each poll before then (re)registers its waker.
    pub(super) struct Sleep {
        pub(super) deadline: Instant,
    }

    impl Future for Sleep {
        type Output = io::Result<()>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            let deadline = self.deadline;
            if Instant::now() >= deadline {
                return Poll::Ready(Ok(()));
            }
            let registered = WHEEL.with(|w| {
                let mut w = w.borrow_mut();
                let Some(wheel) = w.as_mut() else {
                    return Err(io::Error::other("no timer wheel on this thread"));
                };
                wheel.sleepers.push(Reverse(Sleeper {
                    deadline,
                    waker: cx.waker().clone(),
                }));
                if wheel.armed.is_none_or(|armed| deadline < armed) {
                    arm(&wheel.timer, deadline)?;
                    wheel.armed = Some(deadline);
                }
                Ok(())
            });
            match registered {
                Ok(()) => Poll::Pending,
                Err(err) => Poll::Ready(Err(err)),
            }
        }
    }

    /// fire waits for the timerfd, wakes the sleepers that are due and re-arms for the rest.
    pub(super) async fn fire(timer: &Timer) -> io::Result<()> {
        loop {
            let mut ready = timer.readable().await?;
            let mut expirations = [0u8; 8];
            match rustix::io::read(timer.get_ref(), &mut expirations) {
                Ok(_) => break,
                Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
                Err(err) => return Err(err.into()),
            }
        }
        let due = WHEEL.with(|w| -> io::Result<Vec<Waker>> {
            let mut w = w.borrow_mut();
            let Some(wheel) = w.as_mut() else {
                return Ok(Vec::new());
            };
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(Reverse(next)) = wheel.sleepers.peek() {
                if next.deadline > now {
                    break;
                }
                if let Some(Reverse(sleeper)) = wheel.sleepers.pop() {
                    due.push(sleeper.waker);
                }
            }
            wheel.armed = wheel.sleepers.peek().map(|Reverse(next)| next.deadline);
            if let Some(next) = wheel.armed {
                arm(&wheel.timer, next)?;
            }
            Ok(due)
        })?;
        due.into_iter().for_each(Waker::wake);
        Ok(())
    }
}
