//! When to answer: durations, latency distributions and stall windows.
//!
//! Everything here is pure (time is passed in), so the maths is unit-tested without sleeping.

use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Uniform};

/// MAX_DELAY caps every parsed or sampled delay: heavy-tailed distributions can draw absurd
/// values, and `Duration::from_secs_f64` panics on overflow.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(3600);

/// parse_duration reads "250us", "20ms", "1.5s" (also "µs", and a bare "0").
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("bad duration {text:?}: expected a number with a unit, like 20ms"))?;
    let scale = match unit {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "" if value == 0.0 => 1.0,
        "" => return Err(format!("bad duration {text:?}: missing unit (us, ms or s)")),
        other => {
            return Err(format!(
                "bad duration {text:?}: unknown unit {other:?} (us, ms or s)"
            ))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > MAX_DELAY.as_secs_f64() {
        return Err(format!("bad duration {text:?}: longer than 1h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Latency is how long to hold a response after its request arrived, drawn per request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Latency {
    /// Zero answers at once.
    Zero,
    /// Fixed holds every response for the same time.
    Fixed(Duration),
    /// Uniform draws seconds uniformly from [low, high].
    Uniform(Uniform<f64>),
    /// Exponential draws seconds with the given mean (memoryless service times).
    Exp(Exp<f64>),
    /// LogNormal draws seconds around a median with a log-space sigma (realistic tails).
    LogNormal(LogNormal<f64>),
}

impl Latency {
    /// parse reads "20ms", "uniform:10ms..50ms", "exp:20ms" (mean) or "lognormal:20ms:0.5"
    /// (median, sigma).
    pub(crate) fn parse(spec: &str) -> Result<Latency, String> {
        let (kind, args) = match spec.split_once(':') {
            Some((kind, args)) => (kind, args),
            None => {
                let fixed = parse_duration(spec)?;
                return Ok(if fixed.is_zero() {
                    Latency::Zero
                } else {
                    Latency::Fixed(fixed)
                });
            }
        };
        match kind {
            "uniform" => {
                let (low, high) = args
                    .split_once("..")
                    .ok_or_else(|| format!("bad latency {spec:?}: expected uniform:LOW..HIGH"))?;
                let (low, high) = (parse_duration(low)?, parse_duration(high)?);
                Uniform::new_inclusive(low.as_secs_f64(), high.as_secs_f64())
                    .map(Latency::Uniform)
                    .map_err(|_| format!("bad latency {spec:?}: LOW must not exceed HIGH"))
            }
            "exp" => {
                let mean = parse_duration(args)?;
                if mean.is_zero() {
                    return Ok(Latency::Zero);
                }
                Exp::new(1.0 / mean.as_secs_f64())
                    .map(Latency::Exp)
                    .map_err(|e| format!("bad latency {spec:?}: {e}"))
            }
            "lognormal" => {
                let (median, sigma) = args.split_once(':').ok_or_else(|| {
                    format!("bad latency {spec:?}: expected lognormal:MEDIAN:SIGMA")
                })?;
                let median = parse_duration(median)?;
                let sigma: f64 = sigma
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| format!("bad latency {spec:?}: SIGMA must be a number >= 0"))?;
                if median.is_zero() {
                    return Err(format!("bad latency {spec:?}: MEDIAN must be > 0"));
                }
                LogNormal::new(median.as_secs_f64().ln(), sigma)
                    .map(Latency::LogNormal)
                    .map_err(|e| format!("bad latency {spec:?}: {e}"))
            }
            other => Err(format!(
                "bad latency {spec:?}: unknown kind {other:?} (uniform, exp, lognormal)"
            )),
        }
    }

    /// sample draws one delay, clamped to [0, MAX_DELAY].
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        let secs = match self {
            Latency::Zero => return Duration::ZERO,
            Latency::Fixed(fixed) => return *fixed,
            Latency::Uniform(dist) => dist.sample(rng),
            Latency::Exp(dist) => dist.sample(rng),
            Latency::LogNormal(dist) => dist.sample(rng),
        };
        if secs.is_nan() {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(secs.clamp(0.0, MAX_DELAY.as_secs_f64()))
    }
}

/// Stall holds every response during the first `hold` of every `every` window, windows aligned
/// to the server's start; it models a server that freezes periodically (GC pause, failover), the
/// case where a load generator that ignores coordinated omission under-reports latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stall {
    /// hold is how long each window stays frozen.
    pub(crate) hold: Duration,
    /// every is the window length.
    pub(crate) every: Duration,
}

impl Stall {
    /// parse reads "1s/5s" (hold 1 s out of every 5 s).
    pub(crate) fn parse(spec: &str) -> Result<Stall, String> {
        let (hold, every) = spec
            .split_once('/')
            .ok_or_else(|| format!("bad stall {spec:?}: expected HOLD/EVERY, like 1s/5s"))?;
        let (hold, every) = (parse_duration(hold)?, parse_duration(every)?);
        if every.is_zero() || hold > every {
            return Err(format!(
                "bad stall {spec:?}: need EVERY > 0 and HOLD <= EVERY"
            ));
        }
        Ok(Stall { hold, every })
    }

    /// release_at says, for a request arriving `elapsed` after the server started, when (again
    /// since start) it may be answered: the end of the current frozen window, or `None` when the
    /// window is not frozen.
    pub(crate) fn release_at(&self, elapsed: Duration) -> Option<Duration> {
        let every = self.every.as_nanos();
        let now = elapsed.as_nanos();
        let phase = now % every;
        if phase >= self.hold.as_nanos() {
            return None;
        }
        let release = now - phase + self.hold.as_nanos();
        Some(Duration::from_nanos(
            u64::try_from(release).unwrap_or(u64::MAX),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn durations_parse() {
        let cases: &[(&str, &str, Duration)] = &[
            ("millis", "20ms", 20 * MS),
            ("micros", "250us", Duration::from_micros(250)),
            ("micro sign", "7µs", Duration::from_micros(7)),
            ("seconds", "2s", Duration::from_secs(2)),
            ("fraction", "1.5s", 1500 * MS),
            ("fractional millis", "0.5ms", Duration::from_micros(500)),
            ("bare zero", "0", Duration::ZERO),
            ("max", "3600s", MAX_DELAY),
        ];
        for (label, text, want) in cases {
            assert_eq!(parse_duration(text), Ok(*want), "{label}: {text}");
        }
    }

    #[test]
    fn durations_reject() {
        let cases: &[(&str, &str, &str)] = &[
            ("empty", "", "expected a number"),
            ("no unit", "20", "missing unit"),
            ("no number", "ms", "expected a number"),
            ("minutes", "2m", "unknown unit"),
            ("negative", "-5ms", "expected a number"),
            ("exponent", "1e3ms", "unknown unit"),
            ("two dots", "1..2ms", "expected a number"),
            ("too long", "3601s", "longer than 1h"),
            ("space", " 20ms", "expected a number"),
        ];
        for (label, text, want) in cases {
            let err = parse_duration(text).expect_err(label);
            assert!(err.contains(want), "{label}: {err}");
            assert!(!err.contains('\n'), "{label}: one line");
        }
    }

    #[test]
    fn latency_specs_parse() {
        assert_eq!(Latency::parse("20ms"), Ok(Latency::Fixed(20 * MS)));
        assert_eq!(Latency::parse("0ms"), Ok(Latency::Zero));
        assert_eq!(Latency::parse("exp:0s"), Ok(Latency::Zero));
        type IsKind = fn(&Latency) -> bool;
        let kinds: &[(&str, IsKind)] = &[
            ("uniform:10ms..50ms", |l| matches!(l, Latency::Uniform(_))),
            ("uniform:10ms..10ms", |l| matches!(l, Latency::Uniform(_))),
            ("exp:20ms", |l| matches!(l, Latency::Exp(_))),
            ("lognormal:20ms:0.5", |l| matches!(l, Latency::LogNormal(_))),
            ("lognormal:20ms:0", |l| matches!(l, Latency::LogNormal(_))),
        ];
        for (spec, is_kind) in kinds {
            let parsed = Latency::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert!(is_kind(&parsed), "{spec}: {parsed:?}");
        }
    }

    #[test]
    fn latency_specs_reject() {
        let cases: &[(&str, &str)] = &[
            ("uniform:50ms..10ms", "LOW must not exceed HIGH"),
            ("uniform:10ms", "expected uniform:LOW..HIGH"),
            ("uniform:10ms..x", "bad duration"),
            ("exp:", "bad duration"),
            ("lognormal:20ms", "expected lognormal:MEDIAN:SIGMA"),
            ("lognormal:0ms:0.5", "MEDIAN must be > 0"),
            ("lognormal:20ms:-1", "SIGMA must be"),
            ("lognormal:20ms:NaN", "SIGMA must be"),
            ("gamma:1ms", "unknown kind"),
            ("", "bad duration"),
        ];
        for (spec, want) in cases {
            let err = Latency::parse(spec).expect_err(spec);
            assert!(err.contains(want), "{spec}: {err}");
        }
    }

    /// Sample statistics with a fixed seed; bounds are 5 standard errors for n = 20 000.
    #[test]
    fn latency_samples_follow_their_distribution() {
        const N: usize = 20_000;
        let mut rng = SmallRng::seed_from_u64(7);
        let draw = |spec: &str, rng: &mut SmallRng| -> Vec<f64> {
            let latency = Latency::parse(spec).expect(spec);
            (0..N)
                .map(|_| latency.sample(rng).as_secs_f64() * 1e3)
                .collect()
        };
        let uniform = draw("uniform:10ms..50ms", &mut rng);
        assert!(uniform.iter().all(|ms| (10.0..=50.0).contains(ms)));
        let mean = uniform.iter().sum::<f64>() / N as f64;
        // sd of U(10, 50) is 40/sqrt(12) = 11.5 ms; standard error 0.082 ms.
        assert!((mean - 30.0).abs() < 0.41, "uniform mean {mean}");

        let exp = draw("exp:20ms", &mut rng);
        let mean = exp.iter().sum::<f64>() / N as f64;
        // sd of an exponential equals its mean; standard error 20/sqrt(N) = 0.141 ms.
        assert!((mean - 20.0).abs() < 0.71, "exp mean {mean}");

        let lognormal = draw("lognormal:20ms:0.5", &mut rng);
        let below = lognormal.iter().filter(|ms| **ms < 20.0).count() as f64 / N as f64;
        // The median splits samples in half; standard error sqrt(0.25/N) = 0.0035.
        assert!(
            (below - 0.5).abs() < 0.018,
            "lognormal share below median {below}"
        );

        let fixed = draw("20ms", &mut rng);
        assert!(fixed.iter().all(|ms| (*ms - 20.0).abs() < 1e-9));
    }

    #[test]
    fn stalls_parse() {
        let stall = Stall::parse("1s/5s").expect("valid");
        assert_eq!(stall.hold, Duration::from_secs(1));
        assert_eq!(stall.every, Duration::from_secs(5));
        for (spec, want) in [
            ("1s", "expected HOLD/EVERY"),
            ("6s/5s", "HOLD <= EVERY"),
            ("0s/0s", "EVERY > 0"),
            ("1x/5s", "bad duration"),
        ] {
            let err = Stall::parse(spec).expect_err(spec);
            assert!(err.contains(want), "{spec}: {err}");
        }
    }

    #[test]
    fn stall_release_times() {
        let stall = Stall::parse("1s/5s").expect("valid");
        let cases: &[(&str, Duration, Option<Duration>)] = &[
            ("start of first window", Duration::ZERO, Some(1000 * MS)),
            ("inside first window", 400 * MS, Some(1000 * MS)),
            ("end of hold", 1000 * MS, None),
            ("open part", 4999 * MS, None),
            ("start of second window", 5000 * MS, Some(6000 * MS)),
            ("inside a later window", 10_999 * MS, Some(11_000 * MS)),
            ("open part of a later window", 11_000 * MS, None),
        ];
        for (label, elapsed, want) in cases {
            assert_eq!(stall.release_at(*elapsed), *want, "{label}");
        }
    }

    /// At a fixed arrival rate, 1 s held out of every 5 s delays 20% of requests by U(0, 1 s):
    /// p90 of all delays is 500 ms and p99 is 950 ms, what the CI test expects.
    #[test]
    fn stall_percentiles_at_a_fixed_rate() {
        let stall = Stall::parse("1s/5s").expect("valid");
        let mut delays: Vec<Duration> = (0..100_000u64)
            .map(|i| Duration::from_micros(i * 1000 + 500))
            .map(|at| stall.release_at(at).map_or(Duration::ZERO, |r| r - at))
            .collect();
        delays.sort();
        let pct = |p: f64| delays[(p * delays.len() as f64) as usize - 1].as_secs_f64() * 1e3;
        assert!((pct(0.90) - 500.0).abs() <= 1.0, "p90 {}", pct(0.90));
        assert!((pct(0.99) - 950.0).abs() <= 1.0, "p99 {}", pct(0.99));
        assert!(pct(0.79) < 1e-9, "80% are not delayed");
    }
}
