//! Rate limit: a token bucket in front of the server (`--rate-limit R --burst B`).
//!
//! API gateways and reverse proxies put one in front of services: tokens refill continuously at
//! R a second up to B; a request takes one token or is refused at once (503 with
//! `Retry-After`, or the status asked for, such as 429). It runs before everything else the
//! server does (delays, the capacity queue), like a gateway before its backend; `/__stats` is
//! never limited.
//!
//! The bucket is kept as GCRA (the generic cell rate algorithm, ITU-T I.371), the token bucket
//! written as one number: the theoretical arrival time TAT, in nanoseconds since the server
//! started. With T = 1/R and τ = (B − 1)·T, a request at t conforms iff t ≥ TAT − τ; then
//! `TAT = max(TAT, t) + T`. The bucket is full (B tokens) when TAT ≤ t, and each conforming
//! request moves TAT on by one token's time. Everything is computed from timestamps under a
//! lock, with no refill timer, so a late wake-up cannot lose or add tokens. (TAT is an f64 of
//! nanoseconds: exact to well under a nanosecond a request for months of uptime.)
//!
//! Truth: over any window of length W, at most `B + R·W` requests are accepted (B in the
//! bucket at the start, R·W refilled), and when requests arrive faster than R without pause at
//! least `R·W − 1` are, so the accepted rate is R within (B + 1) / W; a refused request's
//! `Retry-After` is the seconds until the next token, rounded up, at least 1.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use http::StatusCode;

use crate::error::TargetError;

/// MAX_RATE bounds `RateLimit::rate` (requests a second; far beyond what one server answers).
pub const MAX_RATE: f64 = 1e9;
/// MAX_BURST bounds `RateLimit::burst`.
pub const MAX_BURST: u32 = 1_000_000;

/// RateLimit is a token bucket: `rate` tokens a second, at most `burst` saved, `status` for a
/// request that finds none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// rate is the refill rate R, tokens (accepted requests) a second.
    pub rate: f64,
    /// burst is the bucket's size B: how many requests may pass at once after a quiet spell.
    pub burst: u32,
    /// status answers a refused request: 503 by default, 429 for the other convention (any
    /// 4xx or 5xx is accepted).
    pub status: u16,
}

impl RateLimit {
    /// new is a limit of `rate` a second with a bucket of `burst`, refusing with 503.
    pub fn new(rate: f64, burst: u32) -> RateLimit {
        RateLimit {
            rate,
            burst,
            status: 503,
        }
    }

    /// validate asks for 0 < rate <= 1e9, 1 <= burst <= 1e6 and a 4xx or 5xx status.
    pub(crate) fn validate(&self) -> Result<(), TargetError> {
        if !(self.rate.is_finite() && self.rate > 0.0 && self.rate <= MAX_RATE) {
            return Err(TargetError::RateLimit(format!(
                "rate must be more than 0 and at most {MAX_RATE:e} a second, got {}",
                self.rate
            )));
        }
        if !(1..=MAX_BURST).contains(&self.burst) {
            return Err(TargetError::RateLimit(format!(
                "burst must be between 1 and {MAX_BURST}, got {}",
                self.burst
            )));
        }
        if !(400..=599).contains(&self.status) {
            return Err(TargetError::RateLimit(format!(
                "refuse status must be a 4xx or 5xx code, got {}",
                self.status
            )));
        }
        Ok(())
    }
}

/// Bucket is a running rate limit and its counts.
#[derive(Debug)]
pub(crate) struct Bucket {
    /// tat: the theoretical arrival time, ns since `origin`.
    tat: Mutex<f64>,
    /// interval: T = 1/R, in ns.
    interval: f64,
    /// tolerance: τ = (B − 1)·T, in ns.
    tolerance: f64,
    origin: Instant,
    /// status: the refused requests' status.
    pub(crate) status: StatusCode,
    accepted: AtomicU64,
    refused: AtomicU64,
}

impl Bucket {
    /// new starts a full bucket (validate the limit first).
    pub(crate) fn new(limit: RateLimit, origin: Instant) -> Bucket {
        let interval = 1e9 / limit.rate;
        Bucket {
            tat: Mutex::new(0.0),
            interval,
            tolerance: f64::from(limit.burst.saturating_sub(1)) * interval,
            origin,
            status: StatusCode::from_u16(limit.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// take takes a token now, or says how long until the next one.
    pub(crate) fn take(&self) -> Result<(), Duration> {
        let mut tat = self.tat.lock().unwrap_or_else(PoisonError::into_inner);
        // Read under the lock so requests are judged in time order.
        let now = Instant::now().saturating_duration_since(self.origin);
        let verdict = self.take_at(&mut tat, now.as_nanos() as f64);
        drop(tat);
        let counter = match verdict {
            Ok(()) => &self.accepted,
            Err(_) => &self.refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        verdict
    }

    /// take_at is GCRA at `t` ns since the start (tests inject it).
    fn take_at(&self, tat: &mut f64, t: f64) -> Result<(), Duration> {
        let due = tat.max(t);
        let conforms_at = due - self.tolerance;
        if t < conforms_at {
            return Err(Duration::from_nanos((conforms_at - t).ceil() as u64));
        }
        *tat = due + self.interval;
        Ok(())
    }

    /// counts: (accepted, refused) so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.accepted.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        )
    }
}

/// retry_after is the `Retry-After` value for a wait: whole seconds, rounded up, at least 1.
pub(crate) fn retry_after(wait: Duration) -> u64 {
    let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    whole.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e6;

    fn bucket(rate: f64, burst: u32) -> Bucket {
        Bucket::new(RateLimit::new(rate, burst), Instant::now())
    }

    #[test]
    fn limits_validate() {
        let cases: &[(RateLimit, Option<&str>)] = &[
            (RateLimit::new(500.0, 50), None),
            (RateLimit::new(0.5, 1), None),
            (
                RateLimit {
                    status: 429,
                    ..RateLimit::new(5.0, 1)
                },
                None,
            ),
            (RateLimit::new(0.0, 50), Some("rate must be more than 0")),
            (
                RateLimit::new(f64::NAN, 50),
                Some("rate must be more than 0"),
            ),
            (RateLimit::new(1e10, 50), Some("at most")),
            (RateLimit::new(500.0, 0), Some("burst must be between 1")),
            (
                RateLimit {
                    status: 200,
                    ..RateLimit::new(5.0, 1)
                },
                Some("4xx or 5xx"),
            ),
        ];
        for (limit, want) in cases {
            match (limit.validate(), want) {
                (Ok(()), None) => {}
                (Err(err), Some(want)) => {
                    let text = err.to_string();
                    assert!(
                        text.starts_with("rate limit: ") && text.contains(want),
                        "{text}"
                    );
                }
                (got, want) => panic!("{limit:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// A full bucket lets B through at once, then one every 1/R; a refusal says when the
    /// next token comes.
    #[test]
    fn bucket_passes_burst_then_rate() {
        let b = bucket(100.0, 3); // a token every 10 ms
        let mut tat = 0.0;
        // (t in ms, Ok or the wait in ms)
        let cases: &[(f64, Result<(), f64>)] = &[
            (0.0, Ok(())),
            (0.0, Ok(())),
            (0.0, Ok(())),
            (0.0, Err(10.0)),
            (4.0, Err(6.0)),
            (10.0, Ok(())),
            (10.0, Err(10.0)),
            (20.0, Ok(())),
            // A quiet spell refills the bucket, never beyond B.
            (1000.0, Ok(())),
            (1000.0, Ok(())),
            (1000.0, Ok(())),
            (1000.0, Err(10.0)),
        ];
        for (i, (t, want)) in cases.iter().enumerate() {
            let got = b
                .take_at(&mut tat, t * MS)
                .map_err(|wait| wait.as_nanos() as f64 / MS);
            match (got, want) {
                (Ok(()), Ok(())) => {}
                (Err(wait), Err(want)) => assert!((wait - want).abs() < 1e-6, "{i}: {wait}"),
                (got, want) => panic!("{i} at {t} ms: got {got:?}, want {want:?}"),
            }
        }
    }

    /// Requests every 0.1 ms for 10 s against R = 500, B = 50: exactly B + R·W accepted
    /// (within one), whatever the window.
    #[test]
    fn accepted_rate_is_r_over_long_windows() {
        let cases: &[(f64, u32, f64)] = &[(500.0, 50, 10.0), (5000.0, 1, 2.0), (0.5, 2, 100.0)];
        for (rate, burst, seconds) in cases {
            let b = bucket(*rate, *burst);
            let mut tat = 0.0;
            let step = 0.1 * MS;
            let steps = (seconds * 1e9 / step) as u64;
            let accepted = (0..steps)
                .filter(|i| b.take_at(&mut tat, *i as f64 * step).is_ok())
                .count() as f64;
            let want = f64::from(*burst) + rate * seconds;
            assert!(
                (accepted - want).abs() <= 1.0,
                "R = {rate}, B = {burst}: {accepted} accepted, want {want}"
            );
        }
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let cases = [
            (Duration::from_millis(2), 1),
            (Duration::from_millis(999), 1),
            (Duration::from_secs(1), 1),
            (Duration::from_millis(1001), 2),
            (Duration::from_secs(2), 2),
            (Duration::ZERO, 1),
        ];
        for (wait, want) in cases {
            assert_eq!(retry_after(wait), want, "{wait:?}");
        }
    }
}
