//! Precise delays for injected latency.
//!
//! tokio's timer has 1 ms granularity and rounds deadlines up: a 20 ms delay came back at
//! p50 = 21.4 ms (wrk, 10 connections), too coarse for tests that expect a fixed 20 ms latency
//! to read as 20 ± 1 ms. On Linux each connection lazily gets one timerfd (kernel hrtimer,
//! microsecond precision), re-armed per delayed request: two extra syscalls per delay and none
//! on the undelayed fast path. Elsewhere, or if the timerfd cannot be made, tokio's timer.

use std::io;
use std::time::Instant;

/// Sleeper waits until a deadline, as precisely as the platform allows.
#[derive(Debug, Default)]
pub(crate) struct Sleeper {
    #[cfg(target_os = "linux")]
    timer: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

impl Sleeper {
    /// until returns at (never before) `deadline`.
    pub(crate) async fn until(&mut self, deadline: Instant) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if self.timer.is_none() {
                self.timer = linux::timer().ok();
            }
            if let Some(timer) = &self.timer {
                return linux::wait(timer, deadline).await;
            }
        }
        tokio::time::sleep_until(deadline.into()).await;
        Ok(())
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::OwnedFd;
    use std::time::Instant;

    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    pub(super) fn timer() -> io::Result<AsyncFd<OwnedFd>> {
        let flags = TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC;
        let fd = timerfd_create(TimerfdClockId::Monotonic, flags)?;
        // SAFETY: the AsyncFd owns the OwnedFd, so the descriptor stays open and the same for
        // the AsyncFd's whole life, as `register_with_interest` requires.
        let timer = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?;
        Ok(timer)
    }

    pub(super) async fn wait(timer: &AsyncFd<OwnedFd>, deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let spec = Itimerspec {
            it_interval: zero,
            it_value: Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: left.subsec_nanos().into(),
            },
        };
        timerfd_settime(timer.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
        loop {
            let mut ready = timer.readable().await?;
            let mut expirations = [0u8; 8];
            match rustix::io::read(timer.get_ref(), &mut expirations) {
                Ok(_) => return Ok(()),
                Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
                Err(err) => return Err(err.into()),
            }
        }
    }
}
