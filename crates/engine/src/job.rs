//! Job: what the coordinator hands each worker thread, and the time bounds every part of a
//! run shares (how late a send may be, how long the end waits for answers, the largest
//! latency the histograms must hold).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{Checked, Model};
use crate::control::RunControl;
use crate::metrics::ConnectionGauge;

/// LATE_SLACK is how late an open-model send may be before it counts as late (and before
/// the pool grows for it): wake-ups on a busy machine routinely slip by a millisecond.
pub const LATE_SLACK: Duration = Duration::from_millis(2);

/// GRACE bounds how long requests in flight at the end of a timed run may take to finish
/// (never longer than the request timeout).
pub const GRACE: Duration = Duration::from_secs(5);

/// grace is how long requests in flight at the end of a timed run may take to finish.
pub(crate) fn grace(cfg: &Checked) -> Duration {
    cfg.timeout.min(GRACE)
}

/// latency_ceiling is the largest latency the run can measure, to size its histograms: a
/// response is at most a timeout after its send (a later one is a timeout), and in the open
/// model, which times from the intended send, a hit can wait from the schedule's start to the
/// end of the grace period. A latency above it (an open run whose generator fell behind a
/// schedule with no duration) is clamped and counted (`clamped`), never silent.
pub(crate) fn latency_ceiling(cfg: &Checked) -> Duration {
    let second = Duration::from_secs(1);
    // A scenario's request may wait longer than the run's timeout (its own `timeout=`).
    let longest = cfg.scenario.as_ref().and_then(|s| s.longest_timeout());
    let response = longest
        .map_or(cfg.timeout, |t| t.max(cfg.timeout))
        .saturating_add(second);
    if cfg.model == Model::Closed {
        return response;
    }
    let schedule = cfg.duration.or_else(|| {
        let n = cfg.requests?;
        let t = cfg.profile.time_of(n as f64)?;
        Some(Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX))
    });
    let queued = schedule.map_or(Duration::ZERO, |d| {
        d.saturating_add(grace(cfg)).saturating_add(second)
    });
    response.max(queued)
}

/// Job is what the coordinator hands one worker thread.
#[derive(Debug, Clone)]
pub struct Job {
    /// index: this thread's number, 0-based.
    pub index: u32,
    /// cfg: the checked configuration.
    pub cfg: Arc<Checked>,
    /// addr: the resolved target address.
    pub addr: SocketAddr,
    /// start: the common start instant of all threads (set when the worker threads' `StartGate` opens).
    pub start: Instant,
    /// control: the shared stop handle.
    pub control: Arc<RunControl>,
    /// gauge: connections open over all threads (for the run's true peak).
    pub gauge: Arc<ConnectionGauge>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunConfig;

    #[test]
    fn the_latency_ceiling_covers_what_the_run_can_produce() {
        // label, config, ceiling in seconds
        let cases = [
            (
                "closed: a timeout past the last send",
                r#"{"url":"http://h/","connections":2,"duration_s":600,"timeout_s":30}"#,
                31.0,
            ),
            (
                "open, timed: the whole schedule, the grace and a second",
                r#"{"url":"http://h/","rate":10,"duration_s":120,"timeout_s":30}"#,
                126.0,
            ),
            (
                "open, counted: the schedule of N hits",
                r#"{"url":"http://h/","rate":10,"requests":1000,"timeout_s":2}"#,
                103.0,
            ),
            (
                "open, short: still a timeout past a send",
                r#"{"url":"http://h/","rate":10,"duration_s":1,"timeout_s":30}"#,
                31.0,
            ),
        ];
        for (label, json, want) in cases {
            let cfg = RunConfig::from_json(json)
                .and_then(|c| c.check())
                .expect("valid");
            let got = latency_ceiling(&cfg).as_secs_f64();
            assert!((got - want).abs() < 1e-6, "{label}: {got} s, want {want} s");
        }
    }
}
