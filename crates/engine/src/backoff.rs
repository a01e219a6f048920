//! Backing off a target that refuses connections, so a dead server is not hammered in a
//! tight loop (issue 13 saw 10 VUs make ~300k connect attempts a second at 100 % of a core).
//!
//! Closed model only: a VU sends again as soon as its last request ended, so a refused
//! connect would loop at once. (In the open model each due hit makes one attempt; the
//! schedule already bounds the rate, and each failed hit is the truth that model reports.)
//!
//! One [`Backoff`] per worker thread. While its connects fail, the thread lets one lane at a
//! time try (the probe), spaced [`FIRST`] doubling to [`CAP`], jittered to between half and
//! all of the delay so that threads and runs do not probe in step; the other lanes whose
//! connection is gone wait for the probe to succeed. Any successful connect on the thread
//! resets the delay and wakes them. The cap is per thread, not per lane, and short: the
//! moment the target answers again is known to within it (a 1 s cap per lane would put the
//! recovery up to a second late), while a thread's attempts stay at most 1 / (CAP / 2) per
//! second: 20 a second, where the tight loop made a hundred thousand.
//!
//! A lane that waits starts no request, so the closed model's `intended` (requests started)
//! counts attempts, not time spent waiting: it does not balloon while the target is down.

use std::cell::{Cell, RefCell};
use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::time::Sleep;

use crate::scenario::rng::Rng;

/// FIRST is the delay after a thread's first failed connect.
pub const FIRST: Duration = Duration::from_millis(10);

/// CAP is the longest delay between a thread's connect attempts while they fail.
pub const CAP: Duration = Duration::from_millis(100);

/// WAIT is how long a lane waits for the probe before looking again (whether the run ended,
/// or the probe's lane went idle and gave its turn up).
pub const WAIT: Duration = Duration::from_secs(1);

/// Turn is what a lane whose connection is gone may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Go: connect (the target is not known to be down).
    Go,
    /// Probe: connect; this lane holds the thread's probe (give it up with
    /// [`Backoff::release`] if it sends nothing).
    Probe,
    /// Wait: not yet; ask the pacer whether to stop, then ask again.
    Wait,
}

/// Backoff is one worker thread's connect backoff (see the module doc).
#[derive(Debug)]
pub struct Backoff {
    failing: Cell<bool>,
    delay: Cell<Duration>,
    next: Cell<Instant>,
    probing: Cell<bool>,
    connected: Notify,
    rng: RefCell<Rng>,
}

impl Backoff {
    /// new makes a thread's backoff; `seed` varies the jitter between threads.
    pub fn new(seed: u64) -> Self {
        Backoff {
            failing: Cell::new(false),
            delay: Cell::new(FIRST),
            next: Cell::new(Instant::now()),
            probing: Cell::new(false),
            connected: Notify::new(),
            rng: RefCell::new(Rng::new(seed)),
        }
    }

    /// failing says whether the thread's connects are failing (a lane without a connection
    /// must then take its [`Backoff::turn`]).
    pub fn failing(&self) -> bool {
        self.failing.get()
    }

    /// turn waits for this lane's turn to connect while the thread's connects fail: the
    /// probe's slot (on `sleep`, the lane's timer) or a successful connect elsewhere.
    pub async fn turn(&self, sleep: &mut Pin<Box<Sleep>>) -> Turn {
        if !self.failing.get() {
            return Turn::Go;
        }
        if !self.probing.get() {
            self.probing.set(true);
            sleep.as_mut().reset(self.next.get().into());
            sleep.as_mut().await;
            return Turn::Probe;
        }
        let _ = tokio::time::timeout(WAIT, self.connected.notified()).await;
        if self.failing.get() {
            Turn::Wait
        } else {
            Turn::Go
        }
    }

    /// release gives the probe up without an attempt (its lane went idle or stopped).
    pub fn release(&self) {
        self.probing.set(false);
    }

    /// failed records a failed connect at `now`; `probe`: the lane held the probe. The first
    /// failure starts the backoff; each failed probe doubles the delay and frees the probe for
    /// the next slot. Other lanes' connects, started before the thread knew, change nothing.
    pub fn failed(&self, now: Instant, probe: bool) {
        let delay = if !self.failing.get() {
            FIRST
        } else if probe {
            (self.delay.get() * 2).min(CAP)
        } else {
            return;
        };
        self.failing.set(true);
        self.delay.set(delay);
        let jitter = 0.5 + 0.5 * self.rng.borrow_mut().unit();
        self.next.set(now + delay.mul_f64(jitter));
        self.probing.set(false);
    }

    /// connected records a successful connect: the delay resets and waiting lanes go.
    pub fn connected(&self) {
        if self.failing.get() {
            self.failing.set(false);
            self.delay.set(FIRST);
            self.probing.set(false);
            self.connected.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_to_the_cap_jittered_and_reset_on_a_connect() {
        let b = Backoff::new(7);
        let t = Instant::now();
        let mut waits = Vec::new();
        b.failed(t, false);
        waits.push((b.delay.get(), b.next.get() - t));
        b.failed(t, false);
        assert_eq!(
            b.delay.get(),
            FIRST,
            "another lane's failure does not double it"
        );
        for _ in 0..7 {
            b.failed(t, true);
            waits.push((b.delay.get(), b.next.get() - t));
        }
        let want_ms = [10, 20, 40, 80, 100, 100, 100, 100];
        for ((delay, wait), want) in waits.iter().zip(want_ms) {
            assert_eq!(delay.as_millis(), want);
            assert!(
                *wait >= delay.mul_f64(0.5) && wait <= delay,
                "wait {wait:?} for delay {delay:?}"
            );
        }
        assert!(b.failing());
        b.connected();
        assert!(!b.failing());
        b.failed(t, true);
        assert_eq!(b.delay.get(), FIRST, "reset by the connect");
    }
}
