//! Pause: a capacity server that stops serving for D out of every P (`--pause D/P`).
//!
//! A probe for noise: a server that freezes periodically (a stop-the-world GC, a lock held by a
//! background job) still has a capacity, and a search must find it rather than stop at the
//! first latency spike. The truth follows from what exactly stops:
//!
//! - Pauses are the windows `[kP, kP + D)` since the server started (the first D of every P,
//!   aligned like `stall=`).
//! - No service *starts* inside a pause: a request whose slot falls free then begins at the
//!   pause's end.
//! - A service in progress when a pause begins is suspended and resumes when the pause ends:
//!   its slot's clock stops, so no service *completes* inside a pause (one that is due exactly
//!   at a pause's first instant completes then, before the pause).
//! - Requests still arrive, are counted and join the queue (or are shed by a queue limit);
//!   `/__stats` still answers.
//!
//! Let u(t) be the serving time in `[0, t)`: with `k = ⌊t/P⌋` and `r = t − kP`,
//! `u(t) = k(P − D) + max(0, r − D)`. A service of S that starts at s ends at the first t with
//! `u(t) = u(s) + S`. Under saturation a slot's services are back to back in u (each next one
//! starts where the last ended, moved out of any pause, which adds no serving time), so a slot
//! completes one request per S of serving time and N slots complete, over any whole number of
//! periods T,
//!
//! ```text
//!     X = N · u(T) / (S · T) = (N / S) · (1 − D / P)
//! ```
//!
//! (over a window that is not a whole number of periods, within N · D / S requests of that).
//! Unsaturated, a request arriving in a pause waits for its end: latency up to S + D. All
//! arithmetic is in whole nanoseconds since the server started, so the schedule is exact.

use std::time::Duration;

use crate::error::TargetError;
use crate::latency::{parse_duration, MAX_DELAY};

/// Pause stops a capacity server's slots for `hold` out of every `every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    /// hold is how long each pause lasts (D).
    pub hold: Duration,
    /// every is the period (P): a pause begins at every multiple of it since the start.
    pub every: Duration,
}

impl Pause {
    /// parse reads "D/P", e.g. "50ms/1s" (serve nothing for 50 ms out of every second).
    pub fn parse(spec: &str) -> Result<Pause, TargetError> {
        let bad = |why: String| TargetError::Pause(format!("bad pause {spec:?}: {why}"));
        let (hold, every) = spec
            .split_once('/')
            .ok_or_else(|| bad("expected HOLD/EVERY, like 50ms/1s".to_string()))?;
        let pause = Pause {
            hold: parse_duration(hold.trim()).map_err(bad)?,
            every: parse_duration(every.trim()).map_err(bad)?,
        };
        pause.validate()?;
        Ok(pause)
    }

    /// validate asks for 0 < HOLD < EVERY <= 1 h (a pause as long as its period never serves).
    pub(crate) fn validate(&self) -> Result<(), TargetError> {
        if self.hold.is_zero() || self.hold >= self.every || self.every > MAX_DELAY {
            return Err(TargetError::Pause(format!(
                "need 0 < HOLD < EVERY <= 1h, got {:?}/{:?}",
                self.hold, self.every
            )));
        }
        Ok(())
    }

    /// serving_share is the fraction of time the server serves, 1 − D/P: a capacity server's
    /// throughput is N / S times this.
    pub fn serving_share(&self) -> f64 {
        1.0 - self.hold.as_secs_f64() / self.every.as_secs_f64()
    }

    fn nanos(&self) -> (u128, u128) {
        (self.hold.as_nanos(), self.every.as_nanos())
    }

    /// served is u(t): the serving time (ns) in `[0, t)`, t in ns since the start.
    pub(crate) fn served(&self, t: u128) -> u128 {
        let (hold, every) = self.nanos();
        let (k, r) = (t / every, t % every);
        k * (every - hold) + r.saturating_sub(hold)
    }

    /// start_at is when a service that may start at `t` does start: `t`, or the end of the
    /// pause that `t` falls in.
    pub(crate) fn start_at(&self, t: u128) -> u128 {
        let (hold, every) = self.nanos();
        let r = t % every;
        if r < hold {
            t - r + hold
        } else {
            t
        }
    }

    /// finish is when a service of `service` ns started at `start` completes: the first t with
    /// u(t) = u(start) + service.
    pub(crate) fn finish(&self, start: u128, service: u128) -> u128 {
        let (hold, every) = self.nanos();
        let serving = every - hold;
        let want = self.served(start) + service;
        let (k, rem) = (want / serving, want % serving);
        if rem == 0 && k > 0 {
            // Due at the end of a serving stretch: the instant the next pause begins.
            k * every
        } else {
            k * every + hold + rem
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u128 = 1_000_000;

    fn pause(hold_ms: u64, every_ms: u64) -> Pause {
        Pause {
            hold: Duration::from_millis(hold_ms),
            every: Duration::from_millis(every_ms),
        }
    }

    #[test]
    fn pauses_parse_and_refuse() {
        // (spec, Ok((hold ms, every ms)) or Err(words of the error))
        type Case<'a> = (&'a str, Result<(u64, u64), &'a str>);
        let cases: &[Case] = &[
            ("50ms/1s", Ok((50, 1000))),
            ("200ms / 2s", Ok((200, 2000))),
            ("1s/1s", Err("HOLD < EVERY")),
            ("0/1s", Err("0 < HOLD")),
            ("50ms", Err("expected HOLD/EVERY")),
            ("50/1s", Err("missing unit")),
            ("50ms/3601s", Err("longer than 1h")),
        ];
        for (spec, want) in cases {
            match (Pause::parse(spec), want) {
                (Ok(got), Ok((hold, every))) => assert_eq!(got, pause(*hold, *every), "{spec}"),
                (Err(err), Err(want)) => {
                    let text = err.to_string();
                    assert!(
                        text.starts_with("pause: ") && text.contains(want),
                        "{spec}: {text}"
                    );
                }
                (got, want) => panic!("{spec}: got {got:?}, want {want:?}"),
            }
        }
        assert!((pause(50, 1000).serving_share() - 0.95).abs() < 1e-12);
    }

    /// u(t), start times and finish times at the edges of pauses (D = 50 ms of P = 200 ms).
    #[test]
    fn schedule_skips_pauses() {
        let p = pause(50, 200);
        let served: &[(u128, u128)] = &[
            (0, 0),
            (50 * MS, 0),
            (60 * MS, 10 * MS),
            (200 * MS, 150 * MS),
            (210 * MS, 150 * MS),
            (260 * MS, 160 * MS),
        ];
        for (t, u) in served {
            assert_eq!(p.served(*t), *u, "u({t})");
        }
        let starts: &[(u128, u128)] = &[
            (0, 50 * MS),
            (49 * MS, 50 * MS),
            (50 * MS, 50 * MS),
            (199 * MS, 199 * MS),
            (200 * MS, 250 * MS),
        ];
        for (t, s) in starts {
            assert_eq!(p.start_at(*t), *s, "start_at({t})");
        }
        // (start, service) -> finish
        let finishes: &[(u128, u128, u128)] = &[
            (50 * MS, 10 * MS, 60 * MS),
            (190 * MS, 10 * MS, 200 * MS), // due as the pause begins: completes then
            (190 * MS, 20 * MS, 260 * MS), // 10 ms before the pause, 10 ms after it
            (60 * MS, 300 * MS, 460 * MS), // spans two pauses: 140 + 150 + 10
        ];
        for (start, service, end) in finishes {
            assert_eq!(
                p.finish(*start, *service),
                *end,
                "finish({start}, {service})"
            );
        }
    }

    /// One saturated slot served back to back for ten periods completes exactly
    /// (P − D) / S requests a period: the capacity formula, by construction.
    #[test]
    fn saturated_slot_completes_one_per_serving_s() {
        let cases: &[(u64, u64, u128)] = &[(50, 200, 10 * MS), (50, 1000, 7 * MS), (10, 30, MS)];
        for (hold, every, service) in cases {
            let p = pause(*hold, *every);
            let horizon = 10 * p.every.as_nanos();
            let (mut free, mut done) = (0u128, 0u128);
            loop {
                let end = p.finish(p.start_at(free), *service);
                if end > horizon {
                    break;
                }
                done += 1;
                free = end;
            }
            let want = p.served(horizon) / service;
            assert_eq!(done, want, "{hold}/{every} ms, S = {service} ns");
            let rate = done as f64 / (horizon as f64 / 1e9);
            let truth = p.serving_share() / (*service as f64 / 1e9);
            assert!((rate - truth).abs() <= truth * 0.01, "{rate} vs {truth}");
        }
    }
}
