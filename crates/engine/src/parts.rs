//! The three parts of an answered request, and the latency made of them.
//!
//! The **wait** for a free connection (the open model's: from the intended time to when a
//! connection came free, or was opened: the server's backpressure, charged to it, as
//! coordinated omission demands), the generator's own **lag** (from when the request could
//! go to when it left: a preempted or busy generator, recorded apart) and the **server's
//! time** (from leaving, by the kernel's transmit stamp, to the last byte's arrival, by its
//! receive stamp). The latency is wait + server time, or with `--latency-from intended` the
//! whole span from the intended send (wrk2's figure, the lag included).

use std::time::{Duration, Instant};

use crate::config::LatencyFrom;
use crate::conn::Exchange;

/// Parts is an answered request's split: its latency, the server's time, where it ended
/// (the response's last bytes) and the generator's lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// latency: the figure recorded (see the module's note).
    pub latency: Duration,
    /// server: from leaving to the last byte's arrival.
    pub server: Duration,
    /// end: when the last bytes arrived (the kernel's stamp, or when they were read).
    pub end: Instant,
    /// lag: from when it could go to when it left.
    pub lag: Duration,
}

impl Parts {
    /// of splits exchange `x`, handed to its connection at `began`, meant to start at
    /// `intended` and seen done at `done`; `open`: the open model, whose requests have an
    /// intended time. `free` is when its connection came free, matched among its wake-up's
    /// claims ([`crate::handover`]), and `at_cap`: the open model's pool was at its cap.
    ///
    /// The open model's wait for a free connection is the server's only at the cap: below
    /// it, the pool grows for a hit left unclaimed, so a hit that still found no connection
    /// was held up by the generator (a thread that was not running could neither send on a
    /// free connection nor open another one), and that is lag. A connection opened for the
    /// request (the connect, the server's) is wait either way.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        open: bool,
        from: LatencyFrom,
        intended: Instant,
        free: Option<Instant>,
        at_cap: bool,
        began: Instant,
        x: &Exchange,
        done: Instant,
    ) -> Parts {
        let left = x.left.map_or(x.sent_at, |l| l.clamp(x.sent_at, done));
        let end = x.arrived.map_or(done, |a| a.clamp(left, done));
        let server = end.saturating_duration_since(left);
        // A connect is the server's for the kernel's handshake (or whole, when the kernel
        // could not time it); the rest of its span is the generator noticing it late.
        let connect = if x.connects > 0 {
            let span = x.sent_at.saturating_duration_since(began);
            x.handshake.map_or(span, |h| h.min(span))
        } else {
            Duration::ZERO
        };
        let (wait, lag) = if open {
            // From the intended time (a hit sent a little early, within the send-ahead
            // window, from its send) to leaving: the wait, and the rest is lag.
            let span = left.saturating_duration_since(intended);
            let pool = match free {
                Some(f) if at_cap => f.min(left).saturating_duration_since(intended),
                _ => Duration::ZERO,
            };
            let wait = (pool + connect).min(span);
            (wait, span - wait)
        } else {
            // The closed model times from the VU's send (after a connect), as it always has.
            (Duration::ZERO, left.saturating_duration_since(x.sent_at))
        };
        let latency = match from {
            LatencyFrom::Sent => wait + server,
            // A connect (or a resend) moves the actual send later than intended.
            LatencyFrom::Intended if open => end.saturating_duration_since(intended.min(x.sent_at)),
            LatencyFrom::Intended => end.saturating_duration_since(x.sent_at),
        };
        Parts {
            latency,
            server,
            end,
            lag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of one request on a known timeline (ms after t0): handed over at `began`,
    /// intended at 10, its connection free at `free`, the user-space send stamp (after any
    /// connect) at `sent`, the kernel's at `left` (None: no stamp), the kernel's handshake
    /// time `hs` of its connects (None: the whole connect is the server's), the answer's last
    /// bytes at 20 (stamped), read at 25.
    #[test]
    fn a_request_splits_into_wait_lag_and_server_time() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let d = Duration::from_millis;
        use LatencyFrom::{Intended, Sent};
        // (label, open, from, free, cap, began, sent, left, connects, hs, latency, server, lag)
        #[rustfmt::skip]
        let cases = [
            ("on time", true, Sent, Some(5), false, 10, 10, Some(10), 0, None, 10, 10, 0),
            ("preempted 3 ms", true, Sent, Some(5), false, 13, 13, Some(13), 0, None, 7, 7, 3),
            ("preempted, intended", true, Intended, Some(5), false, 13, 13, Some(13), 0, None, 10, 7, 3),
            ("preempted in the write", true, Sent, Some(5), false, 10, 10, Some(14), 0, None, 6, 6, 4),
            // At the cap: 2 ms waiting for the connection (the server's), 1 ms of lag.
            ("waited at the cap", true, Sent, Some(12), true, 13, 13, Some(13), 0, None, 9, 7, 1),
            // Below it the pool would have grown: the 3 ms are the generator's.
            ("waited below the cap", true, Sent, Some(12), false, 13, 13, Some(13), 0, None, 7, 7, 3),
            // Handed over 1 ms late, then a 2 ms connect the kernel did not time (the server's).
            ("opened a connection", true, Sent, None, false, 11, 13, Some(13), 1, None, 9, 7, 1),
            // The same connect timed by the kernel at 1 ms: the other 1 ms was the generator
            // noticing it late.
            ("noticed a connect late", true, Sent, None, false, 11, 13, Some(13), 1, Some(1), 8, 7, 2),
            ("no kernel stamp", true, Sent, Some(5), false, 13, 13, None, 0, None, 7, 7, 3),
            ("sent ahead", true, Sent, Some(5), false, 9, 9, Some(9), 0, None, 11, 11, 0),
            ("closed model", false, Sent, None, false, 10, 10, Some(12), 0, None, 8, 8, 2),
            ("closed, intended", false, Intended, None, false, 10, 10, Some(12), 0, None, 10, 8, 2),
        ];
        for (label, open, from, free, cap, began, sent, left, connects, hs, latency, server, lag) in
            cases
        {
            let x = Exchange {
                sent_at: ms(sent),
                status: 200,
                bytes_in: 100,
                connects,
                retries: 0,
                arrived: Some(ms(20)),
                left: left.map(ms),
                handshake: hs.map(d),
            };
            let p = Parts::of(open, from, ms(10), free.map(ms), cap, ms(began), &x, ms(25));
            let got = (p.latency, p.server, p.lag, p.end);
            assert_eq!(got, (d(latency), d(server), d(lag), ms(20)), "{label}");
        }
    }
}
