//! Contention: a server whose requests slow each other down, so that throughput peaks at a
//! known concurrency and then falls (`--contention KAPPA [--serial SIGMA] --service-time S`).
//!
//! The universal scalability law (Gunther) with crosstalk: every request in service slows all
//! the others. With n requests in service each progresses at `1 / f(n)` of its own speed,
//!
//! ```text
//!     f(n) = 1 + σ(n − 1) + κ·n(n − 1)
//! ```
//!
//! (σ: serialisation, the share of work done one at a time; κ: crosstalk, the cost of keeping
//! n copies coherent), so a request alone takes S and one among n (for its whole stay) takes
//! S·f(n). There is no queue: every request is in service from its arrival.
//!
//! **Processor sharing, exactly.** Service is not fixed at admission: all requests in service
//! share one virtual clock V (seconds of work received by each), which advances at
//! `dV/dt = 1 / f(n(t))` and changes slope at every arrival and departure. A request arriving
//! at V₀ departs when V reaches V₀ + S, so departures are in arrival order. The model
//! ([`Flow`]) computes each departure's instant from that clock, under a lock, whenever anyone
//! looks (an arrival, a wake-up, `/__stats`), so a late wake-up delays only that answer, never
//! the model's n. Requests whose clients left stay in service until their departure (the
//! server does not notice, as real servers mostly do not).
//!
//! **Closed model** (N users, no think time). At steady state n = N all the time (each
//! departure is replaced at once), so every request takes R = S·f(N) and by Little's law
//!
//! ```text
//!     X(N) = N / (S·f(N)) = N / (S·(1 + σ(N − 1) + κN(N − 1)))
//! ```
//!
//! dX/dN = 0 where `f(N) = N f'(N)`, i.e. `κN² = 1 − σ`: the peak is at `N* = √((1 − σ)/κ)`,
//! and X falls beyond it (retrograde). Kleinrock's power X/R = X²/N = N / (S² f(N)²) is
//! greatest where `f = 2N f'`: the root of `3κN² + (σ − κ)N − (1 − σ) = 0`. Example: S = 10 ms,
//! κ = 0.01, σ = 0: N* = 10, X(10) = 10 / (0.01 s × 1.9) = 526 req/s, and the power peaks at
//! N ≈ 5.9 (root of 3κN² − κN − 1 = 0).
//!
//! **Open model** (arrivals at λ a second). With n in service the server completes
//! `n / (S·f(n))` = X(n) a second, the curve above. For λ below the peak X(N*) there are two
//! balances, X(n) = λ at n₁ < N* (stable: a few more in service complete faster) and at
//! n₂ > N* (unstable). For λ above the peak, departures never keep up: n grows without bound,
//! each request slows everyone, throughput falls towards 0 (≈ 1 / (S·κ·n)) and latency grows
//! with n². That is a collapse, and it is metastable: when the load drops back to a λ < X(N*),
//! the server recovers only if n is still below n₂(λ); past it, departures (X(n) < λ) stay
//! fewer than arrivals and n keeps growing even though the load is now "sustainable". Only a
//! load under X(n) at the current n (for a deep collapse, next to nothing) drains it. With no
//! arrivals at all, draining n₀ takes at most S·f(n₀) (each has at most S of work left and
//! progress only speeds up as they leave): ≈ S·κ·n₀², 100 s for n₀ = 1,000 in the example,
//! and since requests that arrived during the collapse received almost no work, most of them
//! depart together near the end. A load tester must see this and stop pushing, not measure
//! later steps against the wreck.

use std::collections::VecDeque;
use std::io;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::TargetError;
use crate::latency::MAX_DELAY;

/// MAX_COEFFICIENT bounds κ and σ (each is a share of work or a cost per pair: 1 is already
/// a server that does not scale at all).
pub const MAX_COEFFICIENT: f64 = 1.0;

/// Contention is the USL model of a server: service time `service` alone, slowed by
/// `serial` (σ) and `crosstalk` (κ) as more requests are in service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contention {
    /// service is S, a request's time in service when it is alone.
    pub service: Duration,
    /// crosstalk is κ, the coherency cost per pair of requests in service.
    pub crosstalk: f64,
    /// serial is σ, the serialised share of the work (0 by default).
    pub serial: f64,
}

impl Contention {
    /// validate asks for S in (0, 1 h] and κ, σ in [0, 1].
    pub(crate) fn validate(&self) -> Result<(), TargetError> {
        if self.service.is_zero() || self.service > MAX_DELAY {
            return Err(TargetError::Contention(format!(
                "service time must be more than 0 and at most 1h, got {:?}",
                self.service
            )));
        }
        for (name, value) in [("crosstalk", self.crosstalk), ("serial", self.serial)] {
            if !(value.is_finite() && (0.0..=MAX_COEFFICIENT).contains(&value)) {
                return Err(TargetError::Contention(format!(
                    "{name} must be between 0 and {MAX_COEFFICIENT}, got {value}"
                )));
            }
        }
        Ok(())
    }

    /// slowdown is f(n) = 1 + σ(n − 1) + κn(n − 1): how many times longer a request takes with
    /// n in service (1 for n <= 1).
    pub fn slowdown(&self, n: f64) -> f64 {
        if n <= 1.0 {
            return 1.0;
        }
        1.0 + self.serial * (n - 1.0) + self.crosstalk * n * (n - 1.0)
    }

    /// throughput is X(N) = N / (S·f(N)), requests a second with N in service all the time
    /// (N closed-loop users without think time).
    pub fn throughput(&self, users: f64) -> f64 {
        users / (self.service.as_secs_f64() * self.slowdown(users))
    }

    /// peak_users is N* = √((1 − σ)/κ), where X peaks; `None` without crosstalk (no peak).
    pub fn peak_users(&self) -> Option<f64> {
        (self.crosstalk > 0.0).then(|| ((1.0 - self.serial) / self.crosstalk).sqrt())
    }

    /// power_users is where Kleinrock's power X / R peaks: the positive root of
    /// 3κN² + (σ − κ)N − (1 − σ) = 0; `None` without crosstalk.
    pub fn power_users(&self) -> Option<f64> {
        let (k, s) = (self.crosstalk, self.serial);
        if k <= 0.0 {
            return None;
        }
        let b = s - k;
        Some((-b + (b * b + 12.0 * k * (1.0 - s)).sqrt()) / (6.0 * k))
    }
}

/// Crowd is a running contention model shared by every serving thread.
#[derive(Debug)]
pub(crate) struct Crowd {
    flow: Mutex<Flow>,
    model: Contention,
}

/// CrowdStats: requests in service now, the most ever at once, and departures so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CrowdStats {
    pub(crate) busy: u64,
    pub(crate) peak: u64,
    pub(crate) served: u64,
}

impl Crowd {
    pub(crate) fn new(model: Contention) -> Crowd {
        Crowd {
            flow: Mutex::new(Flow::new(Instant::now(), model.service.as_secs_f64())),
            model,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Flow> {
        // Nothing panics while the lock is held, but a poisoned flow is still valid.
        self.flow.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// serve enters service now and returns when the model says this request departs.
    pub(crate) async fn serve(&self) -> io::Result<()> {
        let ticket = {
            let mut flow = self.lock();
            flow.arrive(Instant::now(), &self.model)
        };
        loop {
            let due = {
                let mut flow = self.lock();
                flow.advance(Instant::now(), &self.model);
                flow.departs_at(ticket, &self.model)
            };
            match due {
                None => return Ok(()),
                // An arrival since may push this later: then wake, look again, sleep again.
                Some(at) => crate::sleep::until(at).await?,
            }
        }
    }

    pub(crate) fn stats(&self) -> CrowdStats {
        let mut flow = self.lock();
        flow.advance(Instant::now(), &self.model);
        CrowdStats {
            busy: flow.ends.len() as u64,
            peak: flow.peak,
            served: flow.departed,
        }
    }
}

/// Flow is the processor-sharing state: the shared virtual clock and who is in service.
#[derive(Debug)]
struct Flow {
    /// clock: the instant `work` was last brought up to date (never ahead of real time).
    clock: Instant,
    /// work: V, the seconds of work each request in service has received since the start.
    work: f64,
    /// ends: for each request in service, in arrival order, the V at which it departs.
    ends: VecDeque<f64>,
    /// service: S in seconds.
    service: f64,
    /// arrived and departed count requests; request k (from 0) is in service while
    /// departed <= k < arrived, at index k − departed of `ends`.
    arrived: u64,
    departed: u64,
    peak: u64,
}

impl Flow {
    fn new(now: Instant, service: f64) -> Flow {
        Flow {
            clock: now,
            work: 0.0,
            ends: VecDeque::new(),
            service,
            arrived: 0,
            departed: 0,
            peak: 0,
        }
    }

    /// advance plays the model forward to `now`: each departure due by then happens at its
    /// own instant (so n drops exactly when it should), then the clock runs on at the rate of
    /// what is left.
    fn advance(&mut self, now: Instant, model: &Contention) {
        while let Some(&end) = self.ends.front() {
            let f = model.slowdown(self.ends.len() as f64);
            let at = later(self.clock, (end - self.work) * f);
            if at > now {
                break;
            }
            self.work = self.work.max(end);
            self.clock = at;
            self.ends.pop_front();
            self.departed += 1;
        }
        if now > self.clock {
            if !self.ends.is_empty() {
                let f = model.slowdown(self.ends.len() as f64);
                self.work += (now - self.clock).as_secs_f64() / f;
            }
            self.clock = now;
        }
    }

    /// arrive enters a request at `now` and returns its ticket (arrival number).
    fn arrive(&mut self, now: Instant, model: &Contention) -> u64 {
        self.advance(now, model);
        self.ends.push_back(self.work + self.service);
        self.peak = self.peak.max(self.ends.len() as u64);
        self.arrived += 1;
        self.arrived - 1
    }

    /// departs_at is when request `ticket` departs if nobody else arrives (`None` once it has
    /// departed): those ahead of it depart first and speed up the rest. Arrivals only slow
    /// service down (f grows with n) and nobody leaves early, so this is never later than the
    /// true departure: a sleeper wakes early, looks again, never late.
    fn departs_at(&self, ticket: u64, model: &Contention) -> Option<Instant> {
        let place = usize::try_from(ticket.checked_sub(self.departed)?).ok()?;
        let (mut at, mut work) = (self.clock, self.work);
        let mut n = self.ends.len();
        for &end in self.ends.iter().take(place + 1) {
            at = later(at, (end - work) * model.slowdown(n as f64));
            work = work.max(end);
            n -= 1;
        }
        Some(at)
    }
}

/// later is `at` plus `seconds` (clamped to [0, a day] so a deep collapse cannot overflow an
/// `Instant`; the model looks again long before that).
fn later(at: Instant, seconds: f64) -> Instant {
    const DAY: f64 = 86_400.0;
    let seconds = if seconds.is_nan() {
        0.0
    } else {
        seconds.clamp(0.0, DAY)
    };
    let step = Duration::from_secs_f64(seconds);
    at.checked_add(step).unwrap_or(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(service_ms: u64, crosstalk: f64, serial: f64) -> Contention {
        Contention {
            service: Duration::from_millis(service_ms),
            crosstalk,
            serial,
        }
    }

    fn close(got: f64, want: f64, tolerance: f64) -> bool {
        (got - want).abs() <= want.abs() * tolerance
    }

    #[test]
    fn models_validate() {
        let cases: &[(Contention, Option<&str>)] = &[
            (model(10, 0.01, 0.0), None),
            (model(10, 0.0, 0.0), None),
            (model(10, 1.0, 1.0), None),
            (
                model(0, 0.01, 0.0),
                Some("service time must be more than 0"),
            ),
            (
                model(10, -0.1, 0.0),
                Some("crosstalk must be between 0 and 1"),
            ),
            (
                model(10, f64::NAN, 0.0),
                Some("crosstalk must be between 0 and 1"),
            ),
            (model(10, 0.01, 1.5), Some("serial must be between 0 and 1")),
        ];
        for (m, want) in cases {
            match (m.validate(), want) {
                (Ok(()), None) => {}
                (Err(err), Some(want)) => {
                    let text = err.to_string();
                    assert!(
                        text.starts_with("contention: ") && text.contains(want),
                        "{text}"
                    );
                }
                (got, want) => panic!("{m:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// The closed-form truths of the doc comment, on the reference example and one with σ.
    #[test]
    fn closed_form_truths() {
        let m = model(10, 0.01, 0.0);
        assert!(close(m.peak_users().expect("peak"), 10.0, 1e-12));
        assert!(close(m.throughput(10.0), 526.315_789, 1e-6));
        let power = m.power_users().expect("power");
        assert!(close(power, 5.94, 0.01), "{power}");
        // The power's maximum really is there (X²/N checked on both sides).
        let p = |n: f64| m.throughput(n).powi(2) / n;
        assert!(p(power) > p(power - 0.1) && p(power) > p(power + 0.1));
        // X peaks at N*: checked against its neighbours.
        let s = model(5, 0.002, 0.05);
        let peak = s.peak_users().expect("peak");
        assert!(close(peak, (0.95f64 / 0.002).sqrt(), 1e-12));
        assert!(s.throughput(peak) > s.throughput(peak - 0.5));
        assert!(s.throughput(peak) > s.throughput(peak + 0.5));
        assert_eq!(model(10, 0.0, 0.1).peak_users(), None);
    }

    const SEC: Duration = Duration::from_secs(1);

    /// Run is a deterministic event simulation of the model with injected times, driven the
    /// way the server drives it (arrive, look at `departs_at`, advance to then).
    struct Run {
        flow: Flow,
        model: Contention,
        origin: Instant,
    }

    impl Run {
        fn new(model: Contention) -> Run {
            let origin = Instant::now();
            Run {
                flow: Flow::new(origin, model.service.as_secs_f64()),
                model,
                origin,
            }
        }

        fn secs(&self, at: Instant) -> f64 {
            (at - self.origin).as_secs_f64()
        }

        /// next_departure: the instant of the next departure with no more arrivals.
        fn next_departure(&self) -> Option<Instant> {
            self.flow.departs_at(self.flow.departed, &self.model)
        }
    }

    /// One request alone takes S; two that arrive together take S·f(2) each; one that
    /// arrives halfway through another's service: the first gets S/2 alone then S/2 of work
    /// at f(2), the second the rest alone.
    #[test]
    fn processor_sharing_by_hand() {
        let m = model(10, 0.25, 0.0); // f(2) = 1.5
        let ms = |x: f64| Duration::from_secs_f64(x / 1e3);
        let mut run = Run::new(m);
        let t0 = run.origin;
        let a = run.flow.arrive(t0, &m);
        let alone = run.flow.departs_at(a, &m).expect("in service");
        assert!((run.secs(alone) - 0.010).abs() < 1e-9);
        // Second arrives at 5 ms: the first has 5 ms of work left at 1.5x: 7.5 ms more.
        let b = run.flow.arrive(t0 + ms(5.0), &m);
        let first = run.flow.departs_at(a, &m).expect("in service");
        assert!((run.secs(first) - 0.0125).abs() < 1e-9, "{:?}", first - t0);
        // The second: 7.5 ms at 1.5x (5 ms of work), then its last 5 ms alone.
        let second = run.flow.departs_at(b, &m).expect("in service");
        assert!((run.secs(second) - 0.0175).abs() < 1e-9);
        run.flow.advance(first, &m);
        assert_eq!((run.flow.departed, run.flow.ends.len()), (1, 1));
        assert_eq!(run.flow.departs_at(a, &m), None);
        run.flow.advance(t0 + ms(100.0), &m);
        assert_eq!(run.flow.departed, 2);
    }

    /// N closed-loop users with no think time: the simulated throughput over 20 s equals
    /// X(N) = N / (S·f(N)) (within one request), before, at and past the peak.
    #[test]
    fn closed_loop_throughput_is_usl() {
        let m = model(10, 0.01, 0.0);
        for users in [1u64, 4, 6, 10, 20, 40] {
            let mut run = Run::new(m);
            // Users start spread over one service time, so departures are not in lockstep.
            let mut starts = (0..users).map(|i| run.origin + m.service * i as u32 / users as u32);
            let first = starts.next().expect("a user");
            run.flow.arrive(first, &m);
            let mut pending: Vec<Instant> = starts.collect();
            pending.reverse();
            let horizon = run.origin + 20 * SEC;
            loop {
                let departure = run.next_departure().filter(|at| *at <= horizon);
                // The next event: a user starting, or a departure (whose user sends again).
                match (pending.last().copied(), departure) {
                    (Some(start), d) if d.is_none_or(|d| start <= d) => {
                        pending.pop();
                        run.flow.arrive(start, &m);
                    }
                    (_, Some(at)) => {
                        run.flow.advance(at, &m);
                        let want = users - pending.len() as u64 + run.flow.departed;
                        while run.flow.arrived < want {
                            run.flow.arrive(at, &m);
                        }
                    }
                    _ => break,
                }
            }
            let got = run.flow.departed as f64 / 20.0;
            let want = m.throughput(users as f64);
            assert!(
                (got - want).abs() * 20.0 <= users as f64,
                "{users} users: {got} req/s, want {want}"
            );
        }
    }

    /// open_loop feeds arrivals at `rate` a second from `from` to `to` and returns the
    /// number in service at `to` and the departures in that span.
    fn open_loop(run: &mut Run, rate: f64, from: Duration, to: Duration) -> (usize, u64) {
        let m = run.model;
        let gap = Duration::from_secs_f64(1.0 / rate);
        let before = run.flow.departed;
        let mut at = run.origin + from;
        while at < run.origin + to {
            run.flow.arrive(at, &m);
            at += gap;
        }
        run.flow.advance(run.origin + to, &m);
        (run.flow.ends.len(), run.flow.departed - before)
    }

    /// Open model: below the peak the server settles at the stable balance (n₁ with
    /// X(n₁) = λ); above it, n grows without bound and throughput falls; and dropping the
    /// load back below the peak does not recover it (metastable), while stopping the load
    /// drains it.
    #[test]
    fn open_loop_collapses_past_the_peak_and_stays_collapsed() {
        let m = model(10, 0.01, 0.0); // peak 526 req/s at 10 in service
                                      // 400 req/s from empty: settles where X(n) = 400, n₁ ≈ 5.0 (X(5) = 417 > 400 > X(4.8)).
        let mut calm = Run::new(m);
        let (n, done) = open_loop(&mut calm, 400.0, Duration::ZERO, 10 * SEC);
        assert!(n <= 12, "in service after 10 s at 400 req/s: {n}");
        assert!(close(done as f64 / 10.0, 400.0, 0.02), "{done} in 10 s");
        // 800 req/s for 2 s: far past the peak; n grows and throughput falls.
        let mut storm = Run::new(m);
        let (n_storm, done_storm) = open_loop(&mut storm, 800.0, Duration::ZERO, 2 * SEC);
        assert!(
            n_storm > 500,
            "in service after 2 s at 800 req/s: {n_storm}"
        );
        assert!((done_storm as f64 / 2.0) < 526.0);
        // Back to 400 req/s (sustainable from empty) for 10 s: still collapsed, worse.
        let (n_after, done_after) = open_loop(&mut storm, 400.0, 2 * SEC, 12 * SEC);
        assert!(n_after > n_storm, "{n_storm} -> {n_after} in service");
        assert!(
            (done_after as f64 / 10.0) < 100.0,
            "{done_after} completed in 10 s at 400 req/s offered"
        );
        // No load at all: it drains, within S·f(n) but not much sooner (the collapsed
        // requests all still have most of their work left).
        let bound = 0.010 * m.slowdown(n_after as f64);
        let drained = storm.origin + 12 * SEC + Duration::from_secs_f64(bound);
        storm
            .flow
            .advance(drained - Duration::from_secs_f64(bound / 2.0), &m);
        assert!(
            storm.flow.ends.len() > n_after / 2,
            "half-way: most still in service"
        );
        storm.flow.advance(drained + Duration::from_millis(1), &m);
        assert_eq!(storm.flow.ends.len(), 0, "drained within {bound:.0} s");
    }
}
