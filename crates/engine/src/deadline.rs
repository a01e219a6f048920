//! [`Deadline`]: a lane's request timeout, one lazily re-armed `Sleep` for the lane's life.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use tokio::time::Sleep;

/// Deadline is a lane's request timeout: one `Sleep` for the lane's life, armed lazily.
///
/// Setting a new deadline is a plain store; the sleep only re-arms when it fires before the
/// current deadline (at most once per timeout period while requests keep completing) or when
/// the deadline moves earlier. That keeps timer work off the per-request path entirely.
///
/// Polling it costs no timer work either while its sleep stays armed for the same task: the
/// timer keeps the waker it was given until it fires or is reset, so a poll only checks that
/// it has not fired (one atomic load) instead of polling the sleep again on every request.
#[derive(Debug)]
pub struct Deadline {
    sleep: Pin<Box<Sleep>>,
    at: Instant,
    /// armed: the waker the sleep last registered (it returned Pending), while it holds.
    armed: Option<std::task::Waker>,
}

impl Deadline {
    /// new makes a deadline far in the future; call [`Deadline::set`] before each request.
    pub fn new() -> Self {
        let at = Instant::now() + std::time::Duration::from_secs(86_400);
        Deadline {
            sleep: Box::pin(tokio::time::sleep_until(at.into())),
            at,
            armed: None,
        }
    }

    /// set moves the deadline to `at`.
    pub fn set(&mut self, at: Instant) {
        self.at = at;
        if tokio::time::Instant::from_std(at) < self.sleep.deadline() {
            self.sleep.as_mut().reset(at.into());
            self.armed = None;
        }
    }

    /// poll_expired says whether the deadline has passed, registering for a wake-up if not.
    pub(crate) fn poll_expired(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        if let Some(w) = &self.armed {
            if w.will_wake(cx.waker()) && !self.sleep.is_elapsed() {
                return false; // Still armed, with this task's waker.
            }
        }
        self.armed = None;
        loop {
            // Out of budget, the sleep answers Pending without registering: not armed then.
            let budget = tokio::task::coop::has_budget_remaining();
            if self.sleep.as_mut().poll(cx).is_pending() {
                if budget {
                    self.armed = Some(cx.waker().clone());
                }
                return false;
            }
            if Instant::now() >= self.at {
                return true;
            }
            self.sleep.as_mut().reset(self.at.into());
        }
    }
}

impl Default for Deadline {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::task::Poll;
    use std::time::Duration;

    use super::*;

    /// expired waits until `d` says its deadline passed, polling it on every wake-up.
    async fn expired(d: &mut Deadline) {
        poll_fn(|cx| match d.poll_expired(cx) {
            true => Poll::Ready(()),
            false => Poll::Pending,
        })
        .await;
    }

    #[tokio::test]
    async fn an_armed_deadline_fires_and_follows_its_moves() {
        let ms = Duration::from_millis;
        let mut d = Deadline::new();
        // Armed once, it fires at its time.
        let t = Instant::now();
        d.set(t + ms(30));
        expired(&mut d).await;
        assert!(t.elapsed() >= ms(30));
        // Moved later without a reset: the sleep fires early, re-arms, fires at the new time.
        let t = Instant::now();
        d.set(t + ms(40));
        expired(&mut d).await;
        assert!(t.elapsed() >= ms(40));
        // Moved earlier while armed: the new, nearer time holds, not the old one.
        let t = Instant::now();
        d.set(t + Duration::from_secs(60));
        assert!(!poll_fn(|cx| Poll::Ready(d.poll_expired(cx))).await);
        d.set(t + ms(30));
        let fired = tokio::time::timeout(Duration::from_secs(10), expired(&mut d)).await;
        assert!(fired.is_ok() && t.elapsed() >= ms(30));
    }
}
